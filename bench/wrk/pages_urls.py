#!/usr/bin/env python3
"""bench/wrk/pages_urls.py: one list of unique request paths per page kind, for the pages scenario.

    pages_urls.py --cgitrc F --repo BASE.git --branch B --out DIR [--seed S] [--count N] [--skip FILE]
                  [--mix FILE]

Writes DIR/KIND.txt for every kind below (one path a line, cgit's layout under virtual-root=/,
every line distinct, in a seeded order) and DIR/kinds.tsv ("KIND<TAB>LINES<TAB>WHAT"). Repositories
are the cgitrc's repo.url values (the base first, then its forks, which share the base's objects);
each URL names a repository drawn at random, so a repository-neutral part (a diff, a file view, a
tree listing) may be asked for again through another fork, as a crawler walking a fork farm does.

The commit-based kinds draw from disjoint slices of the base's non-merge commits on B (the commits
of --skip, the corpus' sample, left out: the scenario's checks use them), so that no kind is served
by parts another kind already had rendered. A kind that has fewer possible URLs than --count
(summary, about, stats, clone) has what there is; the scenario reports the repeats when a run
walks past the end of a list.

Kinds: commit, diff, patch, rawdiff (?id=SHA); log (?id=SHA: the 100 commits from there); log-ofs
(?ofs=N, N a multiple of 100); tree-dir and tree-file (/tree/PATH?id=SHA, PATH a folder or a file
the commit touched); plain (/plain/FILE?id=SHA); blame (/blame/FILE?id=SHA) and log-path
(/log/FILE?id=SHA: the file's history from there); refs (?id=SHA); tag (?h=TAG); summary (/REPO/
and /REPO/?h=BRANCH); about (?h=BRANCH); atom (?h=BRANCH or TAG); stats (?period=w|m|q&h=BRANCH or TAG); snapshot
(/snapshot/SHA.tar.gz); clone (info/refs, HEAD, objects/info/packs).

--mix FILE also writes one list of the kinds a crawler walks, interleaved by MIX_WEIGHTS (of every
100 URLs, 15 commit pages, 12 folders, 12 files, 10 blames...: the crawler-mix scenario), each URL
still unique; it ends when a kind's list runs out, so the proportions hold over every prefix. With
--mix the commits are sliced by those weights instead of equally (a commit kind outside the mix, refs,
gets none), so the commit kinds run out together and the mix is as long as the commits allow.

Deterministic: the order comes from bench/corpus/py/prng.py (splitmix64), never from `random`.
"""
import argparse
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "corpus", "py"))
from prng import Rng  # noqa: E402

COMMIT_KINDS = ["commit", "diff", "patch", "rawdiff", "log", "tree-dir", "tree-file", "plain", "blame", "log-path",
                "refs", "snapshot"]
# The crawler-mix: how often each kind comes, per 100 URLs (crawlers walk trees, files and history
# pages far more than ref pages; what forges reported in 2025).
MIX_WEIGHTS = {"commit": 15, "diff": 8, "patch": 8, "rawdiff": 4, "tree-dir": 12, "tree-file": 12, "plain": 10,
               "blame": 10, "log-path": 10, "log": 4, "log-ofs": 3, "tag": 2, "snapshot": 2}
WHAT = {
    "commit": "/R/commit/?id=SHA",
    "diff": "/R/diff/?id=SHA",
    "patch": "/R/patch/?id=SHA",
    "rawdiff": "/R/rawdiff/?id=SHA",
    "log": "/R/log/?id=SHA",
    "log-ofs": "/R/log/?ofs=N",
    "tree-dir": "/R/tree/DIR?id=SHA",
    "tree-file": "/R/tree/FILE?id=SHA",
    "plain": "/R/plain/FILE?id=SHA",
    "blame": "/R/blame/FILE?id=SHA",
    "log-path": "/R/log/FILE?id=SHA",
    "refs": "/R/refs/?id=SHA",
    "tag": "/R/tag/?h=TAG",
    "summary": "/R/[?h=BRANCH]",
    "about": "/R/about/?h=BRANCH",
    "atom": "/R/atom/?h=BRANCH|TAG",
    "stats": "/R/stats/?period=P&h=BRANCH",
    "snapshot": "/R/snapshot/SHA.tar.gz",
    "clone": "/R/info/refs, /R/HEAD, /R/objects/info/packs",
}


def git(repo, *args, stdin=None):
    return subprocess.run(["git", "-C", repo, *args], input=stdin, capture_output=True, text=True,
                          check=True, errors="surrogateescape").stdout


def repos(cgitrc):
    """[(url, path)] of the cgitrc's repositories, in its order."""
    out = []
    with open(cgitrc, encoding="utf-8", errors="replace") as f:
        for line in f:
            if line.startswith("repo.url="):
                out.append([line[len("repo.url="):].strip(), None])
            elif line.startswith("repo.path=") and out:
                out[-1][1] = line[len("repo.path="):].strip()
    if not out or any(p is None for _, p in out):
        sys.exit("pages_urls.py: no repo.url= (each with its repo.path=) in %s" % cgitrc)
    return [tuple(r) for r in out]


def shuffle(rng, items):
    items = list(items)
    for i in range(len(items) - 1, 0, -1):
        j = rng.below(i + 1)
        items[i], items[j] = items[j], items[i]
    return items


def touched(repo, shas):
    """{sha: (file, dir)}: a file the commit added or modified, and its folder ("" at the top)."""
    out = {}
    text = git(repo, "log", "--no-walk=unsorted", "--stdin", "--no-renames", "--name-status", "--format=%x01%H",
               stdin="\n".join(shas) + "\n")
    sha = None
    for line in text.splitlines():
        if line.startswith("\x01"):
            sha = line[1:]
            continue
        parts = line.split("\t")
        if sha and len(parts) == 2 and parts[0] in ("A", "M") and sha not in out:
            path = parts[1]
            if any(c in path for c in "\"\\?#%& ") or not (path.isascii() and path.isprintable()):
                continue  # keep the lists free of names that need escaping (wrk sends a path as it is)
            out[sha] = (path, path.rsplit("/", 1)[0] if "/" in path else "")
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cgitrc", required=True)
    ap.add_argument("--repo", required=True)
    ap.add_argument("--branch", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--count", type=int, default=20000, help="URLs per kind at most (default 20000)")
    ap.add_argument("--skip", help="a file of commit ids to leave out")
    ap.add_argument("--mix", help="also write the crawler-mix list (MIX_WEIGHTS) to this file")
    a = ap.parse_args()
    rng = Rng(a.seed)
    stanzas = repos(a.cgitrc)
    names = [u for u, _ in stanzas]
    pick = lambda: names[rng.below(len(names))]  # noqa: E731
    skip = set()
    if a.skip:
        with open(a.skip) as f:
            skip = {l.strip()[:40] for l in f if l.strip()}
    commits = [c for c in git(a.repo, "rev-list", "--no-merges", a.branch).split() if c not in skip]
    commits = shuffle(rng, commits)
    # each kind's slice of the commits: equal slices, or with --mix slices as large as the kind's weight
    # (the mix's kinds then run out together, so its list is as long as the commits allow)
    weight = {k: MIX_WEIGHTS.get(k, 0) if a.mix else 1 for k in COMMIT_KINDS}
    unit = len(commits) // sum(weight.values())
    if unit * min(w for w in weight.values() if w) < 10:
        sys.exit("pages_urls.py: %d commits are too few for %d kinds" % (len(commits), len(COMMIT_KINDS)))
    lists = {}
    start = 0
    for kind in COMMIT_KINDS:
        mine = commits[start:start + unit * weight[kind]]
        start += len(mine)
        # each commit in up to 3 repositories: a crawler meets the same commit through several forks
        urls = []
        if kind in ("tree-dir", "tree-file", "plain", "blame", "log-path"):
            paths = touched(a.repo, mine)
            for sha in mine:
                if sha not in paths:
                    continue
                f, d = paths[sha]
                path = {"tree-dir": "tree/" + d, "tree-file": "tree/" + f, "plain": "plain/" + f, "blame": "blame/" + f,
                        "log-path": "log/" + f}[kind]
                if kind == "tree-dir" and d == "":
                    path = "tree/"
                urls += ["/%s/%s?id=%s" % (pick(), path, sha) for _ in range(3)]
        elif kind == "snapshot":
            urls = ["/%s/snapshot/%s.tar.gz" % (pick(), sha) for sha in mine for _ in range(3)]
        else:
            urls = ["/%s/%s/?id=%s" % (pick(), kind, sha) for sha in mine for _ in range(3)]
        lists[kind] = urls
    total = len(git(a.repo, "rev-list", a.branch).split())
    lists["log-ofs"] = ["/%s/log/?ofs=%d" % (r, n) for r in names for n in range(100, total, 100)]
    # a fork has refs of its own: the ref-based kinds name each repository's own tags and branches
    refs = {u: git(p, "for-each-ref", "--format=%(refname)").split() for u, p in stanzas}
    tags = {u: [r[len("refs/tags/"):] for r in refs[u] if r.startswith("refs/tags/")] for u in names}
    heads = {u: [r[len("refs/heads/"):] for r in refs[u] if r.startswith("refs/heads/")] for u in names}
    lists["tag"] = ["/%s/tag/?h=%s" % (r, t) for r in names for t in tags[r]]
    lists["summary"] = ["/%s/" % r for r in names] + ["/%s/?h=%s" % (r, b) for r in names for b in heads[r]]
    lists["about"] = ["/%s/about/?h=%s" % (r, b) for r in names for b in heads[r]]
    # the feed at every branch and tag (each page viewed at h=REF names atom/?h=REF in its head):
    # with branches alone a fork farm has a few hundred, walked in a few hundredths of a second
    lists["atom"] = ["/%s/atom/?h=%s" % (r, b) for r in names for b in heads[r] + tags[r]]
    # stats at every branch and tag too (cgit's tabs keep h=: a page viewed at a tag links its
    # stats): with branches alone the list was ~100 URLs, walked in under a tenth of a second
    lists["stats"] = ["/%s/stats/?period=%s&h=%s" % (r, p, b) for r in names for b in heads[r] + tags[r]
                      for p in "wmq"]
    lists["clone"] = ["/%s/%s" % (r, f) for r in names for f in ("info/refs", "HEAD", "objects/info/packs")]
    os.makedirs(a.out, exist_ok=True)
    with open(os.path.join(a.out, "kinds.tsv"), "w") as kinds:
        for kind in WHAT:
            urls = list(dict.fromkeys(lists[kind]))  # distinct, first seen kept
            urls = shuffle(rng, urls)[:a.count]
            lists[kind] = urls
            with open(os.path.join(a.out, kind + ".txt"), "w") as f:
                f.write("".join(u + "\n" for u in urls))
            kinds.write("%s\t%d\t%s\n" % (kind, len(urls), WHAT[kind]))
    if a.mix:
        with open(a.mix, "w") as f:
            f.write("".join(u + "\n" for u in mix(rng, lists)))


def mix(rng, lists):
    """The kinds of MIX_WEIGHTS interleaved: each URL's kind drawn with those weights, until a kind runs out."""
    kinds = list(MIX_WEIGHTS)
    total = sum(MIX_WEIGHTS.values())
    taken = dict.fromkeys(kinds, 0)
    out = []
    while True:
        x = rng.below(total)
        for kind in kinds:
            x -= MIX_WEIGHTS[kind]
            if x < 0:
                break
        if taken[kind] == len(lists[kind]):
            return out
        out.append(lists[kind][taken[kind]])
        taken[kind] += 1


if __name__ == "__main__":
    main()
