#!/usr/bin/env python3
"""A crawler for the cluster scenario: CONNS keep-alive connections walk a URL list once (each URL
asked once, the list shared), through one address (HAProxy, or a node). Optionally kills a process
(SIGKILL) once a given number of requests is done, to see what the clients notice.

Prints one line:
BENCH requests=N errors=E err_status=S err_io=I duration_us=D p50_us=P p99_us=Q statuses=200:N,...
      start_us=T end_us=T [kill_us=T]
(start/end/kill: wall-clock µs since the epoch; kill_us is taken just before the SIGKILL is sent)
"""
import argparse
import http.client
import os
import signal
import threading
import time


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--urls", required=True)
    ap.add_argument("--conns", type=int, default=8)
    ap.add_argument("--gzip", action="store_true")
    ap.add_argument("--limit", type=int, default=0, help="stop after this many URLs (0: all)")
    ap.add_argument("--kill-pid", type=int, default=0)
    ap.add_argument("--kill-after", type=int, default=0)
    ap.add_argument("--timeout", type=float, default=30)
    a = ap.parse_args()
    with open(a.urls, encoding="utf-8") as f:
        urls = [u.strip() for u in f if u.strip()]
    if a.limit:
        urls = urls[:a.limit]
    lock = threading.Lock()
    state = {"next": 0, "done": 0, "killed": False, "kill_us": 0}
    lat, statuses = [], {}
    errors = {"status": 0, "io": 0}
    headers = {"Accept-Encoding": "gzip"} if a.gzip else {}

    def worker():
        conn = None
        while True:
            with lock:
                i = state["next"]
                if i >= len(urls):
                    return
                state["next"] += 1
            t0 = time.monotonic()
            status = 0
            for attempt in range(2):  # a kept-alive connection the server closed meanwhile: once more
                try:
                    if conn is None:
                        conn = http.client.HTTPConnection("127.0.0.1", a.port, timeout=a.timeout)
                    conn.request("GET", urls[i], headers=headers)
                    r = conn.getresponse()
                    r.read()
                    status = r.status
                    if r.getheader("connection", "").lower() == "close":
                        conn.close()
                        conn = None
                    break
                except (OSError, http.client.HTTPException):
                    if conn is not None:
                        conn.close()
                    conn = None
                    if attempt == 1 or time.monotonic() - t0 > a.timeout:
                        status = 0
                        break
                    # Only a request on a reused connection is retried (as browsers do); a fresh
                    # connection's failure is an error.
            t1 = time.monotonic()
            with lock:
                lat.append(t1 - t0)
                statuses[status] = statuses.get(status, 0) + 1
                if status == 0:
                    errors["io"] += 1
                elif status != 200:
                    errors["status"] += 1
                state["done"] += 1
                kill = a.kill_pid and not state["killed"] and state["done"] >= a.kill_after
                if kill:
                    state["killed"] = True
            if kill:
                state["kill_us"] = time.time_ns() // 1000
                os.kill(a.kill_pid, signal.SIGKILL)

    start = time.monotonic()
    start_us = time.time_ns() // 1000
    threads = [threading.Thread(target=worker) for _ in range(a.conns)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    took = time.monotonic() - start
    end_us = time.time_ns() // 1000
    lat.sort()
    pick = lambda q: int(lat[min(len(lat) - 1, int(q * len(lat)))] * 1e6) if lat else 0
    print("BENCH requests=%d errors=%d err_status=%d err_io=%d duration_us=%d p50_us=%d p99_us=%d statuses=%s "
          "start_us=%d end_us=%d%s" % (
              len(lat), errors["status"] + errors["io"], errors["status"], errors["io"], int(took * 1e6), pick(0.5),
              pick(0.99), ",".join("%s:%d" % kv for kv in sorted(statuses.items())), start_us, end_us,
              " kill_us=%d" % state["kill_us"] if state["kill_us"] else ""))


if __name__ == "__main__":
    main()
