#!/usr/bin/env bash
# bench/scenarios/flood.sh: a crawler flood and one person (issue 15): FLOOD_CONNS wrk connections
# (127.0.0.1) ask for cold commit pages while one person (bench/wrk/person.py from 127.0.0.3) opens
# a new cold commit page every 200 ms, against shellac rendering, cgit direct and Varnish -> cgit,
# and the person alone first. Run through bench/run.sh flood [--report NAME]; raw results ->
# OUT/raw/NAME/ (flood-TARGET-PHASE.{person,wrk,facts}: person.py's and wrk's output, load and
# shellac's counters before/after; flood-metrics.txt). FLOOD_BASELINE_BIN=PATH: the same phases
# with another shellac binary as a fourth target.
set -euo pipefail
source "$(dirname "$0")/../lib.sh"
FLOOD_CONNS=400

flood_metric() {  # NAME [LABEL-MATCH]  the sum of a metric's samples at shellac's /metrics (0 when none)
  { curl -sS --max-time 10 "http://127.0.0.1:$SHELLAC_ADMIN_PORT/metrics" 2>/dev/null || true; } |
    awk -v n="$1" -v l="${2:-}" '$1 == n || (index($1, n "{") == 1 && index($1, l) > 0) { t += $2 } END { printf "%.6f\n", t + 0 }'
}

flood_phase() {  # TARGET PHASE(quiet|flood) PERSON-URLS  -> $RAW/flood-TARGET-PHASE.{person,wrk,facts}
  local t=$1 phase=$2 urls=$3 port=${FLOOD_PORT[$1]} f=$RAW/flood-$1-$2 wpid="" secs
  local hdr=()
  [ "$IDENTITY" = 1 ] || hdr=(--gzip)
  local shellac=0
  [ "$t" = shellac ] || [ "$t" = baseline ] && shellac=1
  [ "$shellac" = 1 ] || peer_origin_idle 180 || bench_log "flood: cgit still busy after 180 s"
  local r0=0 f0=0 full0=0 to0=0 busy0=0
  if [ "$shellac" = 1 ]; then
    r0=$(flood_metric shellac_renders_total 'kind="diff-fragment"')
    f0=$(flood_metric shellac_renders_total 'kind="commit"')
    full0=$(flood_metric shellac_render_refused_total 'reason="full"')
    to0=$(flood_metric shellac_render_refused_total 'reason="timeout"')
    busy0=$(flood_metric shellac_esi_includes_busy_total)
  fi
  echo "load_before=$(cut -d' ' -f1 /proc/loadavg)" >"$f.facts"
  if [ "$phase" = flood ]; then
    secs=$FLOOD_SECS
    # wrk stops itself after -d; under cgit's flood it can be starved of CPU for long past it (wrk
    # ignores SIGINT), so timeout(1) ends it 60 s later, and the row says it has no report
    CRAWL_URLS=$BENCH_TMP/flood-crawler.txt CRAWL_START=0 CRAWL_LANES=2 WRK_HEADERS=${FLOOD_HEADERS:-} \
      timeout -k 10 $((secs + 60)) wrk -t2 -c"$FLOOD_CONNS" -d"${secs}s" --timeout 60s \
      -s "$BENCH_DIR/wrk/flood.lua" "http://127.0.0.1:$port" >"$f.wrk" 2>&1 &
    wpid=$!
    sleep 2   # the crawler's connections are open and its queue is full when the person starts
    secs=$((FLOOD_SECS - 3))
  else
    secs=$PERSON_SECS
  fi
  python3 "$BENCH_DIR/wrk/person.py" --port "$port" --source 127.0.0.3 --urls "$urls" --interval 0.2 \
    --duration "$secs" --timeout 60 "${hdr[@]}" >"$f.person" 2>&1 || bench_log "person.py failed: $(tail -n1 "$f.person")"
  [ -z "$wpid" ] || wait "$wpid" || bench_log "flood: wrk against $t ended with status $?"
  echo "load_after=$(cut -d' ' -f1 /proc/loadavg)" >>"$f.facts"
  if [ "$shellac" = 1 ]; then   # KEY=BEFORE AFTER (bench/report.py takes the difference)
    {
      echo "fragments=$r0 $(flood_metric shellac_renders_total 'kind="diff-fragment"')"
      echo "frames=$f0 $(flood_metric shellac_renders_total 'kind="commit"')"
      echo "refused_full=$full0 $(flood_metric shellac_render_refused_total 'reason="full"')"
      echo "refused_timeout=$to0 $(flood_metric shellac_render_refused_total 'reason="timeout"')"
      echo "includes_busy=$busy0 $(flood_metric shellac_esi_includes_busy_total)"
    } >>"$f.facts"
  fi
  bench_log "flood: $t $phase: $(grep '^PERSON' "$f.person" || echo 'no person line')${wpid:+; crawler $({ grep -o 'rps=[0-9.]*' "$f.wrk" || true; } | head -n1) $(grep '^BENCH_STATUS' "$f.wrk" || true)}"
}

begin flood "${REPORT:-flood}"
peers_need
corpus_prepare
shellac_binary
: "${FLOOD_SECS:=$([ "$SMALL" = 1 ] && echo 8 || echo 20)}" "${PERSON_SECS:=$([ "$SMALL" = 1 ] && echo 4 || echo 10)}"
peer_cgit_start "$CGITRC"
SHELLAC_RENDER=1
render_lines
extra=()
[ -z "${SHELLAC_CONF:-}" ] || read -r -a extra <<<"$SHELLAC_CONF"
PEER_SHELLAC_ADMIN=1 peer_shellac_start "$SHELLAC" "$CGIT_PORT" "${RENDER_LINES[@]}" "${extra[@]}"
peer_varnish_start "$CGIT_PORT"
BENCH_LABEL[cgit]="cgit direct" BENCH_LABEL[shellac]="shellac (renders)" BENCH_LABEL[varnish]="varnish -> cgit"
declare -gA FLOOD_PORT=([cgit]=$CGIT_PORT [shellac]=$SHELLAC_PORT [varnish]=$VARNISH_PORT)
SHELLAC_DIED=""
# Cold commit pages of the base repository, seeded order: the person's pages (two lists: alone and
# under the flood) and the crawler's are disjoint; every target gets the same lists (each server
# is cold for them: shellac's and Varnish's stores are their own).
base=$(sed -n 's/^repo\.url=//p' "$CGITRC" | head -n1)
git -C "$BASE_REPO" rev-list --all | awk -v seed="$SEED" 'BEGIN { srand(seed) } { print rand() "\t" $0 }' |
  sort -k1,1 | cut -f2 | sed "s|^|/$base/commit/?id=|" >"$BENCH_TMP/flood-all.txt"
head -n 400 "$BENCH_TMP/flood-all.txt" >"$BENCH_TMP/flood-person-quiet.txt"
sed -n '401,800p' "$BENCH_TMP/flood-all.txt" >"$BENCH_TMP/flood-person-flood.txt"
tail -n +801 "$BENCH_TMP/flood-all.txt" >"$BENCH_TMP/flood-crawler.txt"
[ -s "$BENCH_TMP/flood-crawler.txt" ] || bench_die "flood: the base repository has too few commits"
FLOOD_HEADERS=""
if [ "$IDENTITY" != 1 ]; then FLOOD_HEADERS=$BENCH_TMP/flood-headers.txt; echo "Accept-Encoding: gzip" >"$FLOOD_HEADERS"; fi
head=$(git -C "$BASE_REPO" rev-parse HEAD)
declare -gA TARGET_URL=()
for t in cgit shellac varnish; do
  TARGET_URL[$t]="http://127.0.0.1:${FLOOD_PORT[$t]}"
  check_target "$t" "/$base/commit/?id=$head"
done
quiet_wait || true
targets=(shellac cgit varnish) metrics=$RAW/flood-metrics.txt
for t in "${targets[@]}"; do
  flood_phase "$t" quiet "$BENCH_TMP/flood-person-quiet.txt"
  flood_phase "$t" flood "$BENCH_TMP/flood-person-flood.txt"
  if [ "$t" = shellac ]; then
    bench_alive "$SHELLAC_PID" || SHELLAC_DIED="shellac (pid $SHELLAC_PID) exited during the run"
    curl -sS --max-time 10 "http://127.0.0.1:$SHELLAC_ADMIN_PORT/metrics" 2>/dev/null |
      grep -E '^shellac_render_(queue|refused|clients|largest|threads)' >"$metrics" || true
    [ -z "$SHELLAC_DIED" ] && bench_stop "$SHELLAC_PID" 35
  fi
done
# The same two phases with another shellac binary (FLOOD_BASELINE_BIN: e.g. a build from before the
# render queue), for the throughput it had; its own port, after the others.
if [ -n "${FLOOD_BASELINE_BIN:-}" ]; then
  PEER_SHELLAC_ADMIN=1 peer_shellac_start "$FLOOD_BASELINE_BIN" "$CGIT_PORT" "${RENDER_LINES[@]}" "${extra[@]}"
  FLOOD_PORT[baseline]=$SHELLAC_PORT
  BENCH_LABEL[baseline]="shellac baseline ($("$FLOOD_BASELINE_BIN" --version 2>&1 | head -n1), FLOOD_BASELINE_BIN)"
  TARGET_URL[baseline]="http://127.0.0.1:$SHELLAC_PORT"
  flood_phase baseline quiet "$BENCH_TMP/flood-person-quiet.txt"
  flood_phase baseline flood "$BENCH_TMP/flood-person-flood.txt"
  bench_stop "$SHELLAC_PID" 35
  targets+=(baseline)
fi
bench_stop "$VARNISH_PID" 15
peer_origin_idle 180 || true
bench_stop "$CGIT_PID" 15
for t in "${targets[@]}"; do bench_meta "targets[]" "$t"; done
bench_meta flood_conns "$FLOOD_CONNS"
bench_meta flood_secs "$FLOOD_SECS"
bench_meta person_secs "$PERSON_SECS"
bench_meta crawler_urls "$(wc -l <"$BENCH_TMP/flood-crawler.txt")"
bench_meta base_repo "$base"
rm -f "$BENCH_TSV"   # no wrk sweep
bench_report
[ -z "$SHELLAC_DIED" ]
