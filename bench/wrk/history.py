#!/usr/bin/env python3
"""bench/wrk/history.py: history pages one at a time (the history scenario): shellac, cgit and git's own command.

    history.py --plan PLAN --repo BASE.git --port shellac=PORT --port cgit=PORT [--admin PORT]
               [--rows N] [--timeout S] [--samples OUT.tsv]

PLAN: one page a line, tab separated: KIND SHA PATH URL. KIND is blame, log-path or log-follow; URL the page's
path on a server (cgit's layout). For each line, in order, one at a time, four measurements:
  git-nograph  git's own command with the commit-graph turned off (`git -c core.commitGraph=false`)
  git          the same command as the repository is (its commit-graph and changed-path filters, if any)
  cgit         GET URL from cgit (one keep-alive connection, Accept-Encoding: gzip)
  shellac      GET URL from shellac (the same)
git's commands: blame -> `git blame --porcelain SHA -- PATH`; log-path -> `git log -N --format=%H SHA
-- PATH`, log-follow -> the same with --follow, N = --rows (the rows the page shows: the cgitrc's max-commit-count, cgit's default 50). A command is timed from its start to its
exit (output to /dev/null); a page from writing the request to having read the whole answer.
Checks (outside the timing): git exits 0; a page answers 200 and, gunzipped, is cgit's markup (the
generator meta: cgit's or shellac's) and names PATH's last part; with --admin, shellac rendered it. A failed check is left out of the
times and counted as bad. With --admin (shellac's admin port) shellac's render time of the page is
read from /metrics before and after it (outside the timing).

Prints, per KIND and TARGET:
  BENCH_HISTORY kind=K target=T n=N bad=B p50_us= p90_us= p99_us= max_us= mean_us= sum_us=
  BENCH_HISTORY_BAD kind=K target=T url=URL why=...   (the first 5 failed checks of a KIND and TARGET)
--samples writes one line per page: KIND SHA PATH URL, then the µs of git-nograph, git, cgit and
shellac (empty when its check failed), then shellac's render µs (from /metrics, or empty).
"""
import argparse
import gzip
import html
import subprocess
import sys
import time

from render import Conn, Timeout, metrics, pct

TARGETS = ("git-nograph", "git", "cgit", "shellac")


def git_command(repo, kind, sha, path, graph, rows):
    cmd = ["git"] + ([] if graph else ["-c", "core.commitGraph=false"]) + ["-C", repo]
    if kind == "blame":
        return cmd + ["blame", "--porcelain", sha, "--", path]
    follow = ["--follow"] if kind == "log-follow" else []
    return cmd + ["log", "-%d" % rows] + follow + ["--format=%H", sha, "--", path]


def run_git(cmd, timeout):
    t0 = time.perf_counter()
    try:
        r = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=timeout)
    except subprocess.TimeoutExpired:
        return None, "took over %d s" % timeout
    us = (time.perf_counter() - t0) * 1e6
    if r.returncode != 0:
        return None, "exit %d: %s" % (r.returncode, r.stderr.decode("utf-8", "replace").strip()[:200])
    return us, ""


def get_page(conn, url, path, timeout):
    try:
        status, enc, body, us = conn.get(url, {"Accept-Encoding": "gzip"})
    except Timeout:
        return None, "no whole answer within %d s" % timeout
    if status != 200:
        return None, "status %d" % status
    if enc == "gzip":
        try:
            body = gzip.decompress(body)
        except OSError as e:
            return None, "bad gzip: %s" % e
    text = html.unescape(body.decode("utf-8", "replace"))
    if "name='generator' content='" not in text:
        return None, "not a cgit page (no generator meta)"
    if path.rstrip("/").rsplit("/", 1)[-1] not in text:
        return None, "the path is not on the page"
    return us, ""


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--plan", required=True)
    ap.add_argument("--repo", required=True)
    ap.add_argument("--port", action="append", default=[], help="shellac=PORT and cgit=PORT")
    ap.add_argument("--admin", type=int)
    ap.add_argument("--rows", type=int, default=50, help="a log page's rows (max-commit-count)")
    ap.add_argument("--timeout", type=int, default=60)
    ap.add_argument("--samples")
    a = ap.parse_args()
    ports = dict(p.split("=", 1) for p in a.port)
    if set(ports) != {"shellac", "cgit"}:
        sys.exit("history.py: --port shellac=PORT and --port cgit=PORT")
    conns = {t: Conn(int(p), a.timeout) for t, p in ports.items()}
    times = {}   # (kind, target) -> [us]
    bad = {}     # (kind, target) -> [(url, why)]
    samples = open(a.samples, "w") if a.samples else None
    with open(a.plan) as f:
        plan = [line.rstrip("\n").split("\t") for line in f if line.strip()]
    for kind, sha, path, url in plan:
        row = {}
        for target in TARGETS:
            if target.startswith("git"):
                us, why = run_git(git_command(a.repo, kind, sha, path, target == "git", a.rows), a.timeout)
            else:
                before = metrics(a.admin) if a.admin and target == "shellac" else None
                us, why = get_page(conns[target], url, path, a.timeout)
                if before is not None:
                    after = metrics(a.admin)
                    row["render"] = sum(s - before.get(k, (0, 0.0))[1] for k, (_, s) in after.items()) * 1e6
                    if us is not None and row["render"] <= 0:
                        us, why = None, "shellac did not render it (its upstream answered)"
            row[target] = us
            if us is None:
                bad.setdefault((kind, target), []).append((url, why))
            else:
                times.setdefault((kind, target), []).append(us)
        if samples:
            cells = ["" if row.get(t) is None else "%.0f" % row[t] for t in TARGETS + ("render",)]
            samples.write("\t".join([kind, sha, path, url] + cells) + "\n")
    if samples:
        samples.close()
    for kind in dict.fromkeys(p[0] for p in plan):
        for target in TARGETS:
            v = times.get((kind, target), [])
            b = bad.get((kind, target), [])
            print("BENCH_HISTORY kind=%s target=%s n=%d bad=%d p50_us=%.0f p90_us=%.0f p99_us=%.0f max_us=%.0f "
                  "mean_us=%.0f sum_us=%.0f" % (kind, target, len(v), len(b), pct(v, 50), pct(v, 90), pct(v, 99),
                                                max(v or [0]), sum(v) / len(v) if v else 0, sum(v)))
            for url, why in b[:5]:
                print("BENCH_HISTORY_BAD kind=%s target=%s url=%s why=%s" % (kind, target, url, why))


if __name__ == "__main__":
    main()
