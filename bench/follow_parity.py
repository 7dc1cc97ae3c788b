#!/usr/bin/env python3
"""bench/follow_parity.py: shellac's follow=1 path logs against git's own `git log --follow`.

    follow_parity.py --url http://127.0.0.1:PORT/REPO --repo BARE.git [--branch B] PATH...

For each PATH, every page of shellac's `log/PATH?follow=1` (ofs= in steps of the rows a page shows,
until no [next]) against `git log --follow --name-status BRANCH -- PATH`: the commits and, for each,
the file's name at that commit (the row's commit link, git's last --name-status column), git's root
commits left out (cgit 1.2.3 does not show them). cgit itself is no oracle here: once it has followed
a rename it lists commits that did not touch the file (gitfrag/README.md). shellac must run with a
cgitrc that sets enable-follow-links=1. Prints one line per PATH (rows, equal or DIFFER, the seconds
git and shellac took) and the first differing rows; exits 1 when any PATH differs.
"""
import argparse
import difflib
import re
import subprocess
import sys
import time
import urllib.parse
import urllib.request

ROW = re.compile(r"<tr(?: class='logheader')?><td><span title='[^']*'>[^<]*</span></td>"
                 r"<td(?: class='logsubject')?><a href='[^']*?/commit/([^?']*)\?(?:h=[^&']*&amp;)?id=([0-9a-f]{40})")


def shellac_rows(url, path):
    rows, ofs, took = [], 0, 0.0
    while True:
        page = "%s/log/%s?follow=1%s" % (url, urllib.parse.quote(path), "&ofs=%d" % ofs if ofs else "")
        t0 = time.perf_counter()
        body = urllib.request.urlopen(page, timeout=120).read().decode("utf-8", "replace")
        took += time.perf_counter() - t0
        if "[stopped:" in body:
            print("  %s: the walk stopped at its deadline (ofs=%d)" % (path, ofs))
        found = [m.group(2) + " " + urllib.parse.unquote(m.group(1)) for m in ROW.finditer(body)]
        rows += found
        if "[next]" not in body or not found:
            return rows, took
        ofs += len(found)


def git_rows(repo, branch, path):
    t0 = time.perf_counter()
    out = subprocess.run(["git", "-C", repo, "log", "--follow", "--format=%H%n", "--name-status", branch,
                          "--", path], capture_output=True, text=True, check=True).stdout
    took = time.perf_counter() - t0
    roots = set(subprocess.run(["git", "-C", repo, "rev-list", "--max-parents=0", branch],
                               capture_output=True, text=True, check=True).stdout.split())
    rows, commit = [], None
    for line in out.split("\n"):
        if re.fullmatch(r"[0-9a-f]{40}", line):
            commit = line
        elif re.match(r"[MARCDT]", line) and commit not in roots:
            rows.append(commit + " " + line.split("\t")[-1])
    return rows, took


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--url", required=True, help="http://HOST:PORT/REPO (the repository's URL on shellac)")
    ap.add_argument("--repo", required=True)
    ap.add_argument("--branch", default="HEAD")
    ap.add_argument("paths", nargs="+")
    a = ap.parse_args()
    differ = 0
    for path in a.paths:
        theirs, git_s = git_rows(a.repo, a.branch, path)
        ours, shellac_s = shellac_rows(a.url.rstrip("/"), path)
        same = ours == theirs
        differ += not same
        print("%s: git %d rows, shellac %d: %s (git %.2f s, shellac %.2f s over its pages)" % (
            path, len(theirs), len(ours), "equal" if same else "DIFFER", git_s, shellac_s))
        if not same:
            for line in list(difflib.unified_diff(theirs, ours, "git", "shellac", lineterm=""))[:12]:
                print("   " + line)
    sys.exit(1 if differ else 0)


if __name__ == "__main__":
    main()
