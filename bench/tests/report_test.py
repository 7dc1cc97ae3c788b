#!/usr/bin/env python3
"""bench/report.py from a small raw fixture: the figures it computes (ratios, percentiles, knee) and
what every report must name (command, date, machine). Run by `meson test bench-report`."""

import json
import os
import shutil
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import report  # noqa: E402

META = {
    "scenario": "cached", "report": "cached", "command": "bench/run.sh cached --sweep 1,2,4,8",
    "note": "the machine was shared", "date": "2026-12-01 10:00:00 UTC", "run_seconds": "42", "nproc": "2",
    "machine": "nproc=2, CPU: Test CPU (x86_64), memory: 1.0 GiB", "load_at_start": "0.10 0.20 0.30",
    "versions": {"peers": "varnish-7.1.1; nginx/1.22.1", "wrk": "wrk 4.1.0", "shellac": "shellac 0.1.0",
                 "shellac_rev": "abc1234"},
    "corpus": "synthetic pages", "options": {"duration": "5", "warmup": "1", "wrk_timeout": "5s", "identity": "0"},
    "shellac_lines": "cache=on esi=surrogate", "targets": ["shellac", "varnish", "nginx"],
    "labels": {"shellac": "shellac (ESI)", "varnish": "varnish (ESI)", "nginx": "nginx static"},
    "checks": {"shellac": "gzip on the wire, 10 bytes", "varnish": "gzip on the wire, 10 bytes",
               "nginx": "gzip on the wire, 10 bytes"},
    "memory": {"objects": "100", "fragment_bytes": "5090", "fragment_gzip": "1440",
               "shellac": {"key_before": "0", "key_after": "3000", "header_before": "0", "header_after": "2000"}},
}

# target conns rps p50 p95 p99 max requests errors detail bytes secs cpu
POINTS = """\
shellac\t1\t10000.0\t90\t100\t100\t200\t50000\t0\t-\t3000\t5.000\tshellac:90,nginx:0,wrk:60,other:2
varnish\t1\t5000.0\t190\t200\t200\t400\t25000\t0\t-\t3100\t5.000\tvarnish:80,nginx:0,wrk:40,other:1
nginx\t1\t20000.0\t45\t50\t50\t90\t100000\t0\t-\t3000\t5.000\tnginx:95,wrk:70,other:0
shellac\t2\t20000.0\t95\t110\t180\t300\t100000\t0\t-\t3000\t5.000\tshellac:150,nginx:0,wrk:50,other:3
varnish\t2\t6000.0\t300\t350\t500\t900\t30000\t0\t-\t3100\t5.000\tvarnish:120,nginx:0,wrk:60,other:30
nginx\t2\t30000.0\t60\t70\t80\t120\t150000\t0\t-\t3000\t5.000\tnginx:150,wrk:50,other:0
shellac\t4\t30000.0\t120\t200\t400\t700\t150000\t0\t-\t3000\t5.000\tshellac:170,nginx:0,wrk:30,other:1
varnish\t4\t8000.0\t450\t600\t900\t1500\t40000\t2\tstatus 2\t3100\t5.000\tvarnish:160,nginx:0,wrk:40,other:0
nginx\t4\t40000.0\t90\t100\t150\t300\t200000\t0\t-\t3000\t5.000\tnginx:170,wrk:30,other:0
shellac\t8\t25000.0\t300\t500\t1000\t2000\t125000\t0\t-\t3000\t5.000\tshellac:170,nginx:0,wrk:30,other:0
varnish\t8\t7000.0\t1100\t1500\t2000\t4000\t35000\t0\t-\t3100\t5.000\tvarnish:170,nginx:0,wrk:30,other:0
nginx\t8\t40000.0\t190\t250\t290\t500\t200000\t0\t-\t3000\t5.000\tnginx:170,wrk:30,other:0
"""

MEMORY = "shellac\t0\t100\t0\t160000\t0\t144000\t10240\t12288\nvarnish\t0\t100\t0\t200000\t\t\t20480\t21504\n"


class ReportTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="bench-report-test.")
        self.raw = os.path.join(self.dir, "raw", "cached")
        os.makedirs(self.raw)
        with open(os.path.join(self.raw, "meta.json"), "w") as f:
            json.dump(META, f)
        with open(os.path.join(self.raw, "points.tsv"), "w") as f:
            f.write(POINTS)
        with open(os.path.join(self.raw, "memory.tsv"), "w") as f:
            f.write(MEMORY)
        self.run_ = report.Run(self.raw)

    def tearDown(self):
        shutil.rmtree(self.dir)

    def test_peak_and_ratios(self):
        self.assertEqual(self.run_.peak("shellac"), (30000.0, 4))
        self.assertEqual(self.run_.peak("varnish"), (8000.0, 4))
        ratio, low = self.run_.ratios("varnish", "shellac")
        self.assertAlmostEqual(ratio, 3.75)
        self.assertEqual(low, "2.00x at c=1")
        self.assertEqual(self.run_.ratio_range("varnish", "shellac"), "2.00x (c=1) to 3.75x (c=4)")

    def test_percentiles_in_ms(self):
        self.assertEqual(report.ms(180), "0.18")
        self.assertEqual(report.ms(12345), "12.3")
        table = "\n".join(report.table_vs(self.run_, "shellac", ["shellac", "varnish"]))
        # c=2 varnish: p50 0.30, p95 0.35, p99 0.50 ms; shellac / varnish = 20000 / 6000
        self.assertIn("| 2 | varnish (ESI) | 6000 | 0.30 | 0.35 | 0.50 | 0 | - | **3.33x** |", table)
        self.assertIn("| 4 | varnish (ESI) | 8000 | 0.45 | 0.60 | 0.90 | 2 (status 2) |", table)

    def test_page_floor(self):
        # without --min-pages the table has no pages column and the load line no floor
        self.assertEqual(report.floor_text(self.run_), "")
        self.run_.meta["options"].update({"min_pages": "400", "max_duration": "60"})
        self.assertIn("up to 60 s, until the target answered 400 pages", report.floor_text(self.run_))
        table = "\n".join(report.table_vs(self.run_, "shellac", ["shellac", "varnish"]))
        self.assertIn("| conns | target | req/s | pages in s | p50 ms |", table)
        self.assertIn("| 2 | varnish (ESI) | 6000 | 30000 in 5.0 | 0.30 | 0.35 | 0.50 | 0 | - | **3.33x** |", table)

    def test_knee(self):
        # shellac: p99 100 -> 180 (x1.8 for x2 load) -> 400 (x2.2 > 2): the knee is c=4
        self.assertEqual(self.run_.knee("shellac"), (4, 2, 180, 400))
        self.assertEqual(self.run_.knee_text("shellac"), "c=4 (p99 0.18 ms at c=2 -> 0.40 ms)")
        # varnish: 200 -> 500 (x2.5): c=2
        self.assertEqual(self.run_.knee("varnish")[0], 2)
        # nginx: 50 -> 80 -> 150 -> 290: never more than doubles
        self.assertIsNone(self.run_.knee("nginx"))
        self.assertEqual(self.run_.knee_text("nginx"), "none in range")

    def test_disturbed_points(self):
        self.assertEqual(self.run_.disturbed(20), ["varnish c=2 (other 30%)"])

    def test_markdown_names_command_date_machine(self):
        md = report.make_report(self.raw, self.dir, with_plot=False)
        self.assertEqual(md, os.path.join(self.dir, "cached.md"))
        with open(md) as f:
            text = f.read()
        self.assertIn("- command: `bench/run.sh cached --sweep 1,2,4,8`\n- note: the machine was shared\n", text)
        self.assertIn("- date: 2026-12-01 10:00:00 UTC (run took 42 s)", text)
        self.assertIn("- machine: nproc=2, CPU: Test CPU (x86_64), memory: 1.0 GiB; load average at start: 0.10",
                      text)
        self.assertIn("- shellac (ESI) / varnish (ESI): **3.75x** at peak; per level 2.00x (c=1) to 3.75x (c=4); "
                      "target 3x **met**", text)
        self.assertIn("- shellac (ESI) / nginx static: **0.75x** at peak", text)
        self.assertIn("knee: c=4 (p99 0.18 ms at c=2 -> 0.40 ms); 0 errors", text)
        self.assertIn("**machine not quiet**: 1 point(s)", text)
        # memory: (160000 - 144000) / 100 = 160 B overhead per object (110 beyond 30 B key + 20 B headers);
        # varnish 2000 - 1440 = 560
        self.assertIn("| shellac | 0 -> 100 | 0 -> 160000 | 0 -> 144000 | 1600 | 160 |", text)
        self.assertIn("| 2000 | 560 (vs 1440 gzip) |", text)
        self.assertIn("**110.0 B beyond key, headers and body**", text)

    def test_pages_per_kind(self):
        raw = os.path.join(self.dir, "raw", "pages")
        os.makedirs(raw)
        meta = dict(META, scenario="pages", report="pages", conns="8", targets=["cgit", "shellac", "varnish"])
        with open(os.path.join(raw, "meta.json"), "w") as f:
            json.dump(meta, f)
        with open(os.path.join(raw, "kinds.tsv"), "w") as f:
            f.write("tree-dir\t5000\t/R/tree/DIR?id=SHA\nsummary\t101\t/R/\n")
        with open(os.path.join(raw, "crawl.tsv"), "w") as f:
            # tree-dir: shellac walked its whole list (both threads stopped at its end) in 1.25 s;
            # summary: an old walk that wrapped around (CRAWL_WRAP=1), no ended/walked columns
            f.write("tree-dir\tshellac\t0\t3000\ttree 0 0\ttree 3000 1.5\t2\t1250000\n"
                    "tree-dir\tcgit\t0\t3000\t\t\t0\t0\n"
                    "summary\tshellac\t2000\t101\t\tsummary 2100 4.2\n")
        with open(os.path.join(raw, "points.tsv"), "w") as f:
            f.write("tree-dir:cgit\t8\t100.0\t70000\t0\t90000\t0\t300\t0\t-\t9000\t3.0\tother:0\n"
                    "tree-dir:shellac\t8\t3000.0\t2000\t0\t5000\t0\t9000\t0\t-\t2000\t3.0\tother:0\n"
                    "tree-dir:varnish\t8\t95.0\t75000\t0\t95000\t0\t285\t0\t-\t9000\t3.0\tother:0\n"
                    "summary:cgit\t8\t50.0\t150000\t0\t200000\t0\t150\t0\t-\t9000\t3.0\tother:0\n"
                    "summary:shellac\t8\t700.0\t10000\t0\t30000\t0\t2100\t3\tstatus 3\t2000\t3.0\tother:0\n")
        md = report.make_report(raw, self.dir, with_plot=False)
        with open(md) as f:
            text = f.read()
        # tree-dir: 3000 / 100 = 30x, 3000 renders in 1.5 s = 0.50 ms each; summary 700 / 50 = 14x
        self.assertIn("| tree-dir | 3000 | 2.00 | 5.00 | 100 | 70.0 | 90.0 | 95 | 95.0 | **30.0x** | 0, 0, 0 "
                      "| 3.00, 3.00, 3.00 | tree: 3000, 0.50 | shellac 3000 URLs in 1.25 s |", text)
        self.assertIn("| summary | 700 | 10.0 | 30.0 | 50 | 150.0 | 200.0 | - | - | **14.0x** | 3, 0, - "
                      "| 3.00, 3.00, - | summary: 2100, 2.00 | shellac 2000 repeats |", text)
        self.assertNotIn("Equal time", text)  # a run before the rule: its points' own lengths
        self.assertIn("- at or above 20x cgit: tree-dir 30.0x", text)
        self.assertIn("- **below 20x cgit**: summary 14.0x", text)
        # a run with the equal-time rule says so
        with open(os.path.join(raw, "meta.json"), "w") as f:
            json.dump(dict(meta, equal_time="1"), f)
        with open(report.make_report(raw, self.dir, with_plot=False)) as f:
            self.assertIn("Equal time: shellac and Varnish walk each list at least as long as cgit direct did", f.read())

    def test_history(self):
        raw = os.path.join(self.dir, "raw", "history")
        os.makedirs(raw)
        meta = dict(META, scenario="history", report="history", graph="changed-paths", pages="2",
                    log_counts="enable-log-filecount=1 ", log_rows="100")
        with open(os.path.join(raw, "meta.json"), "w") as f:
            json.dump(meta, f)
        with open(os.path.join(raw, "history.out"), "w") as f:
            for kind, sums in (("blame", (900, 300, 800, 30)), ("log-path", (4000, 40, 500, 60))):
                for t, total in zip(("git-nograph", "git", "cgit", "shellac"), sums):
                    f.write("BENCH_HISTORY kind=%s target=%s n=2 bad=0 p50_us=%d p90_us=%d p99_us=%d max_us=%d "
                            "mean_us=%d sum_us=%d\n" % (kind, t, total * 500, total * 500, total * 500, total * 500,
                                                        total * 500, total * 1000))
            f.write("BENCH_HISTORY_BAD kind=log-path target=cgit url=/r/log/x?id=1 why=status 500\n")
        with open(os.path.join(raw, "history-samples.tsv"), "w") as f:
            # blame: shellac faster than git (graph) on both pages; log-path: the second page 2x git's time
            f.write("blame\taaaa\ta.c\t/r/blame/a.c?id=aaaa\t450000\t150000\t400000\t15000\t14000\n"
                    "blame\tbbbb\tb.c\t/r/blame/b.c?id=bbbb\t450000\t150000\t400000\t15000\t\n"
                    "log-path\tcccc\tc.c\t/r/log/c.c?id=cccc\t2000000\t30000\t250000\t20000\t19000\n"
                    "log-path\tdddd\td.c\t/r/log/d.c?id=dddd\t2000000\t10000\t\t20000\t19000\n")
        md = report.make_report(raw, self.dir, with_plot=False)
        with open(md) as f:
            text = f.read()
        self.assertIn("| blame | git, graph | 2 | 150.0 | 150.0 | 150.0 | 150.0 | 150.0 | 300.0 | 0 |", text)
        self.assertIn("- blame: shellac 30.0 (sum) vs git with the graph 300.0 (0.10x) and cgit 800.0 (26.7x faster "
                      "than cgit); 2 of 2 pages no slower than git with the graph: **met**", text)
        self.assertIn("2 pages no slower than git with the graph: **not met**", text)
        self.assertIn("1 of 2 pages no slower", text)
        self.assertIn("  - slower than git: `/r/log/d.c?id=dddd` (2.00x git's time)", text)
        self.assertIn("- **failed check** (log-path, cgit): `/r/log/x?id=1`: status 500", text)
        self.assertIn("| log-path | `d.c` | dddd | 2000.0 | 10.0 | failed | 20.0 | 19.0 |", text)
        self.assertIn("`enable-log-filecount=1`", text)
        self.assertIn("`git log -N --format=%H SHA -- PATH` (N: the rows a path log page shows, the cgitrc's\n"
                      "max-commit-count: 100)", text)

    def test_crawler_mix(self):
        raw = os.path.join(self.dir, "raw", "crawler-mix")
        os.makedirs(raw)
        meta = dict(META, scenario="crawler-mix", report="crawler-mix", workload="crawler-mix", lua="crawler.lua",
                    targets=["cgit", "shellac", "varnish"], peers=["cgit", "varnish"], next_line="9000",
                    render_lines="cgitrc=/c/cgitrc", shellac_mode="renders", sweep_renders_before="",
                    sweep_renders_after="",
                    labels={"cgit": "cgit direct", "shellac": "shellac", "varnish": "varnish -> cgit"})
        meta["options"] = dict(META["options"], render="1")
        with open(os.path.join(raw, "meta.json"), "w") as f:
            json.dump(meta, f)
        with open(os.path.join(raw, "kinds.tsv"), "w") as f:
            f.write("blame\t400\t/R/blame/FILE?id=SHA\n")
        # c=1: 10 blames in 2 s, 100 tree frames in 0.05 s; c=2: 30 more blames in 3 s
        with open(os.path.join(raw, "cold-renders.tsv"), "w") as f:
            f.write("1\tblame 0 0;tree 0 0\tblame 10 2;snapshot:stream 8 0.5;tree 100 0.05\n"
                    "2\tblame 10 2;snapshot:stream 8 0.5;tree 100 0.05\tblame 40 5;snapshot:stream 20 2;"
                    "tree 100 0.05\n")
        # shellac's c=2 walk reached the end of the list (both threads) after 2.5 s
        with open(os.path.join(raw, "crawl.tsv"), "w") as f:
            f.write("cgit\t1\tmeasured\t0\t9000\t0\t0\nshellac\t1\tmeasured\t0\t9000\t0\t0\n"
                    "shellac\t2\tmeasured\t0\t9000\t2\t2500000\n")
        with open(os.path.join(raw, "points.tsv"), "w") as f:
            f.write("cgit\t1\t10.0\t90000\t0\t100000\t0\t50\t0\t-\t9000\t5.0\tother:0\n"
                    "shellac\t1\t150.0\t6000\t0\t9000\t0\t750\t0\t-\t2000\t5.0\tother:0\n"
                    "varnish\t1\t9.0\t95000\t0\t110000\t0\t45\t0\t-\t9000\t5.0\tother:0\n"
                    "cgit\t2\t12.0\t150000\t0\t200000\t0\t60\t0\t-\t9000\t5.0\tother:0\n"
                    "shellac\t2\t300.0\t6500\t0\t9500\t0\t1500\t0\t-\t2000\t5.0\tother:0\n"
                    "varnish\t2\t11.0\t160000\t0\t210000\t0\t55\t0\t-\t9000\t5.0\tother:0\n")
        md = report.make_report(raw, self.dir, with_plot=False)
        with open(md) as f:
            text = f.read()
        self.assertIn("# crawler-mix: what crawlers walk on a forge, every URL once", text)
        self.assertIn("- shellac's fragment store: empty", text)
        # shellac's c=2 point ran out of URLs: listed, but its 300 req/s is no peak: 150 / 12
        self.assertIn("- shellac / cgit direct: **12.50x** at peak", text)
        self.assertIn(">= 20x cgit direct on the mix: **not met** (12.50x at peak)", text)
        self.assertIn("| 2 | shellac | 300 (ran out) |", text)
        self.assertIn("| 2 | cgit direct | 12 | 150.0 | 0.00 | 200.0 | 0 | - | n/a (ran out) |", text)
        # blame: 40 renders in 5 s = 125 ms each, first (the most render time); a snapshot's archive:
        # 20 pieces in 2 s; tree: 100 in 0.05 s
        self.assertIn("| blame | 40 | 125.000 | 5.00 |\n| snapshot:stream | 20 | 100.000 | 2.00 |\n"
                      "| tree | 100 | 0.500 | 0.05 |", text)
        self.assertIn("blame 400 (`/R/blame/FILE?id=SHA`)", text)
        self.assertIn("no measured request repeated a URL for its target (measured list: 9000 URLs, walked to "
                      "line 9000", text)
        self.assertIn("**the list ran out** (a thread stops at its end, and the point's rate is over the URLs "
                      "walked until then, bench/wrk/crawler.lua; such points are listed but never taken for a peak, a knee "
                      "or a ratio): shellac c=2 after 2.50 s", text)

    def test_mix_weights(self):
        sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "wrk"))
        import pages_urls
        from prng import Rng
        lists = {k: ["/%s/%d" % (k, i) for i in range(1000)] for k in pages_urls.MIX_WEIGHTS}
        lists["tag"] = lists["tag"][:20]  # weight 2 of 100: the mix ends at about 1,000 URLs
        out = pages_urls.mix(Rng(1), lists)
        self.assertEqual(len(out), len(set(out)))
        self.assertEqual(sum(u.startswith("/tag/") for u in out), 20)
        self.assertTrue(600 < len(out) < 1600, len(out))
        commits = sum(u.startswith("/commit/") for u in out)
        self.assertTrue(0.10 < commits / len(out) < 0.20, commits / len(out))  # weight 15 of 100

    def test_finish_meta(self):
        raw = os.path.join(self.dir, "m")
        os.makedirs(raw)
        with open(os.path.join(raw, "meta.tsv"), "w") as f:
            f.write("command\tbench/run.sh esi\nlabels.a\tA b\ntargets[]\ta\ntargets[]\tb\n")
        report.finish_meta(raw)
        with open(os.path.join(raw, "meta.json")) as f:
            meta = json.load(f)
        self.assertEqual(meta, {"command": "bench/run.sh esi", "labels": {"a": "A b"}, "targets": ["a", "b"]})
        self.assertFalse(os.path.exists(os.path.join(raw, "meta.tsv")))

    def test_cluster_report(self):
        raw = os.path.join(self.dir, "raw", "cluster")
        os.makedirs(raw)
        meta = dict(META, scenario="cluster", report="cluster", command="bench/run.sh cluster")
        meta["cluster"] = {"conns": "16", "unique": "600", "kill_check": (
            "lookups=700 hits=300 hits_of_killed=120 renders=400 already=1 racing=2 never=397 never_lost=5 "
            "renders_miss=399 renders_unavailable=1 renders_corrupt=0 killed_puts=150 killed_lines_after_kill=0 "
            "walk_renders=452 puts_ok=1200 puts_listed=1200")}
        with open(os.path.join(raw, "meta.json"), "w") as f:
            json.dump(meta, f)
        with open(os.path.join(raw, "cluster.tsv"), "w") as f:
            f.write("cluster\t1800\t0\t200:1800\t4000000\t15800\t245600\t600\t600\t3 nodes\n"
                    "kill\t1800\t0\t200:1800\t4500000\t24400\t281400\t600\t452\tnode2 killed\n"
                    "independent\t1800\t0\t200:1800\t6000000\t28600\t298600\t600\t1271\tround-robin\n"
                    "varnish\t1800\t0\t200:1800\t18000000\t150000\t900000\t600\t1800\tvarnish rr\n")
        with open(os.path.join(raw, "kill-check-details.txt"), "w") as f:
            f.write("already node1: lookup asked 10, answered 20 (unavailable); first put ok by node2 at 5 (-5 µs from "
                    "the ask) gitfrag/diff/abc\n")
        md = report.make_report(raw, self.dir, with_plot=False)
        with open(md) as f:
            text = f.read()
        # 600 / 600, 1271 / 600, 1800 / 600; 1800 pages in 4 s, 6 s, 18 s
        self.assertIn("- renders per unique fragment: cluster **1.00** (target 1.00) vs independent shellac nodes "
                      "round-robin **2.12** vs Varnish nodes round-robin **3.00**", text)
        self.assertIn("- pages/s: cluster 450, independent 300 (cluster 1.50x), Varnish 100 (cluster 4.50x); "
                      "p50/p99 cluster 15.8/245.6 ms, independent 28.6/298.6 ms, Varnish 150.0/900.0 ms", text)
        self.assertIn("| varnish | 1800 | 0 | 200:1800 | 18.0 | 100 | 150.0 | 900.0 | 600 | 1800 | 3.00 | varnish rr |", text)
        self.assertIn("400 renders: **1 of fragments memcached already held** (target 0), 2 written by another node "
                      "while the lookup was under way, 397 never written before (5 of them", text)
        self.assertIn("| **renders of fragments memcached already held** (target 0) | 1 |", text)
        self.assertIn("| ... listed by memcached after the walk (lru_crawler metadump) | 1200 |", text)
        self.assertIn("- already node1: lookup asked 10", text)


if __name__ == "__main__":
    unittest.main()
