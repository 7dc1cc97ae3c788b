#!/bin/bash
# Recorded as run for the A/B of 2026-12-02 (README.md there); paths are that machine's temp dirs.
# instructions of one shellac binary serving PAGE (env; from the cached/esi scenarios' nginx origin,
# kept by `bench/run.sh cached --keep-tmp` and started again) 50 + N times, gzip, one keep-alive connection
BIN=$1; NAME=$2; PORT=$3; N=$4
cat > /tmp/ab/cg/$NAME.conf <<CONF
listen=127.0.0.1:$PORT
admin-listen=off
backend=127.0.0.1:23710
threads=1
access-log=off
cache=on
esi=surrogate
CONF
valgrind --tool=callgrind --callgrind-out-file=/tmp/ab/cg/$NAME.out $BIN -c /tmp/ab/cg/$NAME.conf 2>/tmp/ab/cg/$NAME.err &
VPID=$!
for i in $(seq 600); do grep -q "shellac: ready" /tmp/ab/cg/$NAME.err && break; sleep 0.1; done
python3 - $PORT $N $PAGE <<'PY'
import sys, http.client
c=http.client.HTTPConnection('127.0.0.1', int(sys.argv[1]), timeout=120)
for i in range(50 + int(sys.argv[2])):
    c.request('GET', sys.argv[3], headers={'Accept-Encoding':'gzip'}); r=c.getresponse(); r.read(); assert r.status==200, r.status
PY
kill -TERM $VPID; wait $VPID || true
callgrind_annotate /tmp/ab/cg/$NAME.out 2>/dev/null | grep -m1 "PROGRAM TOTALS"
