#!/bin/bash
# Recorded as run for the A/B of 2026-12-02 (README.md there); paths are that machine's temp dirs.
# CPU per request of one shellac binary on the crawler workload (frames over stored fragments).
# usage: cpu.sh BIN NAME PORT CONNS SECONDS
set -e
BIN=$1; NAME=$2; PORT=$3; CONNS=${4:-16}; SECS=${5:-10}
C=/tmp/shellac-bench-corpus/gen-c20000-t1000-f10-m150-s1
D=/tmp/ab/cpu
cd /work/main
[ -f $D/crawler.txt ] || python3 bench/wrk/urls.py crawler --cgitrc $C/cgitrc --commits $C/commits.txt --branch main --seed 1 > $D/crawler.txt
[ -f $D/warm.txt ] || python3 bench/wrk/urls.py warm --cgitrc $C/cgitrc --commits $C/commits.txt --branch main --seed 1 > $D/warm.txt
cat > $D/$NAME.conf <<CONF
listen=127.0.0.1:$PORT
admin-listen=off
access-log=off
threads=2
cgitrc=$C/cgitrc
max-open-repos=64
CONF
$BIN -c $D/$NAME.conf 2>$D/$NAME.err &
P=$!
for i in $(seq 600); do grep -q "shellac: ready" $D/$NAME.err && break; sleep 0.1; done
python3 - $PORT $D/warm.txt <<'PY'
import sys, http.client
c=http.client.HTTPConnection('127.0.0.1', int(sys.argv[1]), timeout=120)
for u in open(sys.argv[2]):
    c.request('GET', u.strip(), headers={'Accept-Encoding':'gzip'}); r=c.getresponse(); r.read(); assert r.status==200, (u, r.status)
PY
echo "Accept-Encoding: gzip" > $D/headers.txt
cpu() { awk '{print $14+$15}' /proc/$P/stat; }
ctx() { cat /proc/$P/task/*/status | awk '/ctxt_switches/ {s+=$2} END {print s}'; }
c0=$(cpu); x0=$(ctx)
CRAWL_URLS=$D/crawler.txt CRAWL_LANES=2 CRAWL_START=0 WRK_HEADERS=$D/headers.txt wrk -t2 -c$CONNS -d${SECS}s -s bench/wrk/crawler.lua http://127.0.0.1:$PORT/ > $D/$NAME.wrk
c1=$(cpu); x1=$(ctx)
req=$(awk '/requests in/ {print $1}' $D/$NAME.wrk)
rps=$(awk '/Requests\/sec/ {print $2}' $D/$NAME.wrk)
kill -TERM $P; wait $P || true
hz=$(getconf CLK_TCK)
python3 -c "
req=$req; cpu=($c1-$c0)/$hz; ctx=$x1-$x0
print('$NAME c=$CONNS: %d requests, %s req/s, shellac CPU %.2f s = %.1f us/request, %.2f ctx switches/request' % (req, '$rps', cpu, cpu/req*1e6, ctx/req))"
