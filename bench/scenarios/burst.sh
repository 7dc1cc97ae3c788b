#!/usr/bin/env bash
# bench/scenarios/burst.sh: a thundering herd: N clients send the same request for one cold commit
# page at the same instant (bench/wrk/burst.py), to cgit direct, shellac rendering (the corpus'
# cgitrc imported: a frame per request, the diff fragment rendered once for the herd) and Varnish ->
# cgit; how long until all are answered, how many requests reached cgit and what shellac rendered.
# Run through bench/run.sh burst; raw results -> OUT/raw/burst/ (burst.tsv, one row per N and
# target; burst-renders.tsv, shellac's render counts before and after each of its bursts).
set -euo pipefail
source "$(dirname "$0")/../lib.sh"
SHELLAC_RENDER=1

begin burst
peers_need
corpus_prepare
make_lists
start_targets
check="$(head -n1 "$BENCH_TMP/lists/hot.txt")&bench=check"
for t in "${TARGETS[@]}"; do check_target "$t" "$check"; done
probe_shellac "$(head -n1 "$BENCH_TMP/lists/hot.txt")"
tsv=$RAW/burst.tsv
: >"$tsv"
: >"$RAW/burst-renders.tsv"
hdr=()
[ "$IDENTITY" = 1 ] || hdr=(--header 'Accept-Encoding: gzip')
quiet_wait || true
i=0
for n in ${BURST//,/ }; do
  i=$((i + 1))
  path=$(sed -n "${i}p" "$BENCH_TMP/lists/burst.txt")
  [ -n "$path" ] || bench_die "not enough burst URLs"
  for t in "${TARGETS[@]}"; do
    peer_origin_idle 120 || bench_log "cgit processes still running before the $t burst of $n"
    sleep 1
    out=$BENCH_TMP/burst-$t-n$n.txt
    ticks0=0
    for p in ${BENCH_WATCH[$t]}; do ticks0=$((ticks0 + $(bench_cpu_ticks "$p"))); done
    m0=$(bench_machine_ticks)
    [ "$t" = shellac ] && renders0=$(render_counts)
    mark "$t-c$n-start"
    timeout -k 5 $((BURST_TIMEOUT + 60)) python3 "$BENCH_DIR/wrk/burst.py" --port "${TARGET_URL[$t]##*:}" \
      --path "$path" --clients "$n" --timeout "$BURST_TIMEOUT" "${hdr[@]}" >"$out" 2>&1 ||
      bench_log "burst $t n=$n: exit $?"
    peer_origin_idle "$BURST_TIMEOUT" || true   # the herd's cgit processes finish before the end mark
    mark "$t-c$n-end"
    m1=$(bench_machine_ticks)
    [ "$t" = shellac ] && printf '%s\t%s\t%s\n' "$n" "$renders0" "$(render_counts)" >>"$RAW/burst-renders.tsv"
    ticks1=0
    for p in ${BENCH_WATCH[$t]}; do ticks1=$((ticks1 + $(bench_cpu_ticks "$p"))); done
    line=$(grep -m1 '^BENCH ' "$out" || true)
    [ -n "$line" ] || { cat "$out" >&2; bench_log "burst $t n=$n: no BENCH line"; continue; }
    declare -A v=()
    for kv in ${line#BENCH } $(grep -m1 '^BENCH_BURST ' "$out" | cut -d' ' -f2-); do v[${kv%%=*}]=${kv#*=}; done
    errs=$((v[err_connect] + v[err_read] + v[err_write] + v[err_status] + v[err_timeout])) detail=""
    for k in connect read write status timeout; do [ "${v[err_$k]}" != 0 ] && detail+="$k ${v[err_$k]}, "; done
    read -r b0 t0 <<<"$m0"
    read -r b1 t1 <<<"$m1"
    # target n answered errors detail statuses all_us p50_us p99_us spread_us server_ticks hz
    # machine_busy_ticks machine_ticks nproc (+ origin requests, added below)
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$t" "$n" "${v[requests]}" "$errs" \
      "${detail%, }" "${v[status]}" "${v[duration_us]}" "${v[p50_us]}" "${v[p99_us]}" "${v[spread_us]}" \
      "$((ticks1 - ticks0))" "$(getconf CLK_TCK)" "$((b1 - b0))" "$((t1 - t0))" "$(nproc)" >>"$tsv"
    bench_log "burst $t n=$n: answered ${v[requests]}, errors $errs, all in ${v[duration_us]} us, p50 ${v[p50_us]} us, p99 ${v[p99_us]} us"
    if ! bench_alive "$SHELLAC_PID" && [ -z "$SHELLAC_DIED" ]; then
      SHELLAC_DIED="shellac (pid $SHELLAC_PID) died during the $t burst of $n"; bench_log "$SHELLAC_DIED"
    fi
  done
done
stop_targets
add_origin_column "$tsv" 16   # requests that reached cgit during each burst (lighttpd's log between its marks)
rm -f "$BENCH_TSV"            # no wrk points
bench_report
[ -z "$SHELLAC_DIED" ]
