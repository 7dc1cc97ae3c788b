#!/usr/bin/env bash
# bench/scenarios/cluster.sh: more than one machine (issue 17), on loopback. HAProxy
# (conf/haproxy.cfg.example: consistent hashing on id=) in front of 3 shellac nodes sharing
# fragments through 2 memcached servers, against 3 independent nodes (no shared tier) behind HAProxy
# round-robin and 3 Varnish 7.1 nodes behind HAProxy round-robin, each in front of cgit (one
# lighttpd+cgit, the corpus' cgitrc). A crawler (bench/wrk/cluster_crawl.py) walks unique commits, each
# asked in 3 repositories of the fork farm; per setup: pages/s, p50/p99, and diff fragments rendered per
# unique fragment (shellac: the nodes' /metrics; Varnish: the commit pages cgit served, from lighttpd's
# access log: each renders the diff). Then, on the cluster, a new walk with one node killed (SIGKILL) a
# third of the way in: failed requests at the client, fragments the survivors rendered, and the exact
# check: from the nodes' l2-trace= files, every render by a survivor after the kill classed by whether
# memcached already held the fragment when the survivor looked it up (bench/wrk/cluster_trace.py;
# memcached's own key listing confirms the writes). Then one node stopped (SIGTERM: its
# store-snapshot= is written) and started again: time until its first 1,000 commit pages are served
# with no fragment rendered. Run through bench/run.sh cluster; raw results -> OUT/raw/cluster/
# (cluster.tsv, one row per phase; kill-check.txt and kill-check-details.txt; the traces of the kill
# walk, gzipped).
set -euo pipefail
source "$(dirname "$0")/../lib.sh"

begin cluster
bench_need haproxy:haproxy memcached:memcached curl:curl
peers_need
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
start_haproxy() {  # consistent|roundrobin|varnish  (nodes: NODE_PORT, checks on NODE_ADMIN's /health;
  # varnish: VARNISH_PORTS, round-robin, a TCP connect check: Varnish has no /health of its own)
  local port cfg=$BENCH_TMP/haproxy.cfg ports admins
  port=$(bench_free_port)
  HAPROXY_PORT=$port
  if [ "$1" = varnish ]; then
    ports="${VARNISH_PORTS[*]}" admins="${VARNISH_PORTS[*]}"
  else
    ports="${NODE_PORT[1]} ${NODE_PORT[2]} ${NODE_PORT[3]}" admins="${NODE_ADMIN[1]} ${NODE_ADMIN[2]} ${NODE_ADMIN[3]}"
  fi
  awk -v port="$port" -v mode="$1" -v ports="$ports" -v admins="$admins" '
    BEGIN { split(ports, p, " "); split(admins, a, " ") }
    /^    log / { next }
    /^    maxconn / { print "    maxconn 1000"; next }
    /^    bind / { print "    bind 127.0.0.1:" port; next }
    /^    balance / { print (mode != "consistent" ? "    balance roundrobin" : $0); next }
    /^    (option httpchk|http-check) / { if (mode == "varnish") next }
    /^    default-server / { if (mode == "varnish") sub(/ port [0-9]+/, "") }
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
metadump() {  # -> every key memcached servers MC hold (lru_crawler metadump all: "key=K exp=..." lines)
  local m
  for m in "${MC[@]}"; do
    python3 - "${m%:*}" "${m#*:}" <<'PY'
import socket, sys
s = socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=30)
s.sendall(b"lru_crawler metadump all\r\n")
buf = b""
while not buf.endswith(b"END\r\n"):
    chunk = s.recv(65536)
    if not chunk:
        break
    buf += chunk
sys.stdout.write(buf.decode("utf-8", "replace").replace("\r\n", "\n"))
PY
  done
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
kv() { local k; for k in ${CRAWL#BENCH }; do [ "${k%%=*}" = "$1" ] && echo "${k#*=}"; done; return 0; }
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
l2-trace=$BENCH_TMP/node$i.trace
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
# The exact check: the survivors' renders after the kill against what memcached held (the traces'
# acknowledged writes; memcached's own listing, taken once the writes of the walk are done, confirms
# that every acknowledged write is there).
kill_us=$(kv kill_us) start_us=$(kv start_us) end_us=$(kv end_us)
[ -n "$kill_us" ] || bench_die "crawl kill: no kill time (node2 was not killed?)"
for n in $(seq 50); do  # the survivors' queued writes: wait until their put counts stop moving
  p=$(($(metric 1 shellac_l2_puts_total) + $(metric 3 shellac_l2_puts_total)))
  [ "$p" = "${lastp:-}" ] && break
  lastp=$p; sleep 0.2
done
metadump >"$BENCH_TMP/metadump.txt"
check=$(python3 "$BENCH_DIR/wrk/cluster_trace.py" --killed node2 --kill-us "$kill_us" --start-us "$start_us" \
  --until-us "$end_us" --metadump "$BENCH_TMP/metadump.txt" --details "$RAW/kill-check-details.txt" \
  --trace node1="$BENCH_TMP/node1.trace" --trace node2="$BENCH_TMP/node2.trace" --trace node3="$BENCH_TMP/node3.trace") ||
  bench_die "cluster_trace.py failed"
printf '%s\n' "$check" >"$RAW/kill-check.txt"
bench_log "kill check: ${check#BENCH }"
bench_meta cluster.kill_check "${check#BENCH }"
bench_meta cluster.kill_times "start_us=$start_us kill_us=$kill_us end_us=$end_us"
for i in 1 2 3; do gzip -9c "$BENCH_TMP/node$i.trace" >"$RAW/node$i.trace.gz"; done

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

# --- 5. the Varnish peer: 3 Varnish 7.1 nodes, HAProxy round-robin, each in front of cgit ------------
# One lighttpd+cgit (the corpus' cgitrc) is the origin of all three, as the shellac nodes share the
# repositories. Every URL of the walk is new (but when a commit's two forks are the same one), so each
# is a miss at the Varnish it reaches: cgit renders the commit page, diff included. Renders = commit
# pages lighttpd served during the walk (its access log, read once lighttpd stopped);
# MAIN.backend_req of the three Varnish instances says the same from their side.
peer_cgit_start "$CGITRC"
VARNISH_PORTS=() VARNISH_DIRS=()
for i in 1 2 3; do
  peer_varnish_start "$CGIT_PORT" "varnish$i"
  VARNISH_PORTS+=("$VARNISH_PORT") VARNISH_DIRS+=("$VARNISH_DIR")
done
start_haproxy varnish
commit_fetches() { grep -c '/commit/?id=' "$CGIT_ACCESS_LOG" || true; }
c0=$(commit_fetches)   # 0: nothing asked for a commit page yet (HAProxy's first check asks /REPO/)
crawl varnish "$BENCH_TMP/walk-a.txt"
breq=0
for d in "${VARNISH_DIRS[@]}"; do
  v=$(varnishstat -n "$d/work" -1 -f MAIN.backend_req 2>/dev/null | awk '{ print $2 }')
  breq=$((breq + ${v:-0}))
done
# lighttpd writes its access log through a buffer flushed when it likes: stopped, it has written all
bench_stop "$HAPROXY_PID" 5
HAPROXY_PID=""
bench_stop "$CGIT_PID" 15
c1=$(commit_fetches)
pages=$(sort -u "$BENCH_TMP/walk-a.txt" | wc -l)
row varnish "$UNIQUE" "$((c1 - c0))" "3 Varnish 7.1 behind HAProxy round-robin, each -> lighttpd+cgit; renders = commit pages cgit served (lighttpd's log) for $pages unique pages; MAIN.backend_req of the 3: $breq"
bench_meta cluster.unique_pages "$pages"
bench_meta cluster.varnish_backend_req "$breq"
rm -f "$BENCH_TSV"
bench_report
