#!/usr/bin/env python3
"""bench/wrk/slow_origin.py: an origin whose every answer takes DELAY ms (the esi scenario's slow includes).

    slow_origin.py --port PORT --root DIR [--delay-ms 50] [--host 127.0.0.1]

Serves the files of DIR (GET and HEAD; the request path below DIR, no query) after sleeping
--delay-ms, with Cache-Control: no-store (so a cache fetches them for every page), over HTTP/1.1
with keep-alive. Requests on one connection are answered in order; connections are independent, so
N includes fetched in parallel on N connections take one delay, fetched one after the other N delays.
python3 stdlib only (asyncio). Prints "ready PORT" on stdout once listening; stops on SIGTERM/SIGINT.
"""
import argparse
import asyncio
import os
import signal
import sys


async def handle(reader, writer, root, delay):
    try:
        while True:
            head = await reader.readuntil(b"\r\n\r\n")
            lines = head.decode("latin-1").split("\r\n")
            parts = lines[0].split(" ")
            if len(parts) != 3:
                break
            method, target, version = parts
            headers = {}
            for line in lines[1:]:
                if ":" in line:
                    k, v = line.split(":", 1)
                    headers[k.strip().lower()] = v.strip()
            close = headers.get("connection", "").lower() == "close" or version == "HTTP/1.0"
            path = target.split("?", 1)[0]
            full = os.path.realpath(os.path.join(root, path.lstrip("/")))
            await asyncio.sleep(delay)
            body = None
            if method in ("GET", "HEAD") and full.startswith(root + os.sep) and os.path.isfile(full):
                with open(full, "rb") as f:
                    body = f.read()
                status = "200 OK"
            else:
                status = "404 Not Found"
                body = b"not found\n"
            out = ("HTTP/1.1 %s\r\nContent-Type: text/html\r\nContent-Length: %d\r\n"
                   "Cache-Control: no-store\r\n%s\r\n" % (status, len(body), "Connection: close\r\n" if close else ""))
            writer.write(out.encode("latin-1") + (b"" if method == "HEAD" else body))
            await writer.drain()
            if close:
                break
    except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError):
        pass
    finally:
        writer.close()


async def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--root", required=True)
    ap.add_argument("--delay-ms", type=float, default=50)
    ap.add_argument("--host", default="127.0.0.1")
    a = ap.parse_args()
    root = os.path.realpath(a.root)
    server = await asyncio.start_server(lambda r, w: handle(r, w, root, a.delay_ms / 1000), a.host, a.port,
                                        backlog=1024)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for s in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(s, stop.set)
    print("ready %d" % a.port, flush=True)
    async with server:
        await stop.wait()
    sys.exit(0)


if __name__ == "__main__":
    asyncio.run(main())
