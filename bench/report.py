#!/usr/bin/env python3
"""bench/report.py: the benchmark reports, made from a run's raw results alone.

Usage: bench/report.py RAW-DIR [--out DIR] [--no-plot]
       bench/report.py --finish-meta RAW-DIR   (used by bench/lib.sh: meta.tsv -> meta.json)

RAW-DIR is what a scenario of bench/run.sh wrote (bench/results/raw/NAME/ for a committed report):
  meta.json    the exact command, date, machine line, versions, options, labels, check outcomes and
               notes (see bench/README.md, "Raw results")
  points.tsv   one row per measured wrk point (columns in POINT_COLUMNS)
  ...          a scenario's own files (burst.tsv, memory.tsv, handshakes.tsv, render.out, flood-*)
Writes DIR/NAME.md (and DIR/NAME.png for a sweep; gnuplot) with DIR = --out, default the folder
above RAW-DIR's raw/ folder (bench/results for bench/results/raw/NAME). Nothing is measured here.
"""

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

POINT_COLUMNS = ["target", "conns", "rps", "p50_us", "p95_us", "p99_us", "max_us", "requests", "errors",
                 "err_detail", "bytes_per_resp", "secs", "cpu", "origin"]


# ---------------------------------------------------------------------------------------------
# Raw results

def finish_meta(raw):
    """meta.tsv (KEY<TAB>VALUE lines; KEY a.b = nested, KEY[] = a list) -> meta.json."""
    meta = {}
    path = os.path.join(raw, "meta.tsv")
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.rstrip("\n")
            if not line:
                continue
            key, _, value = line.partition("\t")
            is_list = key.endswith("[]")
            if is_list:
                key = key[:-2]
            parts = key.split(".")
            d = meta
            for p in parts[:-1]:
                d = d.setdefault(p, {})
            if is_list:
                d.setdefault(parts[-1], []).append(value)
            else:
                d[parts[-1]] = value
    with open(os.path.join(raw, "meta.json"), "w", encoding="utf-8") as f:
        json.dump(meta, f, indent=1, sort_keys=True)
        f.write("\n")
    os.remove(path)


def num(s, default=0.0):
    try:
        return float(s)
    except (TypeError, ValueError):
        return default


def read_tsv(path):
    if not os.path.exists(path):
        return []
    with open(path, encoding="utf-8") as f:
        return [line.rstrip("\n").split("\t") for line in f if line.strip()]


class Run:
    """A run's raw results: meta.json, points.tsv and the scenario's own files."""

    def __init__(self, raw):
        self.raw = raw
        with open(os.path.join(raw, "meta.json"), encoding="utf-8") as f:
            self.meta = json.load(f)
        self.points = []
        for r in read_tsv(os.path.join(raw, "points.tsv")):
            r = r + ["-"] * (len(POINT_COLUMNS) - len(r))
            p = dict(zip(POINT_COLUMNS, r))
            p["conns"] = int(p["conns"])
            for k in ("rps",):
                p[k] = num(p[k])
            for k in ("p50_us", "p95_us", "p99_us", "max_us", "requests", "errors", "bytes_per_resp"):
                p[k] = int(num(p[k]))
            self.points.append(p)
        # Points whose walk reached the end of its URL list (crawler.lua stops there): their rate is
        # over a part of the point's time, maybe a few requests; they are listed, never a peak.
        ran_out = {(r[0], r[1]) for r in read_tsv(os.path.join(raw, "crawl.tsv"))
                   if len(r) >= 6 and r[2] == "measured" and r[5] not in ("", "0")}
        for p in self.points:
            p["ran_out"] = (p["target"], str(p["conns"])) in ran_out

    def m(self, key, default=""):
        d = self.meta
        for k in key.split("."):
            if not isinstance(d, dict) or k not in d:
                return default
            d = d[k]
        return d

    def opt(self, key, default=""):
        return self.m("options." + key, default)

    def label(self, t):
        return self.m("labels." + t, t) or t

    def file(self, name):
        return os.path.join(self.raw, name)

    def text(self, name):
        p = self.file(name)
        if not os.path.exists(p):
            return ""
        with open(p, encoding="utf-8", errors="replace") as f:
            return f.read()

    def nproc(self):
        return int(num(self.m("nproc", "2"), 2))

    # --- reading points back
    def rows(self, t):
        return [p for p in self.points if p["target"] == t]

    def full_rows(self, t):
        """TARGET's points that walked their whole time (not those that ran out of URLs)."""
        return [p for p in self.rows(t) if not p.get("ran_out")]

    def row(self, t, c):
        for p in self.points:
            if p["target"] == t and p["conns"] == c:
                return p
        return None

    def full_row(self, t, c):
        p = self.row(t, c)
        return p if p and not p.get("ran_out") else None

    def levels(self):
        return sorted({p["conns"] for p in self.points})

    def peak(self, t):
        """(rps, conns) of TARGET's row with the highest req/s (the first of equal ones), or None."""
        best = None
        for p in self.full_rows(t):
            if p["rps"] > 0 and (best is None or p["rps"] > best["rps"]):
                best = p
        return (best["rps"], best["conns"]) if best else None

    def ratios(self, base, t):
        """(peak ratio t/base, lowest per-level ratio as 'R at c=C' or 'n/a')."""
        bp, tp = self.peak(base), self.peak(t)
        pr = tp[0] / bp[0] if bp and tp else 0.0
        low = None
        for p in self.full_rows(t):
            b = self.full_row(base, p["conns"])
            if b and b["rps"] > 0:
                r = p["rps"] / b["rps"]
                if low is None or r < low[0]:
                    low = (r, p["conns"])
        return pr, ("n/a" if low is None else "%.2fx at c=%d" % low)

    def ratio_range(self, base, t):
        lo = hi = None
        for p in sorted(self.full_rows(t), key=lambda p: p["conns"]):
            b = self.full_row(base, p["conns"])
            if b and b["rps"] > 0:
                r = p["rps"] / b["rps"]
                if lo is None or r < lo[0]:
                    lo = (r, p["conns"])
                if hi is None or r > hi[0]:
                    hi = (r, p["conns"])
        if lo is None:
            return "n/a"
        return "%.2fx (c=%d) to %.2fx (c=%d)" % (lo[0], lo[1], hi[0], hi[1])

    def knee(self, t):
        """The lowest level where p99 grows faster than the load: p99(c)/p99(prev) > c/prev.
        -> (c, prev_c, prev_p99_us, p99_us) or None."""
        prev = None
        for p in sorted(self.full_rows(t), key=lambda p: p["conns"]):
            if prev and prev["p99_us"] > 0 and p["p99_us"] / prev["p99_us"] > p["conns"] / prev["conns"]:
                return (p["conns"], prev["conns"], prev["p99_us"], p["p99_us"])
            prev = p
        return None

    def knee_text(self, t):
        k = self.knee(t)
        if not k:
            return "none in range"
        return "c=%d (p99 %s ms at c=%d -> %s ms)" % (k[0], ms(k[2]), k[1], ms(k[3]))

    def errors(self, t):
        return sum(p["errors"] for p in self.rows(t))

    def disturbed(self, limit=20):
        out = []
        for p in self.points:
            o = cpu_of(p["cpu"], "other")
            if o > limit:
                out.append("%s c=%d (other %d%%)" % (p["target"], p["conns"], o))
        return out

    def bytes_per_response(self, targets):
        parts = []
        for t in targets:
            vals = sorted({p["bytes_per_resp"] for p in self.rows(t)})
            parts.append("%s %s" % (self.label(t), "/".join(str(v) for v in vals)))
        return "; ".join(parts)


def cpu_of(cpu, name):
    for f in (cpu or "").split(","):
        k, _, v = f.partition(":")
        if k == name:
            return int(num(v))
    return 0


def ms(u):
    u = num(u)
    return "%.1f" % (u / 1000) if u >= 10000 else "%.2f" % (u / 1000)


def ms3(u):
    u = num(u)
    return "%.1f" % (u / 1000) if u >= 10000 else "%.3f" % (u / 1000)


def cpu_text(cpu):
    return (cpu or "-").replace(",", ", ").replace(":", " ")


def met(ok):
    return "**met**" if ok else "**not met**"


# ---------------------------------------------------------------------------------------------
# Pieces every report shares

def head(run, title, description):
    out = ["# " + title, ""] + description + [""]
    out.append("- command: `%s`" % run.m("command"))
    if run.m("note"):
        out.append("- note: " + run.m("note"))
    took = run.m("run_seconds")
    out.append("- date: %s%s" % (run.m("date"), " (run took %s s)" % took if took != "" else ""))
    out.append("- machine: %s; load average at start: %s" % (run.m("machine"), run.m("load_at_start")))
    v = run.m("versions", {})
    out.append("- versions: %s; %s; %s; shellac built from git %s" % (
        v.get("peers", ""), v.get("wrk", ""), v.get("shellac", "") or "shellac not run", v.get("shellac_rev", "")))
    if run.m("corpus"):
        out.append("- corpus: " + run.m("corpus"))
    return out


def run_health(run):
    out = []
    dist = run.disturbed(20)
    if dist:
        out.append("- **machine not quiet**: %d point(s) had more than 20%% of a core used outside the benchmark: %s"
                   % (len(dist), ", ".join(dist)))
    else:
        out.append("- machine quiet: no point had more than 20% of a core used outside the benchmark")
    if run.m("shellac_died"):
        out.append("- **%s**; later shellac points are missing" % run.m("shellac_died"))
    if run.m("shellac_exit"):
        out.append("- shellac shutdown: " + run.m("shellac_exit"))
    return out


def remeasured(run):
    r = run.m("remeasured").strip()
    return ["- levels measured again because other processes disturbed them: " + r] if r else []


def floor_text(run):
    """How long a point lasted when the run had a page floor (--min-pages), else ""."""
    n = run.opt("min_pages")
    if n in (None, "", "0"):
        return ""
    return (" and longer, up to %s s, until the target answered %s pages: --min-pages, so that a slow target's "
            "rate is over enough pages that a few slow ones do not decide it" % (run.opt("max_duration"), n))


def table_vs(run, ref, targets):
    """Every row, levels ascending, targets in order; REF req/s / this target's req/s. With a page floor
    (--min-pages) also the pages each point answered and the seconds it lasted."""
    floor = floor_text(run) != ""
    out = ["| conns | target | req/s |%s p50 ms | p95 ms | p99 ms | errors | origin | %s / this | CPU %% (servers, wrk, other) |"
           % (" pages in s |" if floor else "", run.label(ref)),
           "|---:|---|---:|%s---:|---:|---:|---|---:|---:|---|" % ("---:|" if floor else "")]
    levels = sorted({p["conns"] for p in run.points if p["target"] in targets})
    for c in levels:
        r = run.row(ref, c)
        for t in targets:
            p = run.row(t, c)
            if not p:
                continue
            err = "0" if p["errors"] == 0 else "%d (%s)" % (p["errors"], p["err_detail"])
            if t == ref:
                ratio = "-"
            elif p.get("ran_out") or (r and r.get("ran_out")):
                ratio = "n/a (ran out)"
            elif p["rps"] > 0 and r:
                ratio = "**%.2fx**" % (r["rps"] / p["rps"])
            else:
                ratio = "n/a"
            o = p["origin"]
            if o in ("", "-"):
                origin = "-"
            else:
                origin = "%.0f%%" % (num(o) / p["requests"] * 100) if p["requests"] > 0 else o
            walk = " %d in %.1f |" % (p["requests"], num(p["secs"])) if floor else ""
            out.append("| %d | %s | %s |%s %s | %s | %s | %s | %s | %s | %s |" % (
                c, run.label(t), "%.0f%s" % (p["rps"], " (ran out)" if p.get("ran_out") else ""), walk, ms(p["p50_us"]),
                ms(p["p95_us"]), ms(p["p99_us"]), err, origin, ratio, cpu_text(p["cpu"])))
    return out


def table_base(run, base, minimum, targets):
    """Every row; target req/s / BASE req/s at the same level, with (met) against MINIMUM."""
    out = ["| conns | target | req/s | p50 ms | p95 ms | p99 ms | errors | req/s vs %s | CPU %% (servers, wrk, other) |"
           % run.label(base), "|---:|---|---:|---:|---:|---:|---|---:|---|"]
    for c in run.levels():
        b = run.row(base, c)
        for t in targets:
            p = run.row(t, c)
            if not p:
                continue
            err = "0" if p["errors"] == 0 else "%d (%s)" % (p["errors"], p["err_detail"])
            if t == base:
                ratio = "baseline"
            elif b and b["rps"] > 0:
                r = p["rps"] / b["rps"]
                ratio = "%.2fx" % r
                if minimum:
                    ratio += " (met)" if r >= minimum else " **(below %gx)**" % minimum
            else:
                ratio = "n/a"
            out.append("| %d | %s | %.0f | %s | %s | %s | %s | %s | %s |" % (
                c, run.label(t), p["rps"], ms(p["p50_us"]), ms(p["p95_us"]), ms(p["p99_us"]), err, ratio,
                cpu_text(p["cpu"])))
    return out


def peak_line(run, t, with_errors=False):
    if run.m("failed." + t):
        return "- %s: **not measured: %s**" % (run.label(t), run.m("failed." + t))
    pk = run.peak(t)
    if not pk:
        return "- %s: no measurement" % run.label(t)
    line = "- %s: peak %.0f req/s at c=%d (p99 there %s ms); knee: %s" % (
        run.label(t), pk[0], pk[1], ms(run.row(t, pk[1])["p99_us"]), run.knee_text(t))
    if with_errors:
        line += "; %d errors" % run.errors(t)
    return line


def stderr_tail(run):
    s = run.text("shellac-stderr.txt")
    if not s.strip():
        return []
    return ["", "## shellac stderr (last 20 lines)", "", "```"] + s.rstrip("\n").split("\n")[-20:] + ["```"]


def plot(run, png, title, targets, logy=None):
    """req/s (top) and p99 (bottom, log) against connections (log2 x axis), one line per target."""
    targets = [t for t in targets if run.rows(t)]
    if not targets:
        if os.path.exists(png):
            os.remove(png)
        return
    if logy is None:   # targets 20x apart or more: req/s on a log scale, or the slow one lies on the axis
        v = [p["rps"] for p in run.points if p["target"] in targets]
        logy = min(v) > 0 and max(v) / min(v) > 20
    if logy:
        title += " (req/s on a log scale)"
    if not shutil.which("gnuplot"):
        print("report.py: no gnuplot, no plot (apt-get install gnuplot-nox)", file=sys.stderr)
        return
    with tempfile.TemporaryDirectory() as tmp:
        rps, p99 = [], []
        for i, t in enumerate(targets):
            dat = os.path.join(tmp, "%d.dat" % i)
            with open(dat, "w") as f:
                for p in sorted(run.rows(t), key=lambda p: p["conns"]):
                    f.write("%d %s %s\n" % (p["conns"], p["rps"], p["p99_us"] / 1000))
            lab = run.label(t).replace("'", "")
            rps.append("'%s' using 1:2 with linespoints lw 2 pt 7 title '%s'" % (dat, lab))
            p99.append("'%s' using 1:3 with linespoints lw 2 pt 7 title '%s'" % (dat, lab))
        terms = subprocess.run(["gnuplot", "-e", "set terminal"], capture_output=True, text=True)
        term = "pngcairo size 1000,800 font ',10'" if "pngcairo" in terms.stdout + terms.stderr \
            else "png size 1000,800 font ',11'"
        gp = os.path.join(tmp, "plot.gp")
        with open(gp, "w") as f:
            f.write("\n".join([
                "set terminal " + term, "set output '%s'" % png,
                "set multiplot layout 2,1 title '%s'" % title.replace("'", ""),
                "set logscale x 2", "set xlabel 'concurrent connections (wrk -c)'", "set grid", "set key top left",
                "set ylabel 'requests/s'",
                "set logscale y 10; set yrange [*:*]" if logy else "set yrange [0:*]",
                "plot " + ", ".join(rps),
                "set logscale y 10", "set yrange [*:*]", "set ylabel 'p99 latency (ms, log)'",
                "plot " + ", ".join(p99), "unset multiplot", ""]))
        r = subprocess.run(["gnuplot", gp], capture_output=True, text=True)
        if r.returncode != 0:
            print("report.py: gnuplot failed: " + r.stderr, file=sys.stderr)


# ---------------------------------------------------------------------------------------------
# crawler, cold, hot, fork-spread: cgit direct, shellac, varnish (+ nginx static for hot)

FORGE_TEXT = {
    "crawler": ("crawler: every request a new commit URL", [
        "Every request asks for a commit page URL no one asked for before in this run: repository (the base",
        "and every fork) x sampled commit x diff option (none, context=3/5/10, ignorews=1, dt=1, each with",
        "and without h=BRANCH), in a seeded random order (bench/wrk/urls.py). A URL cache never hits. shellac",
        "renders these pages itself (the fork farm's cgitrc imported): a frame per request and the diff as a",
        "repository-neutral fragment, filled once before the sweep (one pass over the sampled commits and",
        "options, \"fragments cached\"), which serves every fork and h=. Each target walks the same list from",
        "its start, so all three see the same pages. Targets (issue 6): shellac >= 5,000 pages/s on 2 cores",
        "shared with wrk, and >= 50x cgit direct."]),
    "cold": ("cold: a crawler's first pass, every page a commit no target saw", [
        "Every request asks for the commit page of a commit no target was asked for before in this run (every",
        "non-merge commit of the base repository once, seeded order, the sampled commits left out): the store",
        "starts empty and every page costs shellac a frame and a diff fragment render (each stored, never asked",
        "for again), Varnish a fetch from cgit. Each target walks the same list from its start at each level;",
        "the next level starts past the furthest any target got. The floor is git's own diff work on the same",
        "commits: `git log --no-walk --stdin -p --stat --minimal`. Targets (issue 12): shellac's mean fragment",
        "render <= git's time a commit, and >= 800 pages/s on 2 cores."]),
    "crawler-mix": ("crawler-mix: what crawlers walk on a forge, every URL once", [
        "Every request asks for a URL no target was asked for before in this run, drawn from every page kind",
        "shellac renders and weighted as crawlers walk a forge (bench/wrk/pages_urls.py --mix, per 100 URLs:",
        "15 commit, 8 diff, 8 patch, 4 rawdiff, 12 tree of a folder, 12 tree of a file, 10 plain, 10 blame,",
        "10 path log, 4 log from a commit, 3 log?ofs=, 2 tag, 2 snapshot), each naming a repository of the",
        "fork farm at random. shellac's store starts empty; what it stores (a diff, a tree listing, a file",
        "view) serves later URLs of other forks and kinds. Each target walks the same list from its start at",
        "each level; the next level starts past the furthest any target got. Target (issue 14): shellac",
        ">= 20x cgit direct on the mix on 2 cores."]),
    "hot": ("hot: ten pages over and over", [
        "Ten commit pages (base and forks, default options) requested again and again: a fully cached",
        "working set. Varnish serves them from its cache after the first warm-up round. shellac, when it",
        "renders (the shellac line below), makes a page's frame on its first request, with the diff from its",
        "fragment store, and then serves the page kept whole (its page memo; a render a second per",
        "repository looks at the refs again); a build that does not render passes every request to cgit.",
        "nginx serving the same bytes as static files is the ceiling."]),
    "fork-spread": ("fork-spread: the same commits through every fork", [
        "Ten commits, each asked for under every repository of the fork farm (base + forks) and every diff",
        "option (12 variants), never the same URL twice, seeded random order. The diff part of these pages is",
        "byte-identical in every fork: a repository-neutral fragment cache (shellac, issues 5 and 6; its",
        "store starts empty) renders ten diffs x options, once each, and a frame per request; a URL cache",
        "(Varnish) fetches every URL from cgit."]),
}


def parse_counts(s):
    """render counts 'KIND N SECONDS;...' (shellac's /metrics) -> {kind: (n, seconds)}"""
    out = {}
    for part in (s or "").split(";"):
        f = part.split()
        if len(f) == 3:
            out[f[0]] = (num(f[1]), num(f[2]))
    return out


def render_delta(before, after):
    b, a = parse_counts(before), parse_counts(after)
    parts = []
    for k in sorted(a):
        n0, s0 = b.get(k, (0, 0))
        n1, s1 = a[k]
        if n1 > n0:
            parts.append("%d %s (mean %.3f ms of render time)" % (n1 - n0, k, (s1 - s0) / (n1 - n0) * 1000))
    return ", ".join(parts) or "nothing"


def repeats_note(run):
    crawl = read_tsv(run.file("crawl.tsv"))   # target conns measured|warmup repeats urls [ended walked_us]
    if not crawl:
        return ""
    targets = run.m("targets", [])
    per, total, urls, wtotal, wurls, ran_out = {}, 0, 0, 0, 0, []
    for row in crawl:
        t, c, kind, rep, n = row[:5]
        if kind == "measured" and len(row) >= 7 and row[5] not in ("", "0"):
            walked = int(row[6]) if row[6] else 0
            ran_out.append("%s c=%s%s" % (run.label(t), c, " after %.2f s" % (walked / 1e6) if walked else ""))
        if kind == "warmup":
            wtotal += int(rep)
            wurls = int(n)
        else:
            total += int(rep)
            urls = int(n)
            per[t] = per.get(t, 0) + int(rep)
    nxt = run.m("next_line")
    render = run.opt("render") == "1"
    workload = run.m("workload")
    if total > 0:
        by = ", ".join("%s %d" % (run.label(t), per.get(t, 0)) for t in targets)
        note = ("**URL list too short**: %d measured requests asked for a URL the same target had already been asked "
                "for (%s; list of %d URLs, walked to line %s); use more --forks or --sample" % (total, by, urls, nxt))
        if render and total == per.get("shellac", 0):
            note = ("only shellac asked for URLs again within a run (%d measured requests; list of %d URLs): it keeps "
                    "the pages it made (its page memo), so those repeats cost it less than new URLs; use more --forks "
                    "or --sample" % (total, urls))
    else:
        note = ("no measured request repeated a URL for its target (measured list: %d URLs, walked to line %s; every "
                "target starts a level at the same line)" % (urls, nxt))
    if ran_out:
        note += ("; **the list ran out** (a thread stops at its end, and the point's rate is over the URLs walked "
                 "until then, bench/wrk/crawler.lua; such points are listed but never taken for a peak, a knee or a "
                 "ratio): %s; use more --forks or --sample, or a shorter --duration"
                 % ", ".join(ran_out))
    if wtotal > 0:
        note += "; warm-ups (a list of their own, %d URLs) repeated %d" % (wurls, wtotal)
    if render and workload not in ("cold", "crawler-mix") and total == 0:
        note += (". shellac's run at a level starts where the others' does and goes on much further, over URLs it was "
                 "asked at earlier levels (it does not move the levels' start, see bench/README.md): it keeps no page, "
                 "so those cost it what new URLs do")
    return note


def forge_report(run):
    name = run.m("scenario")
    title, desc = FORGE_TEXT[name]
    targets = run.m("targets", [])
    render = run.opt("render") == "1"
    workload = run.m("workload")
    lines = head(run, title, desc)
    lines.append("- load: wrk -t2 (-t1 at c=1) -c CONNS -d %ss --timeout %s, keep-alive (a point lasts %s s%s)," % (
        run.opt("duration"), run.opt("wrk_timeout"), run.opt("duration"), floor_text(run)))
    lines.append("  %ss warm-up before each point (on URLs of its own), script bench/wrk/%s;" % (
        run.opt("warmup"), run.m("lua")))
    lines.append("  no Accept-Encoding" if run.opt("identity") == "1"
                 else "  every request sends Accept-Encoding: gzip (as crawlers do)")
    lines.append("- cgit: /usr/lib/cgit/cgit.cgi as CGI under lighttpd (one process per request), the corpus' cgitrc")
    lines.append("  (cache-size=0: no cgit cache; virtual-root=/)")
    conf = run.opt("shellac_conf")
    if render:
        lines.append("- shellac: threads=2, access-log=off, admin-listen=127.0.0.1:PORT (for /metrics), backend=that "
                     "lighttpd (every page")
        lines.append("  it does not render), %s%s, everything else default (render-threads = cores);" % (
            run.m("render_lines"), ", " + conf if conf else ""))
        lines.append("  this build " + run.m("shellac_mode"))
        if workload in ("cold", "crawler-mix"):
            warm = ("empty: nothing rendered before the sweep but the check and probe pages (sampled commits, left out "
                    "of the list)")
        elif not run.m("warm.pages"):
            warm = ("empty before the sweep but for the check and probe pages: the sweep's own requests (its first "
                    "warm-up) render and store each fragment once")
        else:
            warm = ("before the sweep, one pass over `urls.py warm` (%s pages: every sampled commit x the 6 diff options, "
                    "base repository, one at a time, %.1f s): shellac rendered %s; %s failed" % (
                        run.m("warm.pages"), num(run.m("warm.ms")) / 1000,
                        render_delta(run.m("warm.renders_before"), run.m("warm.renders_after")), run.m("warm.failed")))
        lines.append("- shellac's fragment store: " + warm)
        lines.append("- shellac's renders during the sweep (its /metrics): " + render_delta(
            run.m("sweep_renders_before"), run.m("sweep_renders_after")))
    else:
        lines.append("- shellac: threads=2, access-log=off, admin-listen=off, backend=that lighttpd%s, everything else "
                     "default;" % (", " + conf if conf else ""))
        lines.append("  this build " + run.m("shellac_mode"))
    lines.append("- varnish: malloc,256m, ESI on for Surrogate-Control content=\"ESI/1.0\" (cgit sends none), gzip")
    lines.append("  for text/*, TTL from cgit's Expires (commit pages by SHA: far future), backend=that lighttpd")
    lines.append("- all on the same %d cores: wrk, the proxy and lighttpd+cgit compete for them" % run.nproc())
    if name == "hot":
        lines.append("- nginx static: the same pages as files, gzip_static (the .gz made by gzip -6), 2 workers: the "
                     "ceiling for serving these bytes from memory")
    lines += ["", "## Summary", ""]
    for t in targets:
        lines.append(peak_line(run, t))
    for p in run.m("peers", []) + run.m("extra_peers", []):
        r, _ = run.ratios(p, "shellac")
        lines.append("- shellac / %s: **%.2fx** at peak (shellac's peak / its peak); per level %s" % (
            run.label(p), r, run.ratio_range(p, "shellac")))
    for t in targets:
        o = [p for p in run.rows(t) if p["origin"] not in ("", "-")]
        req = sum(p["requests"] for p in o)
        origin = ("%.0f%% of its answered requests reached cgit" % (sum(num(p["origin"]) for p in o) / req * 100)
                  if req else "origin requests unknown")
        lines.append("- %s: %d errors over the sweep; %s" % (run.label(t), run.errors(t), origin))
    rn = repeats_note(run)
    if rn:
        lines.append("- " + rn)
    lines += remeasured(run)
    lines += run_health(run)
    if workload == "cold":
        lines += cold_summary(run)
    elif workload == "crawler-mix":
        r, _ = run.ratios("cgit", "shellac")
        lines.append("- target (issue 14, %d cores shared with wrk): >= 20x cgit direct on the mix: %s (%.2fx at peak)" % (
            run.nproc(), met(round(r, 2) >= 20), r))
    elif render and name == "crawler":
        pk = run.peak("shellac")
        if pk:
            r, _ = run.ratios("cgit", "shellac")
            lines.append("- targets (issue 6, %d cores shared with wrk): >= 5,000 pages/s: %s (peak %.0f); >= 50x cgit "
                         "direct: %s (%.2fx at peak)" % (run.nproc(), met(round(pk[0]) >= 5000), pk[0],
                                                         met(round(r, 2) >= 50), r))
    lines.append("")
    if workload == "cold":
        lines += cold_table(run)
    elif workload == "crawler-mix":
        lines += mix_table(run)
    lines += ["## Per level", "",
              "One row per target and level. shellac / this = shellac's req/s / this target's req/s at the same",
              "level (above 1: shellac faster). origin = requests that reached lighttpd+cgit during the measured",
              "run (its access log between two marks) / requests answered. CPU % = CPU time during the measured",
              "run / wall time, in %% of one core (%d%% = every core): each server process tree (lighttpd"
              % (run.nproc() * 100),
              "includes the cgit processes it ran), wrk, and other = everything else on the machine (should be ~0).",
              ""]
    lines += table_vs(run, "shellac", targets)
    lines += ["", "Bytes per response (wrk, headers + body): " + run.bytes_per_response(targets), "",
              "![throughput and p99 vs concurrency](%s.png)" % run.m("report")]
    lines += stderr_tail(run)
    return lines, lambda png: plot(run, png, "%s: %s on %d cores, loopback" % (
        run.m("report"), "/".join(targets), run.nproc()), targets)


def cold_renders(run):
    """cold-renders.tsv (c, render counts before and after shellac's run) -> {c: {kind: (n, s)}}"""
    out = {}
    for r in read_tsv(run.file("cold-renders.tsv")):
        c, before, after = (r + ["", ""])[:3]
        b, a = parse_counts(before), parse_counts(after)
        d = out.setdefault(int(c), {})
        for kind, (n1, s1) in a.items():
            n0, s0 = b.get(kind, (0, 0.0))
            if n1 > n0:
                dn, ds = d.get(kind, (0, 0.0))
                d[kind] = (dn + n1 - n0, ds + s1 - s0)
    return out


def cold_floor_ms(run):
    n = num(run.m("floor.commits"))
    return num(run.m("floor.us")) / 1000 / n if n else 0.0


def cold_summary(run):
    per = cold_renders(run)
    fn = sum(d.get("diff-fragment", (0, 0))[0] for d in per.values())
    fs = sum(d.get("diff-fragment", (0, 0))[1] for d in per.values())
    cn = sum(d.get("commit", (0, 0))[0] for d in per.values())
    cs = sum(d.get("commit", (0, 0))[1] for d in per.values())
    floor = cold_floor_ms(run)
    frag = fs / fn * 1000 if fn else None
    cores = run.nproc()
    out = ["- git's floor: `git log --no-walk --stdin -p --stat --minimal` over the first %s commits of the measured "
           "list (those every target was asked for at the first levels), one process, one core: **%.3f ms a commit** "
           "(%.0f commits/s on %d cores at that rate)" % (run.m("floor.commits"), floor,
                                                          2000 / floor if floor else 0, cores)]
    out.append("- shellac's render time as its /metrics count it, over the whole sweep: diff fragment mean **%s ms**, "
               "%s; fragment / git's floor: **%s** (target <= 1)" % (
                   "%.3f" % frag if frag is not None else "n/a",
                   "commit frame mean %.3f ms" % (cs / cn * 1000) if cn else "",
                   "%.2fx" % (frag / floor) if frag and floor else "n/a"))
    pk = run.peak("shellac")
    if pk:
        out.append("- shellac peak %.0f pages/s: target >= 800 pages/s on %d cores shared with wrk: %s; shellac's peak / "
                   "git's floor on %d cores: %.2fx" % (pk[0], cores, met(round(pk[0]) >= 800), cores,
                                                      round(pk[0]) / (2000 / floor) if floor else 0))
    return out


def cold_table(run):
    floor = cold_floor_ms(run)
    out = ["## shellac's render time per level", "",
           "From its /metrics before and after its measured run at each level (warm-ups not counted).", "",
           "| c | diff fragments | mean ms | commit frames | mean ms | fragment / git floor |",
           "|---:|---:|---:|---:|---:|---:|"]
    for c, d in cold_renders(run).items():
        fn, fs = d.get("diff-fragment", (0, 0))
        cn, cs = d.get("commit", (0, 0))
        fm = fs / fn * 1000 if fn else 0
        cm = cs / cn * 1000 if cn else 0
        out.append("| %d | %d | %.3f | %d | %.3f | %.2fx |" % (c, fn, fm, cn, cm, fm / floor if floor else 0))
    out.append("")
    return out


def mix_table(run):
    """crawler-mix: the lists (kinds.tsv) and shellac's renders by kind over its measured runs."""
    total = {}
    for d in cold_renders(run).values():
        for kind, (n, sec) in d.items():
            tn, ts = total.get(kind, (0, 0.0))
            total[kind] = (tn + n, ts + sec)
    out = ["## shellac's renders by kind", "",
           "From its /metrics before and after its measured run at each level, summed over the sweep (warm-ups not",
           "counted). A page may render several parts (a frame and a stored fragment), and a part stored for one",
           "URL serves later ones: pages that found their parts stored render only their frame. A row",
           "KIND:stream counts the pieces of bodies streamed after their render (a snapshot's archive) and",
           "their time (shellac_render_stream_*).", "",
           "| part | renders | mean ms of render time | seconds in all |", "|---|---:|---:|---:|"]
    for kind in sorted(total, key=lambda k: -total[k][1]):
        n, sec = total[kind]
        out.append("| %s | %d | %.3f | %.2f |" % (kind, n, sec / n * 1000 if n else 0, sec))
    kinds = read_tsv(run.file("kinds.tsv"))  # kind, urls, what
    if kinds:
        out += ["", "The lists the mix was drawn from (bench/wrk/pages_urls.py): " + ", ".join(
            "%s %s (`%s`)" % (k[0], k[1], k[2]) for k in kinds if len(k) >= 3)]
    return out + [""]


# ---------------------------------------------------------------------------------------------
# burst

def burst_report(run):
    lab = {t: run.label(t) for t in ("cgit", "shellac", "varnish")}
    rows = read_tsv(run.file("burst.tsv"))
    # target n requests errors detail statuses all_us p50_us p99_us spread_us cpu_ticks hz busy_ticks total_ticks nproc origin
    lines = head(run, "burst: a thundering herd on one cold commit page", [
        "N clients connect, then all send the same request at the same instant (bench/wrk/burst.py: every",
        "connection opened first, then the N requests written back to back, one request per client,",
        "Connection: close), for a commit page no target was asked for before. cgit direct runs N CGI",
        "processes; a proxy that coalesces identical misses (Varnish's waiting list) asks cgit once and",
        "answers everyone from that one response. shellac renders the page itself when the run says so",
        "(its line below): a frame per client and the diff fragment once for the herd (single flight)."])
    lines.append("- load: bench/wrk/burst.py, one request per client, timeout %ss per client%s; a different commit "
                 "for each N (the same for every target); before each burst the machine waits until lighttpd has no "
                 "cgit process left" % (run.opt("burst_timeout"),
                                        "" if run.opt("identity") == "1" else ", Accept-Encoding: gzip"))
    lines.append("- cgit: CGI under lighttpd (cache-size=0); varnish: malloc,256m, gzip; shellac: threads=2, this build "
                 + run.m("shellac_mode"))
    lines += ["", "## Summary", ""]
    sizes = []
    for r in rows:
        if r[1] not in sizes:
            sizes.append(r[1])
    for n in sizes:
        parts = []
        for r in rows:
            if r[1] == n:
                s = "%s: cgit saw %s request(s), all %s answered in %.0f ms" % (lab.get(r[0], r[0]), r[15], r[2],
                                                                                 num(r[6]) / 1000)
                if int(r[3]) > 0:
                    s += " (%s errors)" % r[3]
                parts.append(s)
        lines.append("- N=%s: %s" % (n, "; ".join(parts)))
    for r in read_tsv(run.file("burst-renders.tsv")):
        n, before, after = (r + ["", ""])[:3]
        lines.append("- N=%s: shellac rendered %s" % (n, render_delta(before, after)))
    if run.m("shellac_died"):
        lines.append("- **%s**" % run.m("shellac_died"))
    if run.m("shellac_exit"):
        lines.append("- shellac shutdown: " + run.m("shellac_exit"))
    lines += ["", "## Per burst", "",
              "answered = complete answers; all in = from the first request written to the last answer complete;",
              "p50/p99 = per-client latency from that same instant; origin = requests lighttpd+cgit saw for the",
              "burst (its access log between two marks); send spread = time to write all N requests; server CPU =",
              "CPU seconds of the target's processes (lighttpd includes its cgit children) during the burst;",
              "machine busy = every process on the machine (the driver, the servers, anyone else), % of one core,",
              "from the start mark to the end mark (which includes a wait for cgit's processes to finish).", "",
              "| N | target | answered | errors | statuses | all in (ms) | p50 ms | p99 ms | origin requests | send spread ms "
              "| server CPU s | machine busy % |",
              "|---:|---|---:|---|---|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        cpu_s = num(r[10]) / num(r[11], 100) if num(r[11]) else 0
        busy = num(r[12]) / num(r[13]) * num(r[14]) * 100 if num(r[13]) else 0
        lines.append("| %s | %s | %s | %s | %s | %s | %s | %s | **%s** | %s | %.1f | %.0f |" % (
            r[1], lab.get(r[0], r[0]), r[2], "0" if r[3] == "0" else "%s (%s)" % (r[3], r[4]), r[5], ms(r[6]), ms(r[7]),
            ms(r[8]), r[15], ms(r[9]), cpu_s, busy))
    lines += stderr_tail(run)
    return lines, None


# ---------------------------------------------------------------------------------------------
# passthrough

def passthrough_report(run):
    targets = run.m("targets", [])
    minimum = num(run.opt("target_ratio", "0.7"))
    shellac = "shellac" in targets
    lines = ["# passthrough: shellac in front of nginx vs nginx direct", "",
             "One 6,600-byte commit-page-like HTML file served by nginx on loopback; wrk against nginx directly",
             "and against shellac (no caching: every request proxied) in front of the same nginx, same settings,",
             "back to back at each concurrency level, in one run. Target: shellac >= %gx nginx-direct req/s." % minimum,
             "", "- command: `%s`" % run.m("command")] + (["- note: " + run.m("note")] if run.m("note") else []) + [
             "- date: " + run.m("date"),
             "- machine: %s; load average at start: %s" % (run.m("machine"), run.m("load_at_start"))]
    v = run.m("versions", {})
    lines.append("- versions: %s; %s; %s; git %s" % (v.get("nginx", ""), v.get("wrk", ""),
                                                   v.get("shellac", "") or "shellac not run", v.get("shellac_rev", "")))
    lines.append("- load: wrk -t2 (-t1 at c=1) -c CONNS -d %ss --timeout %s, keep-alive, one URL," % (
        run.opt("duration"), run.opt("wrk_timeout")))
    lines.append("  %ss warm-up before each point; script bench/wrk/report.lua" % run.opt("warmup"))
    lines.append("- nginx: worker_processes 2, access_log off, keepalive_requests 1000000, sendfile on")
    if shellac:
        lines.append("- shellac: threads=2, access-log=off, admin-listen=off, cache=off, backend=nginx (everything else "
                     "default)")
        lines.append("- all on the same %d cores: wrk, nginx and shellac compete for them (through shellac a" % run.nproc())
        lines.append("  request is handled twice, once by shellac and once by nginx)")
    lines += ["", "## Summary", ""]
    for t in targets:
        pk = run.peak(t)
        lines.append("- %s: peak %s req/s at c=%s; knee: %s" % (run.label(t), "%.0f" % pk[0] if pk else "",
                                                               pk[1] if pk else "", run.knee_text(t)))
    if "nginx" in targets:
        for t in targets:
            if t == "nginx":
                continue
            r, low = run.ratios("nginx", t)
            lines.append("- %s: ratio at peak (its peak / nginx-direct peak) **%.2fx** -> target %gx **%s**; lowest "
                         "per-level ratio %s" % (run.label(t), r, minimum, "met" if round(r, 2) >= minimum else "NOT met",
                                                 low))
    for t in targets:
        if t != "nginx":
            lines.append("- %s: %d errors over the whole sweep" % (run.label(t), run.errors(t)))
    rem = run.m("remeasured").split()
    if rem:
        counts = []
        for c in rem:
            if counts and counts[-1][0] == c:
                counts[-1][1] += 1
            else:
                counts.append([c, 1])
        lines.append("- levels measured again because other processes disturbed them (only the last try is kept): "
                     + ", ".join(c + (" (%d times)" % n if n > 1 else "") for c, n in counts))
    if run.m("not_passed"):
        lines.append("- **nginx idle while measured through a proxy** (requests not passed through, numbers invalid): "
                     + run.m("not_passed"))
    lines += run_health(run)
    lines += ["", "## Per level", "",
              "ratio = target req/s / nginx-direct req/s at the same level; (met) when >= %gx." % minimum,
              "CPU %% = CPU time during the measured run / wall time, in %% of one core (%d%% = every core): each server"
              % (run.nproc() * 100),
              "process tree, wrk, and other = everything else on the machine (should be near 0).", ""]
    lines += table_base(run, "nginx", minimum, targets)
    lines += ["", "Bytes per response (wrk, headers + body; a truncating or rewriting proxy would show here): "
              + run.bytes_per_response(targets), "", "![throughput and p99 vs concurrency](passthrough.png)"]
    lines += stderr_tail(run)
    return lines, lambda png: plot(run, png, "passthrough: 6.6 KB page, %s on %d cores, loopback" % (
        "/".join(targets), run.nproc()), targets, logy=False)


# ---------------------------------------------------------------------------------------------
# cached, esi, tls: synthetic ESI pages

def esi_setup_lines(run):
    out = ["- load: wrk -t2 (-t1 at c=1) -c CONNS -d %ss --timeout %s, keep-alive, one URL per target," % (
        run.opt("duration"), run.opt("wrk_timeout")),
        "  %ss warm-up before each point, script bench/wrk/report.lua;%s" % (
            run.opt("warmup"), " no Accept-Encoding" if run.opt("identity") == "1" else " Accept-Encoding: gzip"),
        "- origin: nginx (2 workers) serving bench/wrk/esipages.py's files: frames (/page/) with",
        "  `Surrogate-Control: content=\"ESI/1.0\"` and `Cache-Control: max-age=3600`, fragments (/frag/) with",
        "  `Cache-Control: max-age=3600`, identity (the caches compress)",
        "- shellac: generated config `listen`, `admin-listen`, `backend`=that nginx, `threads=2`, `access-log=off`, "
        + "".join("`%s` " % w for w in run.m("shellac_lines").split())]
    for n in run.m("shellac_notes", []):
        out.append("  - **%s**" % n)
    out += ["- varnish: malloc,256m; VCL `set beresp.do_esi = true` when Surrogate-Control has content=\"ESI/1.0\",",
            "  `set beresp.do_gzip = true` for text/*; TTL from Cache-Control (bench/peers.sh)",
            "- all on the same %d cores: wrk, the cache and the origin compete for them" % run.nproc()]
    return out


def esi_checks(run, targets):
    out = ["## Correctness check (before any load)", "",
           "Each target's page, fetched with Accept-Encoding: gzip (the second of two fetches), gunzipped and",
           "compared byte for byte with the page assembled by bench/wrk/esipages.py. A target that fails is",
           "not measured.", "", "| target | result |", "|---|---|"]
    for t in targets:
        f = run.m("failed." + t)
        res = "**failed, not measured**: " + f if f else "ok: " + run.m("checks." + t)
        out.append("| %s | %s |" % (run.label(t), res))
    return out


def esi_ratio(run, s, p, minimum):
    if run.m("failed." + s) or run.m("failed." + p) or not run.peak(s) or not run.peak(p):
        return "- %s / %s: **n/a** (not both measured)%s" % (
            run.label(s), run.label(p), "; target %gx **not shown**" % minimum if minimum else "")
    r, _ = run.ratios(p, s)
    line = "- %s / %s: **%.2fx** at peak; per level %s" % (run.label(s), run.label(p), r, run.ratio_range(p, s))
    if minimum:
        line += "; target %gx **%s**" % (minimum, "met" if round(r, 2) >= minimum else "NOT met")
    return line


def measured(run, targets):
    return [t for t in targets if run.peak(t)]


def cached_report(run):
    targets = run.m("targets", [])
    lines = head(run, "cached: an ESI commit page from the store", [
        "A cgit-like commit page as a frame (~5 KB, from the origin, cached) with one include of a stored",
        "fragment (the diff, ~1.4 KB as gzip), gzip on the wire: shellac vs Varnish 7 doing the same ESI on",
        "the same files vs nginx serving the assembled page as a static file (gzip_static, the ceiling).",
        "Target: shellac >= 3x Varnish and >= 0.6x nginx. Then the memory table."])
    lines += esi_setup_lines(run)
    lines += ["- nginx static: the assembled page and its .gz (gzip -6), gzip_static, from the same nginx", "",
              "## Summary", ""]
    lines += [peak_line(run, t, with_errors=True) for t in targets]
    lines += [esi_ratio(run, "shellac", "varnish", 3), esi_ratio(run, "shellac", "nginx", 0.6)]
    lines += remeasured(run) + run_health(run) + [""] + esi_checks(run, targets)
    lines += ["", "## Per level", "",
              "shellac / this = shellac's req/s / this target's req/s at the same level. CPU % = CPU time during",
              "the measured run / wall time, in % of one core: each server process tree (a cache's row includes",
              "the origin nginx, idle on hits), wrk, and other = everything else on the machine.", ""]
    lines += table_vs(run, "shellac", targets)
    lines += ["", "Bytes per response (wrk, headers + body): " + run.bytes_per_response(measured(run, targets)), ""]
    lines += memory_report(run)
    lines += ["", "![throughput and p99 vs concurrency](cached.png)"]
    lines += stderr_tail(run)
    return lines, lambda png: plot(run, png, "cached: ESI commit page (frame + 1 include), gzip, %d cores, loopback"
                                   % run.nproc(), targets)


def memory_report(run):
    n = int(num(run.m("memory.objects")))
    size, gz = run.m("memory.fragment_bytes"), int(num(run.m("memory.fragment_gzip")))
    out = ["## Memory: %d distinct fragment objects" % n, "",
           "After the sweep, %d distinct URLs (/mem/1.html ... /mem/%d.html; the origin answers each with" % (n, n),
           "the fragment, %s bytes, %d as gzip -6, Cache-Control: max-age=3600) asked once each through each cache"
           % (size, gz),
           "(curl, keep-alive, Accept-Encoding: gzip). Store figures are the cache's own, before -> after. shellac",
           "(/metrics): objects `shellac_cache_objects`, store bytes `shellac_cache_bytes` (charged to the budget),",
           "body bytes `shellac_cache_body_bytes` (stored deflate); overhead/object = (added store bytes - added body",
           "bytes) / added objects. Varnish (varnishstat): `MAIN.n_object`, `SMA.s0.g_bytes`; it exports no body",
           "bytes, so its overhead/object = bytes/object - the fragment's gzip size (%d; it stores gzip too)." % gz,
           "RSS = resident memory of the process tree (Varnish: manager + cache process).", "",
           "| cache | objects before -> after | store bytes before -> after | body bytes before -> after | bytes/object "
           "| overhead/object | RSS before -> after (MiB) | RSS growth/object |",
           "|---|---|---|---|---:|---:|---|---:|"]
    rows = read_tsv(run.file("memory.tsv"))   # cache o0 o1 b0 b1 d0 d1 rss0_kb rss1_kb (empty = not exported)
    for r in rows:
        r = r + [""] * (9 - len(r))
        name, o0, o1, b0, b1, d0, d1, r0, r1 = r
        body = "not exported" if d1 == "" else "%s -> %s" % (d0, d1)
        if o1 == "" or b1 == "":
            obj = byt = "not exported"
            bpo = ovh = "n/a"
        else:
            obj, byt = "%s -> %s" % (o0, o1), "%s -> %s" % (b0, b1)
            d = num(o1) - num(o0)
            if d > 0:
                bpo = "%.0f" % ((num(b1) - num(b0)) / d)
                ovh = ("%.0f" % (((num(b1) - num(b0)) - (num(d1) - num(d0))) / d) if d1 != ""
                       else "%.0f (vs %d gzip)" % ((num(b1) - num(b0)) / d - gz, gz))
            else:
                bpo, ovh = "n/a (no objects added)", "n/a"
        out.append("| %s | %s | %s | %s | %s | %s | %.1f -> %.1f | %.0f B |" % (
            name, obj, byt, body, bpo, ovh, num(r0) / 1024, num(r1) / 1024, (num(r1) - num(r0)) * 1024 / n if n else 0))
    k = run.m("memory.shellac", {})
    if rows and k.get("key_after") and k.get("header_after"):
        o = num(rows[0][2]) - num(rows[0][1])
        if o > 0:
            b = num(rows[0][4]) - num(rows[0][3])
            d = num(rows[0][6]) - num(rows[0][5])
            kk = num(k["key_after"]) - num(k["key_before"])
            h = num(k["header_after"]) - num(k["header_before"])
            out += ["", "shellac, per added object: %.0f B key (`shellac_cache_key_bytes`), %.0f B kept headers "
                    "(`shellac_cache_header_bytes`), %.0f B body; **%.1f B beyond key, headers and body** (object header, "
                    "segment table, allocator rounding, index slot, queue and ghost entries; the #5 bound is 64 B)."
                    % (kk / o, h / o, d / o, (b - d - kk - h) / o)]
    if rows and rows[0][2] == "":
        out += ["", "shellac: **this build exports no `shellac_cache_objects` / `shellac_cache_bytes`** at /metrics: only "
                "RSS", "growth is shown (which includes allocator slack and the URL index, not only the store)."]
    return out


def esi_report(run):
    cached = run.m("cached_targets", [])
    slow = run.m("slow_targets", [])
    delay = int(num(run.m("slow_delay_ms", "50")))
    lines = head(run, "esi: pages with 1, 10 and 100 includes, and 10 slow includes", [
        "Cached: frames with 1, 10 and 100 includes of distinct fragments (one diff hunk each, ~460-700 bytes),",
        "everything cacheable, served from the cache: shellac vs Varnish 7 (ESI on), same run.",
        "Slow: a frame (cached) with 10 includes that the origin answers after %d ms each with" % delay,
        "Cache-Control: no-store (bench/wrk/slow_origin.py behind the origin nginx's /slow/), so every page",
        "request fetches its 10 includes: fetched in parallel the page takes ~%d ms, one after the" % delay,
        "other ~%d ms." % (delay * 10)])
    lines += esi_setup_lines(run)
    lines.append("- slow page: levels %s, %ss warm-up + %ss measured per point" % (
        run.m("slow_sweep"), run.opt("warmup"), run.m("slow_duration")))
    lines += ["", "## Summary", ""]
    for n in (1, 10, 100):
        s, v = "shellac-i%d" % n, "varnish-i%d" % n
        lines += [peak_line(run, s, True), peak_line(run, v, True), esi_ratio(run, s, v, 0)]
    for t in slow:
        if run.m("failed." + t):
            lines.append("- %s: **not measured: %s**" % (run.label(t), run.m("failed." + t)))
            continue
        lines.append("- %s: %s" % (run.label(t), "; ".join(
            "c=%d: p50 %s ms, p95 %s ms, p99 %s ms (%d pages)" % (p["conns"], ms(p["p50_us"]), ms(p["p95_us"]),
                                                                  ms(p["p99_us"]), p["requests"])
            for p in run.rows(t))))
    lines.append("- slow page, expected: ~%d ms when the 10 includes are fetched in parallel, ~%d ms one after the other"
                 % (delay, delay * 10))
    for c in run.m("slow_sweep", "").split(","):
        s, v = run.row("shellac-slow", int(c)), run.row("varnish-slow", int(c))
        if s and v and s["p50_us"] > 0 and v["p50_us"] > 0:
            lines.append("- slow page at c=%s: p50 shellac %.1f ms vs varnish %.1f ms: shellac **%.1fx** faster" % (
                c, s["p50_us"] / 1000, v["p50_us"] / 1000, v["p50_us"] / s["p50_us"]))
    lines += remeasured(run) + run_health(run) + [""] + esi_checks(run, cached + slow)
    for n in ("1", "10", "100", "slow"):
        lines.append("")
        if n == "slow":
            lines += ["## 10 slow includes (%d ms each, not cacheable)" % delay, ""]
            lines += table_vs(run, "shellac-slow", ["shellac-slow", "varnish-slow"])
        else:
            lines += ["## %s include%s, from cache" % (n, "" if n == "1" else "s"), ""]
            lines += table_vs(run, "shellac-i" + n, ["shellac-i" + n, "varnish-i" + n])
    lines += ["", "shellac / this = shellac's req/s / this target's req/s at the same level. CPU % as in the other reports",
              "(a cache's row includes the origin nginx, and the slow origin for the slow page).", "",
              "Bytes per response (wrk, headers + body): " + run.bytes_per_response(measured(run, cached + slow)), "",
              "![throughput and p99 vs concurrency](esi.png)"]
    lines += stderr_tail(run)
    return lines, lambda png: plot(run, png, "esi: 1/10/100 includes from cache, shellac vs varnish, %d cores"
                                   % run.nproc(), cached)


def tls_report(run):
    targets = run.m("targets", [])
    secs = run.opt("duration")
    hs = {}
    for t, mode, n, resumed, wall_ns in read_tsv(run.file("handshakes.tsv")):
        if num(n) > 0 and num(wall_ns) > 0:
            hs[(t, mode)] = ("%.0f" % (num(n) / (num(wall_ns) / 1e9)), n, resumed)
        else:
            hs[(t, mode)] = ("failed", "", "")
    lines = head(run, "tls: a cached ESI commit page over HTTPS", [
        "The cached scenario's page (frame + one stored fragment, gzip) over HTTPS with keep-alive, wrk on",
        "loopback: shellac's own TLS listener vs hitch (TLS) in front of Varnish 7 (ESI), same run, same",
        "certificate kind (self-signed P-256, made by the openssl CLI at run time). Then the rate of new TLS",
        "connections with and without session resumption. Target: shellac >= 3x hitch+Varnish on cached pages."])
    lines += esi_setup_lines(run)
    lines += ["- shellac TLS: `listen-tls=127.0.0.1:PORT cert=FILE key=FILE`; hitch 1.7: workers=2, TLSv1.2 + TLSv1.3, "
              "ALPN http/1.1, backend = that Varnish",
              "- new connections: `openssl s_time -connect 127.0.0.1:PORT -new -time %s` (full TLS 1.3 handshakes) and" % secs,
              "  `-reuse -tls1_2` (session resumption; s_time cannot resume TLS 1.3), one connection after the other, no",
              "  request; connections / wall time of the run; the client's CPU is on the same cores", "",
              "## Summary", ""]
    lines += [peak_line(run, t, True) for t in targets]
    lines.append(esi_ratio(run, "shellac", "hitch", 3))
    for t in targets:
        if (t, "new") in hs:
            lines.append("- %s: new connections/s: full handshake (TLS 1.3) %s, with resumption (TLS 1.2) %s" % (
                run.label(t), hs[(t, "new")][0], hs.get((t, "reuse"), ("failed",))[0]))
    lines += remeasured(run) + run_health(run) + [""] + esi_checks(run, targets)
    lines += ["", "## Per level (cached page, keep-alive)", ""] + table_vs(run, "shellac", targets)
    lines += ["", "Bytes per response (wrk, headers + body): " + run.bytes_per_response(measured(run, targets)), "",
              "## New connections (openssl s_time, %s s each)" % secs, "",
              "| target | full handshakes/s (TLS 1.3, -new) | connections | with resumption/s (TLS 1.2, -reuse) | "
              "connections | of them resumed |", "|---|---:|---:|---:|---:|---:|"]
    for t in targets:
        if (t, "new") not in hs:
            lines.append("| %s | n/a | | n/a | | |" % run.label(t))
            continue
        a, b, _ = hs[(t, "new")]
        c, d, e = hs.get((t, "reuse"), ("failed", "", ""))
        lines.append("| %s | %s | %s | %s | %s | %s |" % (run.label(t), a, b, c, d, e))
    lines += ["", "![throughput and p99 vs concurrency](tls.png)"]
    lines += stderr_tail(run)
    return lines, lambda png: plot(run, png, "tls: cached ESI page over HTTPS, shellac vs hitch+varnish, %d cores"
                                   % run.nproc(), targets)


# ---------------------------------------------------------------------------------------------
# render

def kv_lines(text, prefix):
    out = []
    for line in text.splitlines():
        if line.startswith(prefix + " "):
            out.append(dict(f.split("=", 1) for f in line.split()[1:] if "=" in f))
    return out


def render_report(run):
    out = run.text("render.out")
    phases = kv_lines(out, "BENCH_RENDER")
    kinds = kv_lines(out, "BENCH_RENDER_KIND")
    bigfacts = read_tsv(run.file("big-facts.tsv"))   # sha lines files subject
    samples = read_tsv(run.file("render-samples.tsv"))

    def rv(phase, target, field):
        for d in phases:
            if d.get("phase") == phase and d.get("target") == target:
                return d.get(field, "")
        return ""

    def rk(phase, kind, field):
        for d in kinds:
            if d.get("phase") == phase and d.get("kind") == kind:
                return d.get(field, "")
        return ""

    def m(u):
        return ms(u) if u != "" else "n/a"

    def ratio(a, b):
        return "%.0f" % (num(a) / num(b)) if num(a) > 0 and num(b) > 0 else "n/a"

    def target(x, lim):
        return "not measured" if x == "" else met(num(x) <= lim)

    timeout = run.m("render_timeout")
    lines = head(run, "render: commit pages rendered by shellac vs stock cgit, one at a time", [
        "The same sampled commits through shellac's resident renderer (gitfrag, the corpus' cgitrc imported)",
        "and through stock cgit (CGI under lighttpd), same run, one request at a time (concurrency 1). For",
        "each commit, in this order: shellac's commit page, the first request for that commit (cold: the",
        "frame and the diff fragment are rendered); the same commit's page in another fork (frame only: the",
        "fragment is now in the store, shared by every fork); cgit's commit page. Then the same three pages",
        "for every commit with a 10k+ line diff (sample-commits.sh --big). Targets (issue 6, a benchmark, not",
        "a test): frame <= 0.1 ms median, cold page <= 1 ms median, 16k-line diff <= 30 ms."])
    conf = run.opt("shellac_conf")
    cpu = run.m("cpu")
    busy = sum(cpu_of(cpu, f.split(":")[0]) for f in cpu.split(",") if ":" in f)
    lines += ["- client: bench/wrk/render.py (python3 http.client), one keep-alive connection per server, one request",
              "  at a time; latency = request written -> whole answer read (gzip on the wire%s); it includes the" % (
                  ": no, --identity" if run.opt("identity") == "1" else ""),
              "  client's own Python overhead (tens of µs) and loopback. Each answer is then checked outside the timing:",
              "  200, and its text (gunzipped, entities decoded) holds the commit's subject and a `diff --git` line",
              "- render time as shellac counts it: `shellac_renders_total` / `shellac_render_seconds_total` by kind, read from",
              "  its /metrics before and after every shellac request (outside the timing): the render work alone, without",
              "  HTTP, queueing, ESI assembly, store or loopback",
              "- shellac: threads=2, access-log=off, admin-listen=127.0.0.1:PORT, backend=the lighttpd below (pages it does",
              "  not render), %s%s, everything else default (render-threads = cores," % (
                  run.m("render_lines"), ", " + conf if conf else ""),
              "  cache-size 256M); frame-only pages go to the first %s forks in turn, each opened before the timed" %
              run.m("frame_forks"),
              "  requests (its HEAD's page)",
              "- cgit: /usr/lib/cgit/cgit.cgi as CGI under lighttpd (one process per request), the corpus' cgitrc "
              "(cache-size=0)",
              "- CPU during the timed requests, %% of one core: %s (wrk = the client, render.py), %d%% in all" % (
                  cpu.replace(",", ", "), busy), "", "## Summary", ""]
    c50, c90, f50, f90 = rv("cold", "shellac", "p50_us"), rv("cold", "shellac", "p90_us"), rv("frame", "shellac",
                                                                                              "p50_us"), rv(
        "frame", "shellac", "p90_us")
    g50, g90 = rv("cgit", "cgit", "p50_us"), rv("cgit", "cgit", "p90_us")
    lines.append("- cold commit page (frame + fragment), %s commits: shellac median **%s ms**, p90 %s ms, p99 %s ms; cgit "
                 "median **%s ms**, p90 %s ms, p99 %s ms: cgit / shellac **%sx** at the median, %sx at p90. Target <= 1 ms "
                 "median: %s" % (rv("cold", "shellac", "n"), m(c50), m(c90), m(rv("cold", "shellac", "p99_us")), m(g50),
                                 m(g90), m(rv("cgit", "cgit", "p99_us")), ratio(g50, c50), ratio(g90, c90),
                                 target(c50, 1000)))
    lines.append("- frame only (the page again in another fork, fragment stored): shellac median **%s ms**, p90 %s ms, "
                 "p99 %s ms; cgit / shellac %sx at the median. Target <= 0.1 ms median: %s (client-side latency)" % (
                     m(f50), m(f90), m(rv("frame", "shellac", "p99_us")), ratio(g50, f50), target(f50, 100)))
    fc50 = rk("frame", "commit", "p50_us")
    lines.append("- render time alone (shellac's count): frame %s ms median, %s ms p90 (target <= 0.1 ms: %s); cold page: "
                 "frame %s ms + diff fragment %s ms median (p90 %s + %s ms); so loopback + HTTP + ESI + store + client "
                 "cost ~%.2f ms a page (frame-only median latency - its median render time); the stored fragment alone, "
                 "no frame, no ESI (its esi-diff URL): median %s ms, p90 %s ms: the floor of this client, loopback and "
                 "shellac's HTTP path" % (
                     m(fc50), m(rk("frame", "commit", "p90_us")), target(fc50, 100), m(rk("cold", "commit", "p50_us")),
                     m(rk("cold", "diff-fragment", "p50_us")), m(rk("cold", "commit", "p90_us")),
                     m(rk("cold", "diff-fragment", "p90_us")), (num(f50) - num(fc50)) / 1000,
                     m(rv("hit", "shellac", "p50_us")), m(rv("hit", "shellac", "p90_us"))))
    lines.append("- diff fragments rendered during the frame-only pages: %s (0 = every fork's page used the stored "
                 "fragment); during the cold pages: %s of %s" % (
                     rk("frame", "diff-fragment", "renders") or "0", rk("cold", "diff-fragment", "renders") or "0",
                     rv("cold", "shellac", "n")))
    if bigfacts:
        lines_of = {f[0]: int(num(f[1])) for f in bigfacts}
        n = ok = 0
        for s in samples:
            if s[0] == "bigcold":
                mm = re.search(r"id=([0-9a-f]+)", s[2])
                if mm and lines_of.get(mm.group(1), 0) <= 16500:
                    n += 1
                    if num(s[4]) <= 30000:
                        ok += 1
        t = ("%d of the %d with <= 16.5k lines within 30 ms" % (ok, n)) if n else "no commit of <= 16.5k lines"
        lines.append("- 10k+ line diffs (%d commits, %s changed lines), cold commit page: shellac median **%s ms**, max %s "
                     "ms; cgit median **%s ms**, max %s ms: cgit / shellac %sx at the median. Target (16k-line diff <= 30 "
                     "ms): %s (per commit below)" % (
                         len(bigfacts), ", ".join(f[1] for f in bigfacts), m(rv("bigcold", "shellac", "p50_us")),
                         m(rv("bigcold", "shellac", "max_us")), m(rv("bigcgit", "cgit", "p50_us")),
                         m(rv("bigcgit", "cgit", "max_us")),
                         ratio(rv("bigcgit", "cgit", "p50_us"), rv("bigcold", "shellac", "p50_us")), t))
    else:
        lines.append("- 10k+ line diffs: **none in this repository** (sample-commits.sh --big listed no commit): not measured")
    if run.m("big_note"):
        lines.append("- 10k+ line diffs: " + run.m("big_note"))
    if int(num(run.m("overlap"))) > 0:
        lines.append("- %s sampled commit(s) are also 10k+ line diffs: measured with those only (a page is cold once)"
                     % run.m("overlap"))
    bad = sum(int(num(d.get("bad"))) for d in phases)
    total = sum(int(num(d.get("n"))) for d in phases)
    eg = "".join(("; e.g. " + line[len("BENCH_RENDER_BAD "):]) for line in
                 [x for x in out.splitlines() if x.startswith("BENCH_RENDER_BAD ")][:3])
    lines.append("- failed checks: %d of %d pages%s; renders refused (queue full): %s" % (
        bad, total, eg, run.m("rejected") or "unknown"))
    if run.m("shellac_died"):
        lines.append("- **%s**" % run.m("shellac_died"))
    if run.m("remeasured"):
        lines.append("- measured again because other processes disturbed it: " + run.m("remeasured"))
    lines += run_health(run)
    names = {"open": "fork opened (untimed)", "cold": "cold commit page", "frame": "frame only (another fork)",
             "cgit": "commit page", "hit": "stored fragment alone (esi-diff URL)", "bigcold": "10k+ diff, cold",
             "bigframe": "10k+ diff, frame only", "bigcgit": "10k+ diff"}
    lines += ["", "## Latency per phase (client side)", "",
              "| phase | server | pages | failed checks | p50 ms | p90 ms | p99 ms | max ms | mean ms | mean bytes (wire) |",
              "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for d in phases:
        lines.append("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            names.get(d["phase"], ""), d["target"], d["n"], d["bad"], ms3(d["p50_us"]), ms3(d["p90_us"]),
            ms3(d["p99_us"]), ms3(d["max_us"]), ms3(d["mean_us"]), d["bytes"]))
    lines += ["", "## Render time (shellac's own count, per request that rendered it)", "",
              "| phase | kind | renders | p50 ms | p90 ms | max ms | total s |", "|---|---|---:|---:|---:|---:|---:|"]
    for d in kinds:
        lines.append("| %s | %s | %s | %s | %s | %s | %.3f |" % (
            d["phase"], d["kind"], d["renders"], ms3(d["p50_us"]), ms3(d["p90_us"]), ms3(d["max_us"]),
            num(d["render_us"]) / 1e6))
    if bigfacts:
        lines += ["", "## 10k+ line diffs, per commit", "",
                  "changed lines = added + deleted against the first parent (git --numstat -M). fragment render = shellac's",
                  "diff-fragment render time for that page (its /metrics); frame-only = the page in another fork afterwards;",
                  "no complete answer = the answer was not complete after %s s (render.py's timeout): left out of the "
                  "latencies." % timeout, "",
                  "| commit | subject | changed lines | files | shellac cold ms | of it fragment render ms | shellac frame "
                  "only ms | cgit ms | cgit / shellac cold | wire bytes shellac / cgit |",
                  "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
        by = {}
        for s in samples:   # phase target path status us bytes ... renders
            mm = re.search(r"id=([0-9a-f]+)", s[2])
            if mm:
                by[(s[0], mm.group(1))] = s

        def t(s):
            return "**no complete answer**" if s is None or s[3] == "0" else ms(s[4])

        def frag(s):
            if s is None or len(s) < 8:
                return "-"
            for part in s[7].split(","):
                p = part.split(":")
                if p[0] == "diff-fragment" and len(p) > 2:
                    return ms(p[2])
            return "-"

        for f in bigfacts:
            sha = f[0]
            cold, frame, cg = by.get(("bigcold", sha)), by.get(("bigframe", sha)), by.get(("bigcgit", sha))
            r = ("%.1fx" % (num(cg[4]) / num(cold[4])) if cold and cg and cold[3] != "0" and cg[3] != "0"
                 and num(cold[4]) > 0 else "-")
            lines.append("| %s | %s | %d | %d | %s | %s | %s | %s | %s | %d / %d |" % (
                sha[:12], f[3] if len(f) > 3 else "", int(num(f[1])), int(num(f[2])), t(cold), frag(cold), t(frame),
                t(cg), r, int(num(cold[5])) if cold else 0, int(num(cg[5])) if cg else 0))
    lines += stderr_tail(run)
    return lines, None


# ---------------------------------------------------------------------------------------------
# flood

def facts(run, name):
    out = {}
    for line in run.text(name).splitlines():
        k, _, v = line.partition("=")
        out[k] = v
    return out


def delta(f, key):
    """facts KEY=BEFORE AFTER -> AFTER - BEFORE (or None)"""
    v = f.get(key, "").split()
    return num(v[1]) - num(v[0]) if len(v) == 2 else None


def person_fields(line):
    d = dict(x.split("=", 1) for x in line.split()[1:] if "=" in x)
    return d


def flood_row(run, t, phase):
    base = "flood-%s-%s" % (t, phase)
    person = next((x for x in run.text(base + ".person").splitlines() if x.startswith("PERSON")),
                  "PERSON pages=0 ok=0 statuses=- p50_ms=- p99_ms=- max_ms=-")
    p = person_fields(person)
    crawl = cst = c200 = renders = refused = "-"
    wrk = run.text(base + ".wrk")
    if os.path.exists(run.file(base + ".wrk")):
        bench = next((x for x in wrk.splitlines() if x.startswith("BENCH ")), None)
        if bench is None:
            crawl = "no report: wrk, starved of CPU, had not ended 60 s past -d and was killed"
        else:
            b = person_fields(bench)
            st = next((x[len("BENCH_STATUS "):] for x in wrk.splitlines() if x.startswith("BENCH_STATUS ")), "")
            n200 = next((int(x.split("=")[1]) for x in st.split() if x.startswith("200=")), 0)
            crawl = "%s (%s timeouts, %s+%s connect+read errors)" % (b.get("rps", "?"), b.get("err_timeout"),
                                                                     b.get("err_connect"), b.get("err_read"))
            d = num(b.get("duration_us"))
            c200 = "%.1f" % (n200 / (d / 1e6)) if d > 0 else "-"
            cst = st or "-"
    f = facts(run, base + ".facts")
    if "fragments" in f:
        secs = num(run.m("flood_secs") if phase == "flood" else run.m("person_secs"))
        renders = "%.1f (%d frames)" % (delta(f, "fragments") / secs, delta(f, "frames"))
        refused = "full %d, timeout %d, includes with a notice %d" % (
            delta(f, "refused_full"), delta(f, "refused_timeout"), delta(f, "includes_busy"))
    return "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s / %s |" % (
        run.label(t), phase, p.get("pages"), p.get("statuses", "-").replace(",", " "), p.get("p50_ms"), p.get("p99_ms"),
        p.get("max_ms"), crawl, cst, c200, renders, refused, f.get("load_before", ""), f.get("load_after", ""))


def flood_report(run):
    conns = run.m("flood_conns")
    fs, ps = int(num(run.m("flood_secs"))), run.m("person_secs")
    conf = run.opt("shellac_conf")
    sp = next((x for x in run.text("flood-shellac-flood.person").splitlines() if x.startswith("PERSON")), "")
    lines = head(run, "flood: a crawler flood and one person", [
        "%s crawler connections (wrk from 127.0.0.1) ask for cold commit pages of the base repository while" % conns,
        "one person (bench/wrk/person.py, bound to 127.0.0.3) opens a new cold commit page every 200 ms; the same person",
        "alone first (quiet). Each target in turn: shellac rendering, cgit direct, Varnish -> cgit."])
    lines += ["- crawler: wrk -t2 -c%s -d%ds --timeout 60s (ended 60 s past -d if it is starved of CPU: then it has no "
              "report), bench/wrk/flood.lua (crawler.lua's walk + statuses), %s URLs `/%s/commit/?id=SHA` in a seeded "
              "order%s" % (conns, fs, run.m("crawler_urls"), run.m("base_repo"),
                           "" if run.opt("identity") == "1" else ", Accept-Encoding: gzip"),
              "- person: one page at a time on a new connection, the next 200 ms after the previous started (or when it "
              "ended); %ss alone, then from 2 s into the flood for %d s; 400 URLs per phase, disjoint from the crawler's"
              % (ps, fs - 3),
              "- shellac: threads=2, %s%s, everything else default (render-threads = cores, render-queue=1024, "
              "render-queue-timeout=30s); backend = that lighttpd" % (run.m("render_lines"), ", " + conf if conf else ""),
              "- cgit: cgit.cgi as CGI under lighttpd (one process per request); Varnish 7 in front of the same "
              "lighttpd, default VCL",
              "- the machine is shared with other work (the load columns are the 1-minute load average before and after "
              "each phase)", "", "## Summary", "",
              "- the person under the flood, shellac: " + (sp or "not measured")]
    f = facts(run, "flood-shellac-flood.facts")
    fr = delta(f, "fragments") or 0
    p = person_fields(sp) if sp else {}
    pages, ok = int(num(p.get("pages"))), int(num(p.get("ok")))
    p99 = p.get("p99_ms", "")
    full = delta(f, "refused_full") or 0
    lines.append("- targets (issue 15): person 100%% 200: %s (%d of %d); person p99 <= 50 ms: %s (%s ms); crawler's "
                 "renders/s >= 230 (git/git): %.1f/s; no 503 before render-queue-timeout: %s (%d refused for a full queue)"
                 % (met(pages > 0 and pages == ok), ok, pages, met(p99 != "" and num(p99) <= 50), p99, fr / fs,
                    met(full == 0), full))
    targets = run.m("targets", [])
    if "baseline" in targets:
        bf = delta(facts(run, "flood-baseline-flood.facts"), "fragments") or 0
        bp = next((x for x in run.text("flood-baseline-flood.person").splitlines() if x.startswith("PERSON")), "-")
        lines.append("- against the baseline binary in the same run (%s): diff renders under the flood %d vs %d (%s); the "
                     "baseline's person: %s" % (run.label("baseline"), fr, bf, "%.2fx" % (fr / bf) if bf > 0 else "-", bp))
    lines += ["", "## Results", "",
              "| target | phase | person pages | person statuses | person p50 ms | p99 ms | max ms | crawler req/s | crawler "
              "statuses | crawler 200/s | shellac diff renders/s | shellac refusals | load |",
              "|---|---|---:|---|---:|---:|---:|---|---|---:|---|---|---|"]
    for t in targets:
        lines += [flood_row(run, t, "quiet"), flood_row(run, t, "flood")]
    lines += ["", "shellac's render queue at the end (its /metrics):", "", "```"]
    lines += run.text("flood-metrics.txt").rstrip("\n").split("\n") + ["```"]
    if run.m("shellac_died"):
        lines += ["", "**%s**" % run.m("shellac_died")]
    return lines, None


# ---------------------------------------------------------------------------------------------
# all: every scenario's exit status and summary (from the reports next to it)

def all_report(run, out_dir):
    status = read_tsv(run.file("status.tsv"))   # name rc seconds
    total = int(num(run.m("run_seconds")))
    lines = ["# bench/run.sh all", "", "- command: `%s`" % run.m("command"),
             "- date: %s; total %d min %d s" % (run.m("date"), total // 60, total % 60),
             "- machine: " + run.m("machine"), "- corpus: " + run.m("corpus")]
    if run.m("wait_quiet"):
        lines.append("- wait-quiet budget: %ss, left at the end: %ss" % (run.m("wait_quiet"), run.m("wait_quiet_left")))
    lines += ["", "| scenario | exit status | time (s) | report |", "|---|---:|---:|---|"]
    for name, rc, secs in status:
        lines.append("| %s | %s | %s | [%s.md](%s.md) |" % (name, rc, secs, name, name))
    for name, _rc, _secs in status:
        p = os.path.join(out_dir, name + ".md")
        if not os.path.exists(p):
            continue
        with open(p, encoding="utf-8") as f:
            md = f.read().split("\n")
        lines += ["", "## " + name, ""]
        if "## Summary" in md:
            i = md.index("## Summary") + 2
            j = next((k for k in range(i, len(md)) if md[k].startswith("## ")), len(md))
            lines += md[i:j - 1] if j < len(md) else md[i:j]
        else:
            lines.append(next((x for x in md if "skipped" in x), "(no summary: see %s.md)" % name))
    return lines, None


def cluster_kv(text):
    """"a=1 b=2" -> {"a": 1.0, "b": 2.0}"""
    out = {}
    for kv in text.split():
        if "=" in kv:
            k, v = kv.split("=", 1)
            out[k] = num(v)
    return out


def cluster_report(run):
    rows = {r[0]: r for r in read_tsv(run.file("cluster.tsv"))}
    # phase requests errors statuses duration_us p50_us p99_us unique renders note
    cm = run.m("cluster", {})
    lines = head(run, "cluster: HAProxy in front of 3 shellac nodes sharing fragments through memcached", [
        "Issue 17, on loopback. cluster: conf/haproxy.cfg.example (consistent hashing on id=, else the path;",
        "/health checks; retries with redispatch) in front of 3 shellac nodes with l2= on 2 memcached servers and",
        "store-snapshot=. independent: the same 3 nodes with no shared tier behind HAProxy round-robin (what a",
        "cache per node without routing gives). varnish: 3 Varnish 7.1 nodes behind HAProxy round-robin, each in",
        "front of cgit (one lighttpd + Debian's cgit 1.2.3, the corpus' cgitrc). A crawler",
        "(bench/wrk/cluster_crawl.py, %s keep-alive connections) walks %s unique commits once, each commit page asked"
        % (cm.get("conns", "?"), cm.get("unique", "?")),
        "in 3 repositories of the fork farm (base and two forks) in shuffled order; renders = diff fragments",
        "rendered by the nodes (shellac_renders_total{kind=diff-fragment}); for Varnish the commit pages cgit",
        "served (lighttpd's access log), each of which renders the commit's diff."])
    lines += ["", "## Summary", ""]

    def rate(r):
        return num(r[1]) / (num(r[4]) / 1e6) if num(r[4]) else 0

    def per(r):
        return num(r[8]) / num(r[7]) if num(r[7]) else 0
    c, ind, k, rs, v = (rows.get(n) for n in ("cluster", "independent", "kill", "restart", "varnish"))
    if c:
        line = "- renders per unique fragment: cluster **%.2f** (target 1.00)" % per(c)
        if ind:
            line += " vs independent shellac nodes round-robin **%.2f**" % per(ind)
        if v:
            line += " vs Varnish nodes round-robin **%.2f** (%s commit pages rendered by cgit for %s unique pages)" % (
                per(v), v[8], cm.get("unique_pages", v[1]))
        lines.append(line + "; 3.00 = once per view (3 repositories a commit)")
        peers = [(n, r) for n, r in (("independent", ind), ("Varnish", v)) if r]
        if peers:
            lines.append("- pages/s: cluster %.0f, %s; p50/p99 cluster %s/%s ms, %s" % (
                rate(c), ", ".join("%s %.0f (cluster %.2fx)" % (n, rate(r), rate(c) / rate(r) if rate(r) else 0)
                                   for n, r in peers),
                ms(c[5]), ms(c[6]), ", ".join("%s %s/%s ms" % (n, ms(r[5]), ms(r[6])) for n, r in peers)))
    if k:
        lines.append("- a node killed mid-walk: **%s failed requests** of %s at the client (target 0); the survivors "
                     "rendered %s fragments for %s unique commits during the whole walk (%.2f per fragment)"
                     % (k[2], k[1], k[8], k[7], per(k)))
    kc = cluster_kv(cm.get("kill_check", ""))
    if kc:
        lines.append("- after the kill (exact, from the nodes' l2-trace= files): the survivors looked up %d fragments in "
                     "memcached: %d hits (%d of them written by the killed node), %d renders: **%d of fragments "
                     "memcached already held** (target 0), %d written by another node while the lookup was under way, "
                     "%d never written before (%d of them started by the killed node, which died before writing them)"
                     % (kc.get("lookups", 0), kc.get("hits", 0), kc.get("hits_of_killed", 0), kc.get("renders", 0),
                        kc.get("already", 0), kc.get("racing", 0), kc.get("never", 0), kc.get("never_lost", 0)))
    if rs:
        lines.append("- restart from the snapshot: %s; %s fragments rendered for its first %s pages" % (
            rs[9].split(": ", 1)[-1], rs[8], rs[1]))
    lines += ["", "## Per phase", "",
              "| phase | requests | errors | statuses | seconds | pages/s | p50 ms | p99 ms | unique fragments | renders "
              "| per fragment | note |", "|---|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---|"]
    for name in ("cluster", "kill", "restart", "independent", "varnish"):
        r = rows.get(name)
        if r:
            lines.append("| %s | %s | %s | %s | %.1f | %.0f | %s | %s | %s | %s | %.2f | %s |" % (
                name, r[1], r[2], r[3], num(r[4]) / 1e6, rate(r), ms(r[5]), ms(r[6]), r[7], r[8], per(r), r[9]))
    for key in ("snapshot_written", "snapshot_read"):
        val = cm.get(key, "")
        if val:
            lines.append("- %s" % val)
    if kc:
        lines += ["", "## The kill, exactly", "",
                  "Each node wrote an l2-trace= file (a line per shared-tier lookup and write, with the time; see",
                  "shellac.conf(5)); bench/wrk/cluster_trace.py reads them with the time the crawler sent its SIGKILL.",
                  "Every lookup a survivor made after the kill that was not a hit is a render; it is classed by the",
                  "first write of that fragment memcached acknowledged (to any node): before the lookup was asked",
                  "(already held: target 0), while it was under way (racing), or not before its answer (never).", "",
                  "| | count |", "|---|---:|"]
        for key, label in (("lookups", "survivors' lookups after the kill"), ("hits", "... hits"),
                           ("hits_of_killed", "... hits of fragments the killed node had written"),
                           ("renders", "... renders (miss, unavailable or corrupt)"),
                           ("renders_miss", "... of which memcached answered 'not found'"),
                           ("renders_unavailable", "... of which the tier was unavailable (timeout, error, queue full)"),
                           ("renders_corrupt", "... of which the value was corrupt"),
                           ("already", "**renders of fragments memcached already held** (target 0)"),
                           ("racing", "renders of fragments written while the lookup was under way"),
                           ("never", "renders of fragments never written before"),
                           ("never_lost", "... of which the killed node had started and never written"),
                           ("walk_renders", "survivors' renders over the whole walk, from the traces (metrics: %s)"
                            % (k[8] if k else "?")),
                           ("killed_puts", "fragments the killed node wrote before it died"),
                           ("puts_ok", "fragments written (acknowledged) over the run"),
                           ("puts_listed", "... listed by memcached after the walk (lru_crawler metadump)")):
            lines.append("| %s | %d |" % (label, kc.get(key, 0)))
        details = [x for x in run.text("kill-check-details.txt").split("\n") if x]
        if details:
            lines += ["", "Renders of fragments that were, or were being, written (first %d of %d):" % (
                min(10, len(details)), len(details)), ""]
            lines += ["- %s" % x for x in details[:10]]
    lines += stderr_tail(run)
    return lines, None


def pages_report(run):
    """points.tsv rows 'KIND:TARGET'; kinds.tsv (KIND LINES WHAT); crawl.tsv (KIND TARGET REPEATS URLS
    RENDERS-BEFORE RENDERS-AFTER [ENDED WALKED-US])."""
    kinds = [r for r in read_tsv(run.file("kinds.tsv"))]
    crawl = {(r[0], r[1]): r for r in read_tsv(run.file("crawl.tsv"))}
    targets = run.m("targets", []) or ["cgit", "shellac", "varnish"]
    conns = run.m("conns", "?")
    lines = head(run, "pages: every page kind a crawler walks, each URL once", [
        "Issue 13. Per page kind, a list of unique URLs (bench/wrk/pages_urls.py; commit-based kinds each on commits",
        "of their own, each commit through up to 3 repositories of the fork farm, drawn at random) walked by wrk",
        "(bench/wrk/crawler.lua, -c %s, %s s a point%s, no warm-up), against cgit direct, shellac rendering (the" % (
            conns, run.opt("duration") if run.opt("duration") != "5" else "3", floor_text(run)),
        "resident renderer with the corpus' cgitrc; its store empty at the start; pages it does not render go to",
        "the same cgit) and Varnish -> cgit. Then the kinds mixed: the last quarter of every list, one URL of each",
        "kind in turn (pages no kind's run asked for). Target (issue 13): each kind >= 20x cgit's pages/s."]
        + (["Equal time: shellac and Varnish walk each list at least as long as cgit direct did (its point's",
            "seconds, in the table): shellac's store fills as it goes, so a point of its own 100 pages would",
            "measure the store filling against cgit's steady rate."] if run.m("equal_time") else []))
    lines += ["- load: " + "; ".join("%s: %s URLs (`%s`)" % (r[0], r[1], r[2]) for r in kinds)]
    lines += run_health(run)
    lines += ["", "## Per page kind", "",
              "| kind | shellac pages/s | p50 ms | p99 ms | cgit pages/s | p50 ms | p99 ms | varnish pages/s | p99 ms "
              "| shellac / cgit | errors (shellac, cgit, varnish) | seconds (shellac, cgit, varnish) "
              "| shellac renders (kind: count, mean ms) | list |",
              "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---|---|---|"]
    met, missed = [], []
    for kind in [r[0] for r in kinds] + ["mix"]:
        p = {t: next((x for x in run.points if x["target"] == "%s:%s" % (kind, t)), None) for t in targets}
        if not p.get("shellac"):
            continue
        s, c, v = p.get("shellac"), p.get("cgit"), p.get("varnish")
        ratio = s["rps"] / c["rps"] if c and c["rps"] > 0 else 0
        (met if ratio >= 20 else missed).append("%s %.1fx" % (kind, ratio))
        r = crawl.get((kind, "shellac"))
        renders = "-"
        if r and len(r) >= 6:
            b, a = parse_counts(r[4]), parse_counts(r[5])
            parts = []
            for k in sorted(a):
                n = a[k][0] - b.get(k, (0, 0))[0]
                if n > 0:
                    parts.append("%s: %d, %.2f" % (k, n, (a[k][1] - b.get(k, (0, 0))[1]) / n * 1000))
            renders = "; ".join(parts) or "none"
        walks = []
        for t in targets:
            row = crawl.get((kind, t))
            if not row:
                continue
            if row[2] not in ("0", ""):
                walks.append("%s %s repeats" % (t, row[2]))
            if len(row) >= 8 and row[6] not in ("", "0"):
                walked = int(row[7]) if row[7] else 0
                walks.append("%s %s URLs in %.2f s" % (t, row[3], walked / 1e6) if walked else "%s ran out" % t)
        reps = ", ".join(walks)
        errs = ", ".join(str(p[t]["errors"]) if p.get(t) else "-" for t in ("shellac", "cgit", "varnish"))
        secs = ", ".join("%.2f" % num(p[t]["secs"]) if p.get(t) else "-" for t in ("shellac", "cgit", "varnish"))

        def f(x, key):
            return "-" if not x else ("%.0f" % x[key] if key == "rps" else ms(x[key]))
        lines.append("| %s | %s | %s | %s | %s | %s | %s | %s | %s | **%.1fx** | %s | %s | %s | %s |" % (
            "**mix**" if kind == "mix" else kind, f(s, "rps"), f(s, "p50_us"), f(s, "p99_us"), f(c, "rps"),
            f(c, "p50_us"), f(c, "p99_us"), f(v, "rps"), f(v, "p99_us"), ratio, errs, secs, renders,
            reps or "-"))
    lines += ["", "## Summary", ""]
    lines.append("- at or above 20x cgit: %s" % (", ".join(met) or "none"))
    lines.append("- **below 20x cgit**: %s" % (", ".join(missed) or "none"))
    lines.append("- list: a target that walked its whole list before the point's time was up stopped there: its "
                 "pages/s are over the URLs it walked and the time that took (TARGET N URLs in S s); no URL is asked "
                 "twice (summary, about, atom, stats and clone have one URL per repository and branch, so their "
                 "points are short)")
    lines.append("- shellac renders: what its /metrics counted during the point (a commit page is a frame "
                 "(commit) and, unless stored, a diff-fragment; a file view a tree frame and a blob part)")
    lines += stderr_tail(run)
    return lines, None


def history_report(run):
    """history.out (BENCH_HISTORY kind= target= ...) and history-samples.tsv (KIND SHA PATH URL, then the
    us of git-nograph, git, cgit, shellac and shellac's render us)."""
    rows = kv_lines(run.text("history.out"), "BENCH_HISTORY")
    # a failed check's reason has spaces: it is the rest of the line after " why="
    bads = [dict(kv_lines(l.split(" why=", 1)[0], "BENCH_HISTORY_BAD")[0], why=l.split(" why=", 1)[1])
            for l in run.text("history.out").splitlines() if l.startswith("BENCH_HISTORY_BAD ") and " why=" in l]
    samples = read_tsv(run.file("history-samples.tsv"))
    graph = {"changed-paths": "a commit-graph with changed-path Bloom filters (`git commit-graph write "
                              "--reachable --changed-paths`)",
             "plain": "a commit-graph without changed-path filters",
             "none": "no commit-graph"}.get(run.m("graph"), run.m("graph"))
    lines = head(run, "history: blame and path-log pages, one at a time, against git's own command", [
        "Issue 14's history table. Blame and path-limited log pages at commits a crawler asks for",
        "(bench/wrk/pages_urls.py's blame and log-path lists: a file the commit touched, at that commit; the",
        "first %s distinct pages of each), one request at a time (bench/wrk/history.py), each page measured" % run.m(
            "pages"),
        "four ways in turn: git's own command without the commit-graph (`git -c core.commitGraph=false`),",
        "the same command with the repository's graph, cgit 1.2.3 (CGI under lighttpd) and shellac (its",
        "resident renderer; store empty at the start). git's commands: `git blame --porcelain SHA -- PATH`",
        "and `git log -N --format=%H SHA -- PATH` (N: the rows a path log page shows, the cgitrc's",
        "max-commit-count: %s), timed from start to" % (run.m("log_rows") or "50, cgit's default"),
        "exit; a page from request to the whole answer (gzip). Target (issue 14): each page no slower",
        "through shellac than git's own command with a commit-graph. log-follow: the log-path pages",
        "with follow=1 (the cgitrc gets `enable-follow-links=1`), against `git log --follow`; cgit's",
        "times are given, not its rows, which are not git's once it has followed a rename."])
    lines.append("- repository graph: the base has %s" % graph)
    if run.m("log_counts").strip():
        lines.append("- the cgitrc sets `%s`: cgit's and shellac's path logs count every row's changed files and lines "
                     "(a diff per row), which git's command does not" % run.m("log_counts").strip())
    lines += run_health(run)

    def cell(kind, target, key):
        for d in rows:
            if d.get("kind") == kind and d.get("target") == target:
                return d.get(key, "")
        return ""
    names = {"git-nograph": "git, no graph", "git": "git, graph", "cgit": "cgit", "shellac": "shellac"}
    lines += ["", "## Per kind (ms)", "",
              "| kind | measured by | pages | p50 | p90 | p99 | max | mean | sum | failed |",
              "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    kinds = list(dict.fromkeys(d.get("kind") for d in rows))
    for kind in kinds:
        for t in ("git-nograph", "git", "cgit", "shellac"):
            lines.append("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
                kind, names[t], cell(kind, t, "n"), ms(num(cell(kind, t, "p50_us"))), ms(num(cell(kind, t, "p90_us"))),
                ms(num(cell(kind, t, "p99_us"))), ms(num(cell(kind, t, "max_us"))), ms(num(cell(kind, t, "mean_us"))),
                ms(num(cell(kind, t, "sum_us"))), cell(kind, t, "bad")))
    lines += ["", "## Summary", ""]
    for kind in kinds:
        pairs = [(num(r[7]), num(r[5]), r[3]) for r in samples if r[0] == kind and len(r) >= 8 and r[5] and r[7]]
        slower = sorted(((s / g, url) for s, g, url in pairs if s > g), reverse=True)
        s_sum, g_sum, c_sum = (num(cell(kind, t, "sum_us")) for t in ("shellac", "git", "cgit"))
        lines.append("- %s: shellac %s (sum) vs git with the graph %s (%.2fx) and cgit %s (%.1fx faster than cgit); "
                     "%d of %d pages no slower than git with the graph: %s" % (
                         kind, ms(s_sum), ms(g_sum), s_sum / g_sum if g_sum else 0, ms(c_sum),
                         c_sum / s_sum if s_sum else 0, len(pairs) - len(slower), len(pairs),
                         met(not slower and len(pairs) > 0)))
        for r, url in slower[:5]:
            lines.append("  - slower than git: `%s` (%.2fx git's time)" % (url, r))
    for d in bads:
        lines.append("- **failed check** (%s, %s): `%s`: %s" % (d.get("kind"), d.get("target"), d.get("url"),
                                                                 d.get("why")))
    lines += ["", "Per page (ms; `history-samples.tsv` in the raw folder):", "",
              "| kind | path | commit | git, no graph | git, graph | cgit | shellac | shellac render |",
              "|---|---|---|---:|---:|---:|---:|---:|"]
    for r in samples:
        if len(r) < 8:
            continue
        lines.append("| %s | `%s` | %s | %s | %s | %s | %s | %s |" % (
            r[0], r[2], r[1][:12], *(ms(num(x)) if x else "failed" for x in r[4:8]),
            ms(num(r[8])) if len(r) > 8 and r[8] else "-"))
    lines += stderr_tail(run)
    return lines, None


REPORTS = {"cluster": cluster_report, "crawler": forge_report, "cold": forge_report, "crawler-mix": forge_report, "hot": forge_report, "fork-spread": forge_report,
           "burst": burst_report, "passthrough": passthrough_report, "cached": cached_report, "esi": esi_report,
           "tls": tls_report, "render": render_report, "flood": flood_report, "pages": pages_report,
           "history": history_report}


def make_report(raw, out_dir, with_plot=True):
    run = Run(raw)
    name = run.m("report") or run.m("scenario")
    scenario = run.m("scenario")
    if scenario == "all":
        lines, plotter = all_report(run, out_dir)
    elif scenario in REPORTS:
        lines, plotter = REPORTS[scenario](run)
    else:
        raise SystemExit("report.py: %s: unknown scenario %r" % (raw, scenario))
    os.makedirs(out_dir, exist_ok=True)
    md = os.path.join(out_dir, name + ".md")
    with open(md, "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
    png = os.path.join(out_dir, name + ".png")
    if plotter and with_plot:
        plotter(png)
    elif not plotter and os.path.exists(png):
        os.remove(png)
    return md


def main():
    ap = argparse.ArgumentParser(description="Makes a benchmark report (markdown + PNG) from a run's raw results.")
    ap.add_argument("raw", help="the run's raw folder (meta.json, points.tsv, ...)")
    ap.add_argument("--out", help="where NAME.md and NAME.png go (default: the folder above RAW's raw/)")
    ap.add_argument("--no-plot", action="store_true", help="markdown only")
    ap.add_argument("--finish-meta", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args()
    raw = os.path.abspath(a.raw)
    if a.finish_meta:
        finish_meta(raw)
        return
    out = a.out or os.path.dirname(os.path.dirname(raw))
    print(make_report(raw, out, not a.no_plot))


if __name__ == "__main__":
    main()
