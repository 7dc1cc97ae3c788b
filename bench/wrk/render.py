#!/usr/bin/env python3
"""bench/wrk/render.py: sequential page latencies (one request at a time) for the render scenario.

    render.py --plan PLAN --port T=PORT... [--admin PORT] [--identity] [--samples OUT.tsv]

PLAN: one request a line, tab separated: PHASE TARGET PATH SUBJECT DIFF. TARGET is a name given with
--port (e.g. shellac=20001 cgit=20002): one keep-alive HTTP/1.1 connection each (http.client),
Accept-Encoding: gzip unless --identity. The lines are sent in order, one at a time; the latency of
a request is from writing it to having read the whole answer (perf_counter). Then the answer is
checked (outside the timing): status 200, and, gunzipped and with its entities decoded, it contains
SUBJECT (unless "-") and, when DIFF is 1, a diff (a "diff --git" line). A request without a complete
answer within --timeout seconds fails its check and is left out of the latencies. With --admin (shellac's admin
port), shellac's /metrics is read before and after every request to TARGET shellac (outside the
timing): the renders and render time of each page kind it caused (shellac updates them before it
answers).

Prints, per PHASE and TARGET:
  BENCH_RENDER phase=P target=T n=N bad=B p50_us= p90_us= p99_us= max_us= mean_us= bytes=MEAN
  BENCH_RENDER_KIND phase=P kind=K renders=N render_us=SUM p50_us= p90_us= (per-request render time
  of that kind, over the requests that rendered it)
  BENCH_RENDER_BAD phase=P target=T path=PATH why=...   (the first 5 failed checks of a phase)
--samples writes one line per request: phase target path status latency_us bytes ok render_us_by_kind.
"""
import argparse
import gzip
import html
import http.client
import re
import sys
import time


def pct(values, p):
    if not values:
        return 0
    s = sorted(values)
    k = max(0, min(len(s) - 1, int(round(p / 100.0 * len(s) + 0.5)) - 1))
    return s[k]


class Timeout(Exception):
    pass


class Conn:
    def __init__(self, port, timeout):
        self.port = port
        self.timeout = timeout
        self.c = None

    def get(self, path, headers):
        for attempt in (0, 1):
            if self.c is None:
                self.c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=self.timeout)
                self.c.connect()
            try:
                t0 = time.perf_counter()
                self.c.request("GET", path, headers=headers)
                r = self.c.getresponse()
                body = r.read()
                t1 = time.perf_counter()
                if r.getheader("Connection", "").lower() == "close":
                    self.c.close()
                    self.c = None
                return r.status, r.getheader("Content-Encoding", ""), body, (t1 - t0) * 1e6
            except TimeoutError:
                self.c.close()
                self.c = None
                raise Timeout()
            except (http.client.HTTPException, OSError):
                self.c.close()
                self.c = None
                if attempt:
                    raise
        raise RuntimeError("unreachable")


METRIC = re.compile(r'^shellac_render(s|_seconds)_total\{kind="([^"]+)"\} (\S+)$')


def metrics(admin):
    """{kind: (renders, seconds)} from shellac's /metrics."""
    c = http.client.HTTPConnection("127.0.0.1", admin, timeout=30)
    c.request("GET", "/metrics")
    text = c.getresponse().read().decode("utf-8", "replace")
    c.close()
    out = {}
    for line in text.splitlines():
        m = METRIC.match(line)
        if m:
            n, s = out.get(m.group(2), (0, 0.0))
            if m.group(1) == "s":
                n = int(float(m.group(3)))
            else:
                s = float(m.group(3))
            out[m.group(2)] = (n, s)
    return out


def check(status, enc, body, subject, diff):
    if status != 200:
        return "status %d" % status
    if enc == "gzip":
        try:
            body = gzip.decompress(body)
        except OSError as e:
            return "bad gzip: %s" % e
    text = html.unescape(body.decode("utf-8", "replace"))
    if subject != "-" and subject not in text:
        return "subject not on the page"
    if diff == "1" and "diff --git" not in text:
        return "no diff on the page"
    return ""


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--plan", required=True)
    ap.add_argument("--port", action="append", required=True, help="TARGET=PORT")
    ap.add_argument("--admin", type=int)
    ap.add_argument("--identity", action="store_true")
    ap.add_argument("--samples")
    ap.add_argument("--timeout", type=float, default=30, help="seconds a request may take (default 30)")
    a = ap.parse_args()
    conns = {}
    for p in a.port:
        name, _, port = p.partition("=")
        conns[name] = Conn(int(port), a.timeout)
    headers = {} if a.identity else {"Accept-Encoding": "gzip"}
    plan = []
    with open(a.plan, encoding="utf-8") as f:
        for line in f:
            if line.strip():
                phase, target, path, subject, diff = line.rstrip("\n").split("\t")
                plan.append((phase, target, path, subject, diff))
    lat, size, bad, badlines, kinds, order, count = {}, {}, {}, {}, {}, [], {}
    samples = open(a.samples, "w", encoding="utf-8") if a.samples else None
    for phase, target, path, subject, diff in plan:
        key = (phase, target)
        if key not in lat:
            lat[key], size[key], bad[key], badlines[key] = [], [], 0, []
            order.append(key)
            count[key] = 0
        count[key] += 1
        m0 = metrics(a.admin) if a.admin and target == "shellac" else None
        try:
            status, enc, body, us = conns[target].get(path, headers)
            why = check(status, enc, body, subject, diff)
            lat[key].append(us)
            size[key].append(len(body))
        except Timeout:
            status, body, us = 0, b"", a.timeout * 1e6
            why = "no complete answer within %g s" % a.timeout
        m1 = metrics(a.admin) if m0 is not None else None
        if why:
            bad[key] += 1
            if len(badlines[key]) < 5:
                badlines[key].append((path, why))
        rk = []
        if m0 is not None:
            for kind, (n1, s1) in m1.items():
                n0, s0 = m0.get(kind, (0, 0.0))
                if n1 > n0:
                    kinds.setdefault((phase, kind), []).append(((s1 - s0) * 1e6, n1 - n0))
                    rk.append("%s:%d:%.0f" % (kind, n1 - n0, (s1 - s0) * 1e6))
        if samples:
            samples.write("%s\t%s\t%s\t%d\t%.0f\t%d\t%s\t%s\n" % (phase, target, path, status, us, len(body),
                                                            "ok" if not why else why, ",".join(rk) or "-"))
            samples.flush()
    for key in order:
        v = lat[key] or [0]
        print("BENCH_RENDER phase=%s target=%s n=%d bad=%d p50_us=%.0f p90_us=%.0f p99_us=%.0f max_us=%.0f "
              "mean_us=%.0f bytes=%.0f" % (key[0], key[1], count[key], bad[key], pct(v, 50), pct(v, 90), pct(v, 99),
                                           max(v), sum(v) / len(v), sum(size[key] or [0]) / len(v)))
        for path, why in badlines[key]:
            print("BENCH_RENDER_BAD phase=%s target=%s path=%s why=%s" % (key[0], key[1], path, why.replace(" ", "_")))
    for (phase, kind), rows in sorted(kinds.items()):
        per = [us / n for us, n in rows]
        print("BENCH_RENDER_KIND phase=%s kind=%s renders=%d render_us=%.0f p50_us=%.0f p90_us=%.0f max_us=%.0f" % (
            phase, kind, sum(n for _, n in rows), sum(us for us, _ in rows), pct(per, 50), pct(per, 90), max(per)))
    if samples:
        samples.close()


if __name__ == "__main__":
    main()
