#!/usr/bin/env python3
"""bench/wrk/urls.py: request-path lists for the wrk workloads, from a fork farm and a commit sample.

    urls.py crawler    --cgitrc F --commits F [--branch B] [--seed S]            > crawler.txt
    urls.py forkspread --cgitrc F --commits F [--branch B] [--seed S] [--count K] > forkspread.txt
    urls.py hot        --cgitrc F --commits F [--count N]                        > hot.txt
    urls.py burst      --cgitrc F --commits F [--count N]                        > burst.txt
    urls.py warm       --cgitrc F --commits F                                    > warm.txt

Repositories are the cgitrc's repo.url values (the base first, then the forks), commits the sample
file (one SHA a line, in draw order, from bench/corpus/sample-commits.sh). A commit page URL follows
cgit's layout under virtual-root=/: /REPO/commit/?id=SHA[&h=BRANCH][&OPTION].

- crawler: every repository x every sampled commit x every variant (12: no option, context=3,
  context=5, context=10, ignorews=1, dt=1, each with and without h=BRANCH), in a seeded random order.
  With the defaults (101 repositories, 150 commits) that is 181,800 distinct URLs.
- forkspread: the first K sampled commits (default 10) x every repository x every variant, seeded
  random order: few diffs, many URLs for each.
- hot: N pages (default 10): the N sampled commits after the forkspread ones, default options,
  alternating between the base and forks.
- burst: N single URLs (default 8) for thundering-herd runs, one commit each, from the end of the
  sample (commits no other list starts with), on the base repository.
- warm: every sampled commit x every diff option (6: no option, context=3/5/10, ignorews=1, dt=1) on
  the base repository, in sample order: one page per repository-neutral diff fragment the crawler
  list needs (a fragment cache filled by this list serves every fork and every h=).

Deterministic: the order comes from bench/corpus/py/prng.py (splitmix64), never from `random`.
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "corpus", "py"))
from prng import Rng  # noqa: E402

OPTIONS = ["", "context=3", "context=5", "context=10", "ignorews=1", "dt=1"]


def repos(cgitrc):
    out = []
    with open(cgitrc, encoding="utf-8", errors="replace") as f:
        for line in f:
            if line.startswith("repo.url="):
                out.append(line[len("repo.url="):].strip())
    if not out:
        sys.exit("urls.py: no repo.url= in %s" % cgitrc)
    return out


def commits(path):
    with open(path) as f:
        out = [l.strip() for l in f if l.strip()]
    if not out:
        sys.exit("urls.py: no commits in %s" % path)
    return out


def page(repo, sha, branch=None, option=""):
    q = "id=" + sha
    if branch:
        q += "&h=" + branch
    if option:
        q += "&" + option
    return "/%s/commit/?%s" % (repo, q)


def variants(branch):
    return [(b, o) for b in (None, branch) for o in OPTIONS]


def shuffle(items, seed, stream):
    rng = Rng(seed, stream)
    for i in range(len(items) - 1, 0, -1):
        j = rng.below(i + 1)
        items[i], items[j] = items[j], items[i]
    return items


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("kind", choices=["crawler", "forkspread", "hot", "burst", "warm"])
    ap.add_argument("--cgitrc", required=True)
    ap.add_argument("--commits", required=True)
    ap.add_argument("--branch", default="main")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--count", type=int)
    a = ap.parse_args()
    rs, cs = repos(a.cgitrc), commits(a.commits)
    out = []
    if a.kind == "crawler":
        out = [page(r, c, b, o) for r in rs for c in cs for (b, o) in variants(a.branch)]
        shuffle(out, a.seed, 1)
    elif a.kind == "forkspread":
        k = min(a.count or 10, len(cs))
        out = [page(r, c, b, o) for r in rs for c in cs[:k] for (b, o) in variants(a.branch)]
        shuffle(out, a.seed, 2)
    elif a.kind == "hot":
        n = a.count or 10
        k = min(10, len(cs) - 1)
        pool = cs[k:k + n] if len(cs) >= k + n else cs[:n]
        for i, c in enumerate(pool):
            r = rs[0] if i % 2 == 0 or len(rs) == 1 else rs[1 + (i // 2) % (len(rs) - 1)]
            out.append(page(r, c))
    elif a.kind == "warm":
        out = [page(rs[0], c, None, o) for c in cs for o in OPTIONS]
    else:
        n = a.count or 8
        out = [page(rs[0], c) for c in reversed(cs[-n:])]
    sys.stdout.write("".join(p + "\n" for p in out))


if __name__ == "__main__":
    main()
