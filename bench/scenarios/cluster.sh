#!/usr/bin/env bash
# bench/scenarios/cluster.sh: more than one machine (issue 17), on loopback. HAProxy
# (conf/haproxy.cfg.example: consistent hashing on id=) in front of 3 shellac nodes sharing
# fragments through 2 memcached servers, against 3 independent nodes (no shared tier) behind HAProxy
# round-robin. A crawler (bench/wrk/cluster_crawl.py) walks unique commits, each asked in 3 repositories
# of the fork farm; per setup: pages/s, p50/p99, and diff fragments rendered per unique fragment (from
# the nodes' /metrics). Then, on the cluster, a new walk with one node killed (SIGKILL) a third of the
# way in: failed requests at the client, fragments the survivors rendered. Then one node stopped
# (SIGTERM: its store-snapshot= is written) and started again: time until its first 1,000 commit pages
# are served with no fragment rendered. Run through bench/run.sh cluster; raw results ->
# OUT/raw/cluster/ (cluster.tsv, one row per phase).
set -euo pipefail
source "$(dirname "$0")/../lib.sh"

begin cluster
bench_need haproxy:haproxy memcached:memcached curl:curl
corpus_prepare
shellac_binary
UNIQUE=${CLUSTER_COMMITS:-600}   # unique commits per walk
CONNS=${CLUSTER_CONNS:-16}
mapfile -t REPOS < <(sed -n 's/^repo.url=//p' "$CGITRC")
mapfile -t SHAS < <(git -C "$BASE_REPO" rev-list --no-merges --max-count=$((UNIQUE * 2)) "$HEAD_BRANCH")
[ "${#SHAS[@]}" -ge $((UNIQUE * 2)) ] || bench_die "the base has fewer than $((UNIQUE * 2)) commits (not merges) on $HEAD_BRANCH"
bench_meta cluster.unique "$UNIQUE"
bench_meta cluster.conns "$CONNS"
bench_meta cluster.repos "${#REPOS[@]}"
bench_meta cluster.versions "$(haproxy -v 2>&1 | head -n1); $(memcached -V 2>&1)"

# A walk: commits FROM..FROM+N-1, each in 3 repositories (base and two forks, picked by the seed),
# shuffled so the 3 views of one commit come at different times.
walk() {  # FILE FROM N
  local i r out=$1
  : >"$out.tmp"
  for ((i = $2; i < $2 + $3; i++)); do
    for r in 0 $((1 + (i * 7 + SEED) % (${#REPOS[@]} - 1))) $((1 + (i * 13 + SEED + 3) % (${#REPOS[@]} - 1))); do
      printf '/%s/commit/?id=%s\n' "${REPOS[$r]}" "${SHAS[$i]}" >>"$out.tmp"
    done
  done
  shuf --random-source=<(yes "$SEED") "$out.tmp" >"$out"
  rm -f "$out.tmp"
}
walk "$BENCH_TMP/walk-a.txt" 0 "$UNIQUE"
walk "$BENCH_TMP/walk-b.txt" "$UNIQUE" "$UNIQUE"
# The restart's pages: commits of walk A in the base and in the first fork (their fragments are what
# the cluster held).
for r in 0 1; do
  for ((i = 0; i < UNIQUE; i++)); do printf '/%s/commit/?id=%s\n' "${REPOS[$r]}" "${SHAS[$i]}"; done
done >"$BENCH_TMP/restart.txt"

declare -a NODE_PID NODE_PORT NODE_ADMIN
MC=()
start_memcached() {
  local i port
  for i in 1 2; do
    port=$(bench_free_port)
    bench_start "memcached$i" "$BENCH_TMP/memcached$i.log" memcached -l 127.0.0.1 -p "$port" -U 0 -m 256 -t 1 -u root
    bench_wait_listen "$port" 10 "$BENCH_LAST_PID" || bench_die "memcached $i did not start"
    MC+=("127.0.0.1:$port")
  done
}
node_config() {  # I EXTRA-LINES -> writes $BENCH_TMP/node$I.conf
  local i=$1
  [ -n "${NODE_PORT[$i]:-}" ] || { NODE_PORT[$i]=$(bench_free_port); NODE_ADMIN[$i]=$(bench_free_port); }
  printf '%s\n' "listen=127.0.0.1:${NODE_PORT[$i]}" "admin-listen=127.0.0.1:${NODE_ADMIN[$i]}" "threads=2" \
    "render-threads=2" "access-log=off" "cache-size=512M" "cgitrc=$CGITRC" "trusted-proxy=127.0.0.1" "$2" \
    >"$BENCH_TMP/node$i.conf"
}
start_node() {  # I
  local i=$1
  bench_start "node$i" "$BENCH_TMP/node$i.log" "$SHELLAC" -c "$BENCH_TMP/node$i.conf"
  NODE_PID[$i]=$BENCH_LAST_PID
  bench_wait_log "$BENCH_TMP/node$i.log" 'shellac: ready' 120 "$BENCH_LAST_PID" || bench_die "node $i did not start"
}
HAPROXY_PID=""
start_haproxy() {  # consistent|roundrobin
  local port cfg=$BENCH_TMP/haproxy.cfg
  port=$(bench_free_port)
  HAPROXY_PORT=$port
  awk -v port="$port" -v mode="$1" -v ports="${NODE_PORT[1]} ${NODE_PORT[2]} ${NODE_PORT[3]}" \
    -v admins="${NODE_ADMIN[1]} ${NODE_ADMIN[2]} ${NODE_ADMIN[3]}" '
    BEGIN { split(ports, p, " "); split(admins, a, " ") }
    /^    log / { next }
    /^    maxconn / { print "    maxconn 1000"; next }
    /^    bind / { print "    bind 127.0.0.1:" port; next }
    /^    balance / { print (mode == "roundrobin" ? "    balance roundrobin" : $0); next }
    /^    server / { if (!done) for (i = 1; i <= 3; i++) print "    server node" i " 127.0.0.1:" p[i] " port " a[i]; done = 1; next }
    { print }' "$BENCH_REPO/conf/haproxy.cfg.example" >"$cfg"
  bench_start haproxy "$BENCH_TMP/haproxy.log" haproxy -db -f "$cfg"
  HAPROXY_PID=$BENCH_LAST_PID
  bench_wait_listen "$port" 10 "$HAPROXY_PID" || bench_die "haproxy did not start"
  # every node up in HAProxy's eyes before the walk (its first checks)
  local n
  for n in $(seq 50); do curl -fsS -o /dev/null "http://127.0.0.1:$port/${REPOS[0]}/" 2>/dev/null && break; sleep 0.1; done
}
stop_all() {
  local i
  [ -n "$HAPROXY_PID" ] && bench_stop "$HAPROXY_PID" 5
  HAPROXY_PID=""
  for i in 1 2 3; do [ -n "${NODE_PID[$i]:-}" ] && bench_alive "${NODE_PID[$i]}" && bench_stop "${NODE_PID[$i]}" 30; done
  return 0
}
metric() {  # I NAME [LABEL-REGEX]  -> the sum of NAME's samples on node I (0 when unreachable)
  curl -fsS --max-time 5 "http://127.0.0.1:${NODE_ADMIN[$1]}/metrics" 2>/dev/null |
    awk -v n="$2" -v l="${3:-}" '($1 == n || index($1, n "{") == 1) && (l == "" || index($1, l)) { s += $2 } END { printf "%d\n", s }'
}
frag_renders() {  # I -> diff fragments node I rendered so far
  metric "$1" shellac_renders_total 'kind="diff-fragment"'
}
crawl() {  # PHASE URLS [crawler args...] -> one row of cluster.tsv (renders filled by the caller)
  local phase=$1 urls=$2 out=$BENCH_TMP/crawl-$1.txt
  shift 2
  quiet_wait || true
  timeout -k 5 900 python3 "$BENCH_DIR/wrk/cluster_crawl.py" --port "$HAPROXY_PORT" --urls "$urls" --conns "$CONNS" \
    $([ "$IDENTITY" = 1 ] || echo --gzip) "$@" >"$out" 2>&1 || bench_log "crawl $phase: exit $?"
  CRAWL=$(grep -m1 '^BENCH ' "$out" || true)
  [ -n "$CRAWL" ] || { cat "$out" >&2; bench_die "crawl $phase: no BENCH line"; }
  bench_log "crawl $phase: ${CRAWL#BENCH }"
}
kv() { local k; for k in ${CRAWL#BENCH }; do [ "${k%%=*}" = "$1" ] && echo "${k#*=}"; done; }
tsv=$RAW/cluster.tsv
# phase requests errors statuses seconds p50_us p99_us unique renders note
row() {  # PHASE UNIQUE RENDERS NOTE
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$1" "$(kv requests)" "$(kv errors)" "$(kv statuses)" \
    "$(kv duration_us)" "$(kv p50_us)" "$(kv p99_us)" "$2" "$3" "$4" >>"$tsv"
}
: >"$tsv"

# --- 1. the cluster: consistent hashing, shared tier, snapshots -----------------------------------
start_memcached
l2="l2=memcached://${MC[0]},${MC[1]}"
for i in 1 2 3; do node_config "$i" "$l2
store-snapshot=$BENCH_TMP/node$i.snapshot"; start_node "$i"; done
start_haproxy consistent
crawl cluster "$BENCH_TMP/walk-a.txt"
r=0; for i in 1 2 3; do r=$((r + $(frag_renders "$i"))); done
row cluster "$UNIQUE" "$r" "3 nodes, HAProxy hash on id=, l2 on 2 memcached"

# --- 2. a node killed mid-walk (new commits) ------------------------------------------------------
before=(0 "$(frag_renders 1)" "$(frag_renders 2)" "$(frag_renders 3)")
crawl kill "$BENCH_TMP/walk-b.txt" --kill-pid "${NODE_PID[2]}" --kill-after "$UNIQUE"
r=0; for i in 1 3; do r=$((r + $(frag_renders "$i") - before[i])); done
row kill "$UNIQUE" "$r" "node2 killed (SIGKILL) after $UNIQUE of $((UNIQUE * 3)) requests; renders: nodes 1 and 3 only"
bench_alive "${NODE_PID[2]}" && bench_die "node2 survived its SIGKILL"
NODE_PID[2]=""

# --- 3. restart from the snapshot --------------------------------------------------------------
# node1 stops gracefully (its snapshot written) and starts again; its first 1,000 commit pages asked
# directly (no HAProxy): the frames are rendered, the fragments must come from the snapshot (or l2).
bench_stop "${NODE_PID[1]}" 60
snap_line=$(grep -m1 'store snapshot .* written' "$BENCH_TMP/node1.log" || true)
bench_meta cluster.snapshot_written "$snap_line"
cp "$BENCH_TMP/node1.log" "$BENCH_TMP/node1-first.log"
t0=$(date +%s%N)
start_node 1
t_ready=$((($(date +%s%N) - t0) / 1000))
bench_meta cluster.snapshot_read "$(grep -m1 'store snapshot .* read' "$BENCH_TMP/node1.log" || true)"
saved=$HAPROXY_PORT; HAPROXY_PORT=${NODE_PORT[1]}
crawl restart "$BENCH_TMP/restart.txt" --limit 1000
HAPROXY_PORT=$saved
t_done=$((($(date +%s%N) - t0) / 1000))
hits=$(metric 1 shellac_esi_includes_hit_total)
l2hits=$(metric 1 shellac_l2_hits_total)
row restart 1000 "$(frag_renders 1)" "node1 restarted from its snapshot: ready after $((t_ready / 1000)) ms, 1,000 pages done $((t_done / 1000)) ms after the start; includes from the store $hits, from l2 $l2hits"
bench_meta cluster.restart_ready_us "$t_ready"
bench_meta cluster.restart_1000_us "$t_done"
stop_all
for i in 1 2; do bench_stop "$(cat "$BENCH_TMP/memcached$i.pid")" 5; done

# --- 4. the peer: 3 independent nodes, HAProxy round-robin ----------------------------------------
for i in 1 2 3; do node_config "$i" ""; start_node "$i"; done
start_haproxy roundrobin
crawl independent "$BENCH_TMP/walk-a.txt"
r=0; for i in 1 2 3; do r=$((r + $(frag_renders "$i"))); done
row independent "$UNIQUE" "$r" "3 nodes, no shared tier, HAProxy round-robin"
stop_all
rm -f "$BENCH_TSV"
bench_report
