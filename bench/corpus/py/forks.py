#!/usr/bin/env python3
"""Writes a fork farm next to a base repository (used by ../gen-forks.sh).

    forks.py --base GITDIR --out DIR --forks F --seed S --commits FILE --tags FILE --head REF

Each fork is a bare repository DIR/forks/fork-NNNN.git written directly as files (no git command per
fork or per tag): HEAD, config, description, objects/info/alternates pointing at the base's object
directory (the fork has no objects of its own), and a packed-refs holding the fork's own branches
(commits of the base drawn with the seeded PRNG) followed by a copy of the base's tag lines, peeled
lines included. DIR/cgitrc lists the base and every fork.

--commits: the base's commits, one SHA a line (sorted: the draw must not depend on traversal order).
--tags: the base's tag lines in packed-refs format ("SHA refs/tags/NAME" then "^PEELED" for an
annotated tag), sorted by refname.
"""
import argparse
import os
import sys

from prng import Rng

OWNERS = ["Brian Kowalski", "Chen Wei", "Dana Okafor", "José Muñoz-Ñúñez", "Zoë Åström", "山田 太郎",
          "Erik Lindqvist", "Fatima Al-Sayed", "Gregor Novak", "Hannah Schmidt", "Ivan Petrov",
          "Jun Park", "Kavya Reddy", "Liam O'Connor", "Maria Rossi", "Nils Berg", "Olga Ivanova",
          "Pedro Alves", "Quentin Dubois", "Rachel Green", "Tomasz Wiśniewski",
          "Mallory \"&lt;script&gt;\" O'Brien & Co"]
TOPICS = ["net", "fs", "mm", "usb", "drm", "sched", "crypto", "sound", "block", "ipc", "lib", "docs",
          "timers", "security", "ethernet", "ipv6"]
BRANCH_FORMS = ["for-next", "fixes", "testing", "devel", "for-linus", "wip/{t}", "review/{t}-v{n}",
                "{t}-next", "{t}-fixes", "queue/{t}", "backport/{t}", "experimental/{t}-{n}"]

CGITRC_GLOBAL = """\
# cgitrc for the shellac benchmark fork farm (written by bench/corpus/gen-forks.sh).
# Global keys come first: cgit copies several of them into each repo.* stanza when it is read.
root-title=shellac benchmark forge
root-desc=Synthetic fork farm: one base repository and {forks} forks sharing its objects
virtual-root=/
css=/cgit-css/cgit.css
logo=/cgit-css/cgit.png
favicon=/favicon.ico
robots=noindex, nofollow

# no cgit-side cache: the point is to measure what sits in front of it
cache-size=0

# cgit's ASCII log graph (with git's topological order), date/topo order, follow links and
# subject links are options shellac does not render (it leaves such log pages to cgit): off, so
# that both show the same pages.
enable-commit-graph=0
enable-log-filecount=1
enable-log-linecount=1
enable-index-links=1
enable-index-owner=1
enable-follow-links=0
enable-subject-links=0
enable-tree-linenumbers=1
enable-blame=1
enable-http-clone=1
enable-git-config=0
enable-html-serving=0
enable-remote-branches=0

branch-sort=age
repository-sort=name
case-sensitive-sort=1
section-sort=0
local-time=0

max-repo-count=100
max-commit-count=100
max-message-length=80
max-repodesc-length=80
max-blob-size=2048
max-atom-items=20
max-stats=quarter
summary-branches=10
summary-log=10
summary-tags=10
renamelimit=1000
side-by-side-diffs=0
noplainemail=1
snapshots=tar.gz tar.xz zip
clone-url=https://git.shellac.example/$CGIT_REPO_URL git://git.shellac.example/$CGIT_REPO_URL
readme=:README.md
mimetype.gif=image/gif
mimetype.html=text/html
mimetype.jpg=image/jpeg
mimetype.png=image/png
mimetype.svg=image/svg+xml

"""


def cgit_value(s):
    # cgitrc values run to the end of the line
    return s.replace("\n", " ")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--base", required=True)
    ap.add_argument("--base-url", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--forks", type=int, default=100)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--commits", required=True)
    ap.add_argument("--tags", required=True)
    ap.add_argument("--head", required=True, help="the base's HEAD branch, refs/heads/NAME")
    ap.add_argument("--head-commit", required=True)
    a = ap.parse_args()

    r = Rng(a.seed, stream=0xF02C)
    base = os.path.realpath(a.base)
    alternates = (os.path.join(base, "objects") + "\n").encode()
    with open(a.commits, "rb") as f:
        commits = [l.strip() for l in f if l.strip()]
    if not commits:
        raise SystemExit("forks.py: the base has no commits")
    with open(a.tags, "rb") as f:
        tag_block = f.read()
    head_branch = a.head[len("refs/heads/"):] if a.head.startswith("refs/heads/") else "main"
    head_commit = a.head_commit.encode()

    root = os.path.realpath(a.out)
    forks_dir = os.path.join(root, "forks")
    os.makedirs(forks_dir, exist_ok=True)
    header = b"# pack-refs with: peeled fully-peeled sorted \n"
    config = b"[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\tbare = true\n"
    head = ("ref: refs/heads/%s\n" % head_branch).encode()

    cg = [CGITRC_GLOBAL.format(forks=a.forks), "section=base\n\n",
          "repo.url=%s\n" % a.base_url, "repo.path=%s\n" % base,
          "repo.desc=the base repository every fork borrows its objects from\n",
          "repo.owner=Ada Maintainer\n", "\nsection=forks\n"]
    nbranches = 0
    for i in range(1, a.forks + 1):
        name = "fork-%04d.git" % i
        d = os.path.join(forks_dir, name)
        os.makedirs(os.path.join(d, "objects", "info"), exist_ok=True)
        os.makedirs(os.path.join(d, "objects", "pack"), exist_ok=True)
        os.makedirs(os.path.join(d, "refs", "heads"), exist_ok=True)
        os.makedirs(os.path.join(d, "refs", "tags"), exist_ok=True)
        owner = r.pick(OWNERS)
        # the fork's default branch: the base's tip most of the time, an older commit otherwise
        heads = {head_branch: head_commit if r.chance(3, 5) else r.pick(commits)}
        for _ in range(r.between(1, 5)):
            bn = r.pick(BRANCH_FORMS).format(t=r.pick(TOPICS), n=r.between(2, 9))
            heads[bn] = r.pick(commits)
        nbranches += len(heads)
        lines = [b"%s refs/heads/%s\n" % (sha, bn.encode()) for bn, sha in heads.items()]
        lines.sort(key=lambda l: l.split(b" ", 1)[1])
        with open(os.path.join(d, "packed-refs"), "wb") as f:
            f.write(header)
            f.writelines(lines)
            f.write(tag_block)
        with open(os.path.join(d, "objects", "info", "alternates"), "wb") as f:
            f.write(alternates)
        with open(os.path.join(d, "HEAD"), "wb") as f:
            f.write(head)
        with open(os.path.join(d, "config"), "wb") as f:
            f.write(config)
        desc = "%s's fork: %s" % (owner, ", ".join(sorted(heads)))
        with open(os.path.join(d, "description"), "wb") as f:
            f.write((desc + "\n").encode())
        cg += ["\n", "repo.url=forks/%s\n" % name, "repo.path=%s\n" % d,
               "repo.desc=%s\n" % cgit_value(desc), "repo.owner=%s\n" % cgit_value(owner)]
    with open(os.path.join(root, "cgitrc"), "wb") as f:
        f.write("".join(cg).encode())
    print("forks=%d fork_branches=%d" % (a.forks, nbranches), file=sys.stderr)


if __name__ == "__main__":
    main()
