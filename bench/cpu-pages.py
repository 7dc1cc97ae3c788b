#!/usr/bin/env python3
"""CPU seconds shellac spends on a list of URLs, natively (no valgrind), one request at a time.

callgrind-pages.sh counts instructions, which do not see what memory costs: a change that reads
fewer instructions can still take more time when what it keeps is out of the CPU's caches. This
runs the real binary with one worker and one render thread, opens every repository of CGITRC
once (its top folder's tree page), then asks for the first N URLs of the list through one
keep-alive connection (Accept-Encoding: gzip) and prints the process's CPU time (user + system,
from /proc) over those requests, the wall time, its minor page faults and its peak RSS. Run the
variants back to back, each more than once: the machine's noise is a few percent.

Usage: bench/cpu-pages.py BIN CGITRC URLS N [KEY=VALUE ...]
  KEY=VALUE: more shellac.conf lines (e.g. pack-cache-size=256M).
"""
import http.client
import os
import socket
import subprocess
import sys
import tempfile
import time


def main():
    if len(sys.argv) < 5:
        sys.exit(__doc__)
    binary, cgitrc, urls, n = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    extra = sys.argv[5:]
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    folder = tempfile.mkdtemp(prefix="shellac-cpu.")
    repos = [l.split("=", 1)[1].strip() for l in open(cgitrc) if l.startswith("repo.url=")]
    with open(f"{folder}/shellac.conf", "w") as f:
        f.write(f"listen=127.0.0.1:{port}\nadmin-listen=off\nbackend=127.0.0.1:1\nthreads=1\n"
                f"render-threads=1\naccess-log=off\ncgitrc={cgitrc}\n"
                f"max-open-repos={len(repos) + 8}\nblame-timeout=600s\n")
        f.writelines(line + "\n" for line in extra)
    proc = subprocess.Popen([binary, "-c", f"{folder}/shellac.conf"], stderr=subprocess.PIPE,
                            text=True)
    for line in proc.stderr:
        if line.startswith("shellac: ready"):
            break
    else:
        sys.exit("shellac did not start: see its config in " + folder)

    def usage():
        fields = open(f"/proc/{proc.pid}/stat").read().rsplit(")", 1)[1].split()
        ticks = os.sysconf("SC_CLK_TCK")
        return (int(fields[11]) + int(fields[12])) / ticks, int(fields[7])

    paths = [l.strip() for l in open(urls) if l.strip()][:n]
    if len(paths) < n:
        sys.exit(f"{urls}: fewer than {n} URLs")
    conn = http.client.HTTPConnection("127.0.0.1", port)
    failed = []

    def get(path):
        conn.request("GET", path, headers={"Accept-Encoding": "gzip"})
        response = conn.getresponse()
        response.read()
        if response.status != 200:
            failed.append(f"{response.status} {path}")

    try:
        for repo in repos:
            get(f"/{repo}/tree/")
        (cpu0, faults0), wall0 = usage(), time.monotonic()
        for path in paths:
            get(path)
        (cpu1, faults1), wall1 = usage(), time.monotonic()
        peak = [l for l in open(f"/proc/{proc.pid}/status") if l.startswith("VmHWM")][0].split()[1]
    finally:
        proc.terminate()
        proc.wait()
    print(f"{os.path.basename(urls)} n={n} {' '.join(extra) or '(defaults)'}: "
          f"cpu={cpu1 - cpu0:.2f}s wall={wall1 - wall0:.2f}s minflt={faults1 - faults0} "
          f"peak_rss_kb={peak} not_200={len(failed)}")
    if failed:
        sys.exit("\n".join(failed[:10]))


if __name__ == "__main__":
    main()
