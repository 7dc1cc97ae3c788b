#!/usr/bin/env python3
"""bench/wrk/person.py: the person of the flood scenario.

From its own loopback address (--source, e.g. 127.0.0.3, so a server tells it from the crawler on
127.0.0.1) it opens a new page every --interval seconds for --duration seconds: one request at a
time on a new connection, as a browser opening a link; when a page takes longer than the interval,
the next one starts when it ends. Pages come from --urls (one path a line), in order, never
repeated.

Prints one line per page ("PAGE status ms path") and a summary line:
  PERSON pages=N ok=N statuses=200:N,503:N p50_ms=X p99_ms=X max_ms=X
A page that did not answer within --timeout counts as status 0.
"""
import argparse
import http.client
import socket
import sys
import time


class BoundConnection(http.client.HTTPConnection):
    def __init__(self, host, port, source, timeout):
        super().__init__(host, port, timeout=timeout, source_address=(source, 0))


def percentile(values, p):
    if not values:
        return 0.0
    s = sorted(values)
    k = max(0, min(len(s) - 1, int(round(p / 100.0 * len(s) + 0.5)) - 1))
    return s[k]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--source", default="127.0.0.3")
    ap.add_argument("--urls", required=True)
    ap.add_argument("--interval", type=float, default=0.2)
    ap.add_argument("--duration", type=float, required=True)
    ap.add_argument("--timeout", type=float, default=60)
    ap.add_argument("--gzip", action="store_true")
    a = ap.parse_args()
    with open(a.urls) as f:
        paths = [line.strip() for line in f if line.strip()]
    headers = {"Accept-Encoding": "gzip"} if a.gzip else {}
    statuses, times = {}, []
    start = time.monotonic()
    i = 0
    while time.monotonic() - start < a.duration and i < len(paths):
        t0 = time.monotonic()
        path = paths[i]
        i += 1
        status = 0
        try:
            c = BoundConnection("127.0.0.1", a.port, a.source, a.timeout)
            c.request("GET", path, headers=headers)
            r = c.getresponse()
            r.read()
            status = r.status
            c.close()
        except (OSError, http.client.HTTPException, socket.timeout):
            status = 0
        ms = (time.monotonic() - t0) * 1000.0
        statuses[status] = statuses.get(status, 0) + 1
        times.append(ms)
        print("PAGE %d %.1f %s" % (status, ms, path), flush=True)
        wait = a.interval - (time.monotonic() - t0)
        if wait > 0:
            time.sleep(wait)
    if i >= len(paths):
        print("person.py: ran out of URLs after %d pages" % i, file=sys.stderr)
    print(
        "PERSON pages=%d ok=%d statuses=%s p50_ms=%.1f p99_ms=%.1f max_ms=%.1f"
        % (
            len(times),
            statuses.get(200, 0),
            ",".join("%d:%d" % (k, v) for k, v in sorted(statuses.items())),
            percentile(times, 50),
            percentile(times, 99),
            max(times) if times else 0.0,
        ),
        flush=True,
    )


if __name__ == "__main__":
    main()
