#!/usr/bin/env bash
# bench/scenarios/cached.sh: an ESI commit page from the store (a ~5 KB frame + one stored ~1.4 KB
# gzip fragment, gzip on the wire): shellac vs Varnish (ESI) vs nginx serving the assembled page;
# then the memory table (MEM_OBJECTS distinct fragment objects through each cache). Run through
# bench/run.sh cached; raw results -> OUT/raw/cached/ (points.tsv, memory.tsv).
set -euo pipefail
source "$(dirname "$0")/../lib.sh"

rss_kb() {  # PID -> resident KB of PID and its direct children
  local p s=0 v
  for p in $(bench_tree "$1"); do
    v=$(awk '/^VmRSS:/ { print $2 }' "/proc/$p/status" 2>/dev/null) && s=$((s + ${v:-0}))
  done
  echo "$s"
}

mem_load() {  # BASE-URL FIRST COUNT  GET /mem/FIRST.html ... one after the other, keep-alive
  local base=$1 first=$2 n=$3 cfg=$BENCH_TMP/mem-urls.cfg
  awk -v b="$base" -v f="$first" -v n="$n" 'BEGIN { for (i = f; i < f + n; i++) printf "url = \"%s/mem/%d.html\"\noutput = \"/dev/null\"\n", b, i }' >"$cfg"
  timeout -k 5 600 curl -sS --max-time 10 -H 'Accept-Encoding: gzip' -K "$cfg" || bench_log "mem_load $base: curl exit $?"
}

# The memory table: COUNT distinct URLs of the ~1.4 KB (gzip) fragment through shellac and Varnish;
# what each store says it holds before and after (shellac: /metrics shellac_cache_objects,
# shellac_cache_bytes, shellac_cache_body_bytes; Varnish: varnishstat MAIN.n_object, SMA.s0.g_bytes)
# and resident memory -> $RAW/memory.tsv "CACHE OBJ0 OBJ1 BYTES0 BYTES1 BODY0 BODY1 RSS0_KB RSS1_KB"
# (empty: not exported) and meta memory.*.
memory_table() {  # COUNT
  local n=$1 o0 o1 b0 b1 d0 d1 r0 r1 k0 k1 h0 h1 v0 v1 size gz
  read -r _ size gz < <(grep '^fragment ' "$PAGES/sizes.txt")
  bench_meta memory.objects "$n"
  bench_meta memory.fragment_bytes "$size"
  bench_meta memory.fragment_gzip "$gz"
  bench_log "memory: $n distinct fragment URLs through shellac"
  o0=$(peer_shellac_metric shellac_cache_objects); b0=$(peer_shellac_metric shellac_cache_bytes)
  d0=$(peer_shellac_metric shellac_cache_body_bytes); r0=$(rss_kb "$SHELLAC_PID")
  k0=$(peer_shellac_metric shellac_cache_key_bytes); h0=$(peer_shellac_metric shellac_cache_header_bytes)
  mem_load "http://127.0.0.1:$SHELLAC_PORT" 1 "$n"
  sleep 1
  o1=$(peer_shellac_metric shellac_cache_objects); b1=$(peer_shellac_metric shellac_cache_bytes)
  d1=$(peer_shellac_metric shellac_cache_body_bytes); r1=$(rss_kb "$SHELLAC_PID")
  k1=$(peer_shellac_metric shellac_cache_key_bytes); h1=$(peer_shellac_metric shellac_cache_header_bytes)
  printf 'shellac\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$o0" "$o1" "$b0" "$b1" "$d0" "$d1" "$r0" "$r1" >"$RAW/memory.tsv"
  bench_meta memory.shellac.key_before "$k0"
  bench_meta memory.shellac.key_after "$k1"
  bench_meta memory.shellac.header_before "$h0"
  bench_meta memory.shellac.header_after "$h1"
  bench_log "memory: $n distinct fragment URLs through varnish"
  v0=$(peer_varnish_stat MAIN.n_object SMA.s0.g_bytes); r0=$(rss_kb "$VARNISH_PID")
  mem_load "http://127.0.0.1:$VARNISH_PORT" 1 "$n"
  sleep 1
  v1=$(peer_varnish_stat MAIN.n_object SMA.s0.g_bytes); r1=$(rss_kb "$VARNISH_PID")
  val() { sed -n "s/.*$1=\([0-9]*\).*/\1/p" <<<"$2"; }
  printf 'varnish\t%s\t%s\t%s\t%s\t\t\t%s\t%s\n' "$(val MAIN.n_object "$v0")" "$(val MAIN.n_object "$v1")" \
    "$(val SMA.s0.g_bytes "$v0")" "$(val SMA.s0.g_bytes "$v1")" "$r0" "$r1" >>"$RAW/memory.tsv"
}

esi_setup cached
o=http://127.0.0.1
esi_add_target shellac "shellac (ESI)" "$o:$SHELLAC_PORT/page/commit.html" "$PAGES/expected/commit.html" "$SHELLAC_PID" "$NGINX_PID"
esi_add_target varnish "varnish (ESI)" "$o:$VARNISH_PORT/page/commit.html" "$PAGES/expected/commit.html" "$VARNISH_PID" "$NGINX_PID"
esi_add_target nginx "nginx static (assembled page)" "$o:$NGINX_PORT/static/commit.html" "$PAGES/expected/commit.html" "$NGINX_PID"
quiet_wait || true
sweep
memory_table "$MEM_OBJECTS"
esi_stop
for t in "${TARGETS[@]}"; do bench_meta "targets[]" "$t"; done
bench_report
[ -z "$SHELLAC_DIED" ]
