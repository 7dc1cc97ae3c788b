#!/bin/bash
# A list of unique URLs walked from shellac's start in consecutive wrk runs (bench/wrk/crawler.lua,
# -c CONNS, Accept-Encoding: gzip), each run from where the last one stopped: the rate of each
# run shows how the rate moves as the store fills (pages' points are measured from an empty store).
# shellac runs with its defaults (threads and render threads = cores, cache-size 256M) and the
# cgitrc, every repository opened first (its log page, untimed), nothing else.
#
# Usage: [CONNS=8] bench/segments.sh BIN CGITRC URLS SECONDS RUNS
# Prints one line a run: its number, its requests/s, the URLs walked so far.
set -euo pipefail
bin=$1 cgitrc=$2 urls=$3 secs=$4 runs=$5 conns=${CONNS:-8}
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=bench/lib.sh
source "$here/lib.sh"
bench_init segments
port=$(bench_free_port)
printf 'listen=127.0.0.1:%s\nadmin-listen=off\nbackend=127.0.0.1:1\naccess-log=off\ncgitrc=%s\n' \
  "$port" "$cgitrc" >"$BENCH_TMP/shellac.conf"
echo "Accept-Encoding: gzip" >"$BENCH_TMP/headers.txt"
bench_start shellac "$BENCH_TMP/stderr.log" "$bin" -c "$BENCH_TMP/shellac.conf"
bench_wait_log "$BENCH_TMP/stderr.log" '^shellac: ready' 60 "$BENCH_LAST_PID" ||
  bench_die "shellac did not start: $(tail -n 5 "$BENCH_TMP/stderr.log")"
while IFS= read -r r; do
  curl -sS -o /dev/null --max-time 60 "http://127.0.0.1:$port/$r/log/"
done < <(sed -n 's/^repo\.url=//p' "$cgitrc")
start=1
for i in $(seq 1 "$runs"); do
  out=$(CRAWL_URLS=$urls CRAWL_LANES=2 CRAWL_START=$start WRK_HEADERS=$BENCH_TMP/headers.txt \
    wrk -t2 -c"$conns" -d"${secs}s" --timeout 10s -s "$here/wrk/crawler.lua" "http://127.0.0.1:$port/")
  rps=$(sed -n 's/^BENCH .*rps=\([0-9.]*\).*/\1/p' <<<"$out")
  errors=$(sed -n 's/^BENCH .*err_timeout=\([0-9]*\).*/\1/p' <<<"$out")
  start=$(sed -n 's/^BENCH_CRAWL .*next=\([0-9]*\).*/\1/p' <<<"$out")
  echo "run $i: ${rps:-?} req/s, timeouts ${errors:-?}, next URL $start"
  [ -n "$start" ] || bench_die "run $i: wrk gave no BENCH_CRAWL line"
done
