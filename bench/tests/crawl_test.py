#!/usr/bin/env python3
"""bench/wrk/crawler.lua under the real wrk, against a small HTTP server on loopback: a walk asks
each URL of its list once and stops at the list's end; with a page floor (CRAWL_ENOUGH) each thread
stops once it has sent its share; either way, once every thread stopped the script ends wrk (which
would otherwise sleep out its whole -d) and the BENCH lines give the walk's own time. Run by
`meson test bench-crawl` (skipped when wrk is not installed)."""

import collections
import http.server
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "..", "wrk", "crawler.lua")
WRK_SECONDS = 120   # -d: far more than any walk here takes, so a wrk that sleeps it out fails
WAIT_SECONDS = 60   # how long the test waits for wrk to end by itself


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"   # keep-alive, as the targets wrk loads
    disable_nagle_algorithm = True  # headers and body are two writes
    seen = []
    lock = threading.Lock()

    def do_GET(self):
        with Handler.lock:
            Handler.seen.append(self.path)
        body = b"page\n"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def fields(line):
    return {k: int(v) for k, v in re.findall(r"(\w+)=(\d+)", line)}


class Server(http.server.ThreadingHTTPServer):
    def handle_error(self, request, client_address):
        pass   # wrk drops its connections when it stops: resets are expected


class CrawlTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = Server(("127.0.0.1", 0), Handler)
        cls.thread = threading.Thread(target=cls.server.serve_forever, daemon=True)
        cls.thread.start()
        cls.url = "http://127.0.0.1:%d/" % cls.server.server_address[1]

    @classmethod
    def tearDownClass(cls):
        cls.server.shutdown()
        cls.server.server_close()

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="bench-crawl-test.")
        Handler.seen = []

    def tearDown(self):
        shutil.rmtree(self.dir)

    def walk(self, urls, threads, conns, **env):
        """Runs wrk with crawler.lua over `urls` -> (BENCH fields, BENCH_CRAWL fields)."""
        listfile = os.path.join(self.dir, "list.txt")
        with open(listfile, "w") as f:
            f.write("".join(u + "\n" for u in urls))
        e = dict(os.environ, CRAWL_URLS=listfile, CRAWL_LANES="2", CRAWL_THREADS=str(threads),
                 CRAWL_STOP_FILE=os.path.join(self.dir, "stop"))
        e.update({k: str(v) for k, v in env.items()})
        cmd = ["wrk", "-t%d" % threads, "-c%d" % conns, "-d%ds" % WRK_SECONDS, "-s", SCRIPT, self.url]
        out = subprocess.run(cmd, env=e, capture_output=True, text=True, timeout=WAIT_SECONDS)
        self.assertEqual(out.returncode, 0, out.stderr)
        bench = [l for l in out.stdout.splitlines() if l.startswith("BENCH ")]
        crawl = [l for l in out.stdout.splitlines() if l.startswith("BENCH_CRAWL ")]
        self.assertEqual((len(bench), len(crawl)), (1, 1), out.stdout)
        return fields(bench[0]), fields(crawl[0])

    def test_list_end_ends_wrk(self):
        urls = ["/page/%d" % i for i in range(600)]
        bench, crawl = self.walk(urls, threads=2, conns=4)
        # every URL asked exactly once, and the last again by the threads as they stopped (the
        # request wrk needs then, from each connection that asks in the stop's loop turn: sent,
        # never counted)
        asked = collections.Counter(Handler.seen)
        self.assertEqual(sorted(asked), sorted(urls))
        self.assertEqual([u for u in urls if asked[u] != 1], [urls[-1]])
        self.assertLessEqual(asked[urls[-1]], 1 + 4)
        self.assertEqual(crawl["sent"], 600)
        self.assertEqual((crawl["ended"], crawl["enough"], crawl["repeats"]), (2, 0, 0))
        # a thread that stops leaves its other connection's request unanswered (at most one each)
        self.assertGreaterEqual(bench["requests"], 600 - 2)
        self.assertLessEqual(bench["requests"], 600)
        self.assertIn("walked_us", crawl)
        self.assertEqual(bench["duration_us"], crawl["walked_us"])

    def test_page_floor_stops_each_thread(self):
        urls = ["/page/%d" % i for i in range(5000)]
        # 2 threads, 6 connections: a thread stops after 100 + 3 requests sent (its half of a
        # floor of 200, plus one per connection it holds, unanswered at the stop at most)
        bench, crawl = self.walk(urls, threads=2, conns=6, CRAWL_ENOUGH=103, CRAWL_MIN_US=0)
        self.assertEqual((crawl["ended"], crawl["enough"]), (0, 2))
        self.assertEqual(crawl["sent"], 206)
        self.assertGreaterEqual(bench["requests"], 200)
        self.assertLessEqual(bench["requests"], 206)
        self.assertEqual(crawl["next"], 2 * 103)   # the next run starts past what this one asked
        self.assertEqual(bench["duration_us"], crawl["walked_us"])

    def test_page_floor_one_thread(self):
        urls = ["/page/%d" % i for i in range(5000)]
        bench, crawl = self.walk(urls, threads=1, conns=1, CRAWL_ENOUGH=51, CRAWL_MIN_US=0)
        self.assertEqual((crawl["ended"], crawl["enough"], crawl["sent"]), (0, 1, 51))
        self.assertGreaterEqual(bench["requests"], 50)

    def test_point_lasts_the_first_targets_time(self):
        # bench/lib.sh's crawl_point: the page floor's least time is --duration, or POINT_MIN_US
        # (pages: the first target's walk) when that is longer; -d is the cap either way
        script = ('source "$1"; bench_point() { echo "$CRAWL_MIN_US $BENCH_DURATION"; }; '
                  'BENCH_DURATION=3 MIN_PAGES=100 MAX_DURATION=60 BENCH_WRK_SCRIPT=x/crawler.lua; '
                  'POINT_MIN_US=45000000 crawl_point t u 8; POINT_MIN_US=1000 crawl_point t u 8; '
                  'crawl_point t u 8')
        out = subprocess.run(["bash", "-euo", "pipefail", "-c", script, "bash",
                              os.path.join(HERE, "..", "lib.sh")],
                             capture_output=True, text=True, check=True).stdout
        self.assertEqual(out.split("\n")[:3], ["45000000 60", "3000000 60", "3000000 60"])


if __name__ == "__main__":
    if not shutil.which("wrk"):
        print("wrk is not installed: skipped")
        sys.exit(77)
    unittest.main()
