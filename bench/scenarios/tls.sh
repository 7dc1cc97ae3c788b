#!/usr/bin/env bash
# bench/scenarios/tls.sh: the cached ESI page over HTTPS with keep-alive, shellac's listen-tls vs
# hitch -> Varnish; then new TLS connections/s, full handshakes and resumed sessions (openssl
# s_time). Run through bench/run.sh tls; raw results -> OUT/raw/tls/ (points.tsv, handshakes.tsv).
set -euo pipefail
source "$(dirname "$0")/../lib.sh"

esi_setup tls tls
peer_hitch_start "$VARNISH_PORT"
SWEEP_LIVE+=("hitch=$HITCH_PID")
o=https://127.0.0.1
if [ -n "$SHELLAC_TLS_PORT" ]; then
  esi_add_target shellac "shellac (TLS, ESI)" "$o:$SHELLAC_TLS_PORT/page/commit.html" "$PAGES/expected/commit.html" \
    "$SHELLAC_PID" "$NGINX_PID" -- -k
else
  esi_no_target shellac "shellac (TLS, ESI)" "${SHELLAC_NOTES[-1]}"
fi
esi_add_target hitch "hitch -> varnish (ESI)" "$o:$HITCH_PORT/page/commit.html" "$PAGES/expected/commit.html" \
  "$HITCH_PID" "$VARNISH_PID" "$NGINX_PID" -- -k
quiet_wait || true
sweep
# new connections: full handshakes and resumed sessions, one after the other (openssl s_time)
: >"$RAW/handshakes.tsv"   # target mode connections resumed wall_ns
for t in "${TARGETS[@]}"; do
  port=""
  case $t in shellac) port=$SHELLAC_TLS_PORT ;; hitch) port=$HITCH_PORT ;; esac
  [ -n "$port" ] || continue
  for mode in new reuse; do
    r=$(bench_handshakes "127.0.0.1:$port" "$DURATION" "$mode")
    read -r conns resumed wall <<<"${r:-0 0 0}"
    printf '%s\t%s\t%s\t%s\t%s\n' "$t" "$mode" "$conns" "$resumed" "$wall" >>"$RAW/handshakes.tsv"
    bench_log "handshakes $t $mode: ${r:-failed}"
  done
done
esi_stop
for t in "${TARGETS[@]}"; do bench_meta "targets[]" "$t"; done
bench_report
[ -z "$SHELLAC_DIED" ]
