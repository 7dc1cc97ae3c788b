#!/usr/bin/env bash
# bench/scenarios/hot.sh: ten commit pages over and over (a fully cached working set): cgit direct,
# shellac rendering (the corpus' cgitrc imported: a frame around the stored diff fragment on a
# page's first request, then the page kept whole by its page memo; everything else -> cgit),
# Varnish -> cgit and nginx serving the same pages as static files (the ceiling). Run through
# bench/run.sh hot.
set -euo pipefail
source "$(dirname "$0")/../lib.sh"
SHELLAC_RENDER=1

forge_before_sweep() {  # no warm pass: the first warm-up round stores the ten pages' fragments
  :
}

forge_extra_targets() {  # the hot pages saved from cgit, served by nginx (+ precompressed .gz)
  local www=$BENCH_TMP/static i=0 p
  mkdir -p "$www/hot"
  chmod 755 "$www" "$www/hot"
  : >"$BENCH_TMP/lists/hot-static.txt"
  while read -r p; do
    i=$((i + 1))
    curl -sS --max-time 60 -o "$www/hot/$i.html" "${TARGET_URL[cgit]}$p&bench=static" || bench_die "could not fetch $p"
    gzip -6 -k -n "$www/hot/$i.html"
    echo "/hot/$i.html" >>"$BENCH_TMP/lists/hot-static.txt"
  done <"$BENCH_TMP/lists/hot.txt"
  chmod 644 "$www"/hot/*
  peer_nginx_static_start "$www" gzip_static
  curl -sS --max-time 5 -H 'Accept-Encoding: gzip' -D - -o /dev/null "http://127.0.0.1:$NGINX_PORT/hot/1.html" |
    grep -qi '^content-encoding: gzip' || bench_log "nginx static: gzip_static not in effect"
  TARGET_URL[nginx]="http://127.0.0.1:$NGINX_PORT"
  bench_watch nginx "$NGINX_PID"
  BENCH_LABEL[nginx]="nginx static (ceiling)"
  TARGETS+=(nginx)
  EXTRA_PEERS=(nginx)
}

forge_run hot hot hot.lua
