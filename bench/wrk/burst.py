#!/usr/bin/env python3
"""bench/wrk/burst.py: a thundering herd: N clients ask for one URL at the same instant.

    burst.py --port PORT --path PATH --clients N [--host 127.0.0.1] [--timeout 60] [--header 'K: V']...

wrk cannot model this: its connections each send their next request as soon as the previous answer
arrives, so after the first round the "burst" is a closed loop. Here every client sends exactly one
request: first all N connections are opened (and counted), then the N requests are written one right
after the other (a few milliseconds for 1,000 on loopback: "spread" below), then every answer is read
to the end (requests carry "Connection: close"). Latency of a client = from the moment the first
request was written to the end of its answer. Bounded: a client still waiting after --timeout seconds
is a timeout error, and the whole run ends by then.

Prints report.lua's BENCH line (same keys; duration_us = first request written -> last answer
complete), then
    BENCH_BURST clients=N connected=N completed=N spread_us=N status=200:N,...
Errors: connect (could not connect), write, read (closed or reset before a complete answer), status
(answers with status >= 400), timeout.
"""
import argparse
import asyncio
import math
import sys
import time


async def connect(host, port, state):
    try:
        reader, writer = await asyncio.open_connection(host, port)
    except OSError:
        state["err_connect"] += 1
        return None
    return (reader, writer)


def parse_status(head):
    try:
        line = head.split(b"\r\n", 1)[0].decode("latin-1")
        return int(line.split(" ", 2)[1])
    except (ValueError, IndexError):
        return None


async def read_answer(reader):
    """Reads one answer to the end (Connection: close): returns (status, total bytes, complete)."""
    buf = bytearray()
    while True:
        chunk = await reader.read(65536)
        if not chunk:
            break
        buf += chunk
    head_end = buf.find(b"\r\n\r\n")
    if head_end < 0:
        return None, len(buf), False
    status = parse_status(bytes(buf[:head_end]))
    head = bytes(buf[:head_end]).lower()
    body = len(buf) - head_end - 4
    complete = True
    for line in head.split(b"\r\n")[1:]:
        if line.startswith(b"content-length:"):
            try:
                complete = body >= int(line.split(b":", 1)[1])
            except ValueError:
                pass
        elif line.startswith(b"transfer-encoding:") and b"chunked" in line:
            complete = buf.endswith(b"0\r\n\r\n")
    return status, len(buf), complete


def pct(sorted_us, p):
    if not sorted_us:
        return 0
    k = max(0, min(len(sorted_us) - 1, math.ceil(p / 100.0 * len(sorted_us)) - 1))
    return sorted_us[k]


async def main_async(a):
    state = {"err_connect": 0, "err_read": 0, "err_write": 0, "err_status": 0, "err_timeout": 0}
    hdrs = "".join("%s\r\n" % h for h in a.header)
    req = ("GET %s HTTP/1.1\r\nHost: %s:%d\r\nUser-Agent: shellac-bench-burst\r\n%sConnection: close\r\n\r\n"
           % (a.path, a.host, a.port, hdrs)).encode("latin-1")
    deadline = time.monotonic() + a.timeout
    conns = await asyncio.wait_for(
        asyncio.gather(*(connect(a.host, a.port, state) for _ in range(a.clients))),
        timeout=a.timeout)
    conns = [c for c in conns if c is not None]
    # The burst: every request written back to back, then every answer read.
    t0 = time.monotonic()
    sent = []
    for reader, writer in conns:
        try:
            writer.write(req)
            sent.append((reader, writer))
        except (OSError, RuntimeError):
            state["err_write"] += 1
    spread = time.monotonic() - t0
    lat_us = []
    statuses = {}
    total_bytes = 0
    last = t0

    async def finish(reader, writer):
        nonlocal total_bytes, last
        try:
            await writer.drain()
            status, nbytes, complete = await read_answer(reader)
        except (OSError, asyncio.IncompleteReadError):
            state["err_read"] += 1
            return
        finally:
            writer.close()
        now = time.monotonic()
        total_bytes += nbytes
        if status is None or not complete:
            state["err_read"] += 1
            return
        statuses[status] = statuses.get(status, 0) + 1
        if status >= 400:
            state["err_status"] += 1
        lat_us.append(int((now - t0) * 1e6))
        last = max(last, now)

    tasks = [asyncio.ensure_future(finish(r, w)) for r, w in sent]
    if tasks:
        done, pending = await asyncio.wait(tasks, timeout=max(0.1, deadline - time.monotonic()))
        for t in pending:
            t.cancel()
        state["err_timeout"] += len(pending)
        if pending:
            await asyncio.gather(*pending, return_exceptions=True)
    lat_us.sort()
    n = len(lat_us)
    dur_us = max(1, int((last - t0) * 1e6))
    mean = sum(lat_us) / n if n else 0.0
    stdev = math.sqrt(sum((x - mean) ** 2 for x in lat_us) / n) if n else 0.0
    print("BENCH requests=%d duration_us=%d rps=%.1f bytes=%d mean_us=%.1f stdev_us=%.1f max_us=%d "
          "p50_us=%d p90_us=%d p95_us=%d p99_us=%d p999_us=%d "
          "err_connect=%d err_read=%d err_write=%d err_status=%d err_timeout=%d"
          % (n, dur_us, n / (dur_us / 1e6), total_bytes, mean, stdev, lat_us[-1] if n else 0,
             pct(lat_us, 50), pct(lat_us, 90), pct(lat_us, 95), pct(lat_us, 99), pct(lat_us, 99.9),
             state["err_connect"], state["err_read"], state["err_write"], state["err_status"],
             state["err_timeout"]))
    print("BENCH_BURST clients=%d connected=%d completed=%d spread_us=%d status=%s"
          % (a.clients, len(conns), n, int(spread * 1e6),
             ",".join("%d:%d" % kv for kv in sorted(statuses.items())) or "-"))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--path", required=True)
    ap.add_argument("--clients", type=int, required=True)
    ap.add_argument("--timeout", type=float, default=60.0)
    ap.add_argument("--header", action="append", default=[])
    a = ap.parse_args()
    if not 1 <= a.clients <= 10000:
        sys.exit("burst.py: --clients wants 1..10000")
    asyncio.run(main_async(a))


if __name__ == "__main__":
    main()
