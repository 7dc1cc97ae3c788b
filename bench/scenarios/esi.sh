#!/usr/bin/env bash
# bench/scenarios/esi.sh: pages with 1, 10 and 100 includes from cache, shellac vs Varnish (ESI); a
# page whose 10 includes take SLOW_DELAY_MS each at the origin (not cacheable), at levels SLOW_SWEEP.
# Run through bench/run.sh esi; raw results -> OUT/raw/esi/.
set -euo pipefail
source "$(dirname "$0")/../lib.sh"
SLOW_DELAY_MS=50        # what each slow include costs at the origin
SLOW_SWEEP=1,4          # levels of the slow-include page

esi_setup esi slow
o=http://127.0.0.1
for n in 1 10 100; do
  esi_add_target "shellac-i$n" "shellac, $n include$([ "$n" = 1 ] || echo s)" "$o:$SHELLAC_PORT/page/inc-$n.html" \
    "$PAGES/expected/inc-$n.html" "$SHELLAC_PID" "$NGINX_PID"
  esi_add_target "varnish-i$n" "varnish, $n include$([ "$n" = 1 ] || echo s)" "$o:$VARNISH_PORT/page/inc-$n.html" \
    "$PAGES/expected/inc-$n.html" "$VARNISH_PID" "$NGINX_PID"
done
cached_targets=("${TARGETS[@]}")
TARGETS=()
esi_add_target shellac-slow "shellac, 10 slow includes" "$o:$SHELLAC_PORT/page/slow-10.html" \
  "$PAGES/expected/slow-10.html" "$SHELLAC_PID" "$NGINX_PID" "$SLOW_PID"
esi_add_target varnish-slow "varnish, 10 slow includes" "$o:$VARNISH_PORT/page/slow-10.html" \
  "$PAGES/expected/slow-10.html" "$VARNISH_PID" "$NGINX_PID" "$SLOW_PID"
slow_targets=("${TARGETS[@]}")
quiet_wait || true
TARGETS=("${cached_targets[@]}")
sweep
remeasured=$REMEASURED
# slow includes: every page request fetches its 10 includes (no-store), SLOW_DELAY_MS each at the origin
TARGETS=("${slow_targets[@]}") SWEEP=$SLOW_SWEEP BENCH_DURATION=$((DURATION * 2))
sweep
REMEASURED="$remeasured$REMEASURED"
esi_stop
for t in "${cached_targets[@]}"; do bench_meta "cached_targets[]" "$t"; done
for t in "${slow_targets[@]}"; do bench_meta "slow_targets[]" "$t"; done
bench_meta slow_delay_ms "$SLOW_DELAY_MS"
bench_meta slow_sweep "$SLOW_SWEEP"
bench_meta slow_duration "$BENCH_DURATION"
bench_report
[ -z "$SHELLAC_DIED" ]
