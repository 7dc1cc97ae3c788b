# shellcheck shell=bash
# bench/lib.sh: helpers shared by shellac's benchmark scenarios (bench/*.sh). Source it, don't run it.
#
# What a scenario gets from here:
#   bench_init NAME            temp dir ($BENCH_TMP) + EXIT/INT/TERM trap that stops every process
#                              started with bench_start (by pid) and removes the temp dir
#   bench_need CMD:PKG ...     installs the Debian packages whose command is missing (apt-get, sudo
#                              when not root)
#   bench_build_shellac        $SHELLAC_BIN, or `make -C REPO release` -> build-release/proxy/shellac
#   bench_free_port            a free loopback TCP port (never handed out twice in one run)
#   bench_start NAME LOG CMD.. starts CMD in the background, pid tracked -> $BENCH_LAST_PID
#   bench_stop PID [SECS]      TERM, wait, KILL after SECS (and the children it leaves behind)
#   bench_wait_listen PORT SECS [PID]   bench_wait_log FILE REGEX SECS [PID]
#   bench_watch TARGET PID..   processes whose CPU time is sampled while TARGET is measured
#   bench_point TARGET URL C   warm-up + measured wrk run; appends one row to $BENCH_TSV
#   bench_cpu_begin/_end T     CPU % of T's watched processes, the driver and everyone else over a window
#   bench_check_body URL FILE  one gzip GET, gunzipped, compared with FILE -> BENCH_CHECK_NOTE
#   bench_handshakes H:P S new|reuse   TLS connections/s for S seconds (openssl s_time)
#   bench_peak / bench_knee / bench_md_table / bench_plot   reading the rows back
#   bench_machine_line, bench_git_rev, bench_versions_* , bench_cmdline
#
# Rows of $BENCH_TSV (tab separated, one per measured point):
#   target conns rps p50_us p95_us p99_us max_us requests errors err_detail bytes_per_resp secs cpu
# Latencies are wrk's (microseconds, closed loop: a connection sends its next request when the
# previous answer arrived). errors = connect+read+write+status(>=400)+timeout.

BENCH_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
BENCH_REPO=$(cd "$BENCH_DIR/.." && pwd)
BENCH_TMP=""
BENCH_TSV=""
BENCH_KEEP_TMP=${BENCH_KEEP_TMP:-0}
BENCH_DURATION=${BENCH_DURATION:-5}   # seconds per measured point
BENCH_WARMUP=${BENCH_WARMUP:-1}       # seconds of discarded load before each point
BENCH_WRK_TIMEOUT=${BENCH_WRK_TIMEOUT:-5s}  # a request slower than this counts as a timeout error
BENCH_PIDS=()                         # started by bench_start, in start order
declare -A BENCH_PID_NAME=()
declare -A BENCH_WATCH=()             # target -> "pid pid ..." sampled for CPU during its runs
declare -A BENCH_LABEL=()             # target -> label used in tables and plots
BENCH_PORTS_GIVEN=" "
BENCH_LAST_PID=""
BENCH_SUDO=""
[ "$(id -u)" = 0 ] || BENCH_SUDO=sudo

bench_log() { printf '[%s] %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }
bench_die() { bench_log "error: $*"; exit 1; }

# ---------------------------------------------------------------------------------------------
# Setup and teardown

bench_init() {  # NAME
  BENCH_TMP=$(mktemp -d "${TMPDIR:-/tmp}/shellac-bench-$1.XXXXXX") || bench_die "mktemp failed"
  BENCH_TSV=$BENCH_TMP/results.tsv
  : >"$BENCH_TSV"
  trap 'bench_cleanup' EXIT
  trap 'bench_log "interrupted"; exit 130' INT
  trap 'bench_log "terminated"; exit 143' TERM
  bench_log "temp dir $BENCH_TMP"
}

bench_cleanup() {
  local rc=$? i
  trap - EXIT INT TERM
  for ((i = ${#BENCH_PIDS[@]} - 1; i >= 0; i--)); do
    [ -n "${BENCH_PIDS[i]}" ] && bench_stop "${BENCH_PIDS[i]}" 10
  done
  if [ -n "$BENCH_TMP" ] && [ -d "$BENCH_TMP" ]; then
    if [ "$rc" != 0 ] || [ "$BENCH_KEEP_TMP" = 1 ]; then
      bench_log "kept $BENCH_TMP (logs, configs, raw wrk output)"
    else
      rm -rf "$BENCH_TMP"
    fi
  fi
  exit "$rc"
}

bench_need() {  # CMD:PKG ...  (CMD may be an absolute path)
  local spec cmd pkg missing=()
  for spec in "$@"; do
    cmd=${spec%%:*} pkg=${spec#*:}
    command -v "$cmd" >/dev/null 2>&1 || [ -x "$cmd" ] || missing+=("$pkg")
  done
  [ ${#missing[@]} = 0 ] && return 0
  bench_log "installing ${missing[*]} (apt-get)"
  # Note: on a host that runs systemd, Debian's nginx package starts its own service on :80 when it
  # is installed. The benchmarks never use, start or stop it.
  local log=${BENCH_TMP:-/tmp}/apt.log
  { $BENCH_SUDO apt-get update -qq &&
    DEBIAN_FRONTEND=noninteractive $BENCH_SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
  } >"$log" 2>&1 || { tail -n 20 "$log" >&2; bench_die "apt-get install ${missing[*]} failed (log: $log)"; }
}

bench_build_shellac() {  # -> prints the binary's path
  if [ -n "${SHELLAC_BIN:-}" ]; then
    [ -x "$SHELLAC_BIN" ] || bench_die "SHELLAC_BIN=$SHELLAC_BIN is not executable"
    printf '%s\n' "$SHELLAC_BIN"
    return
  fi
  bench_log "building shellac: make -C $BENCH_REPO release"
  make -C "$BENCH_REPO" release >"$BENCH_TMP/build.log" 2>&1 || {
    tail -n 30 "$BENCH_TMP/build.log" >&2
    bench_die "make -C $BENCH_REPO release failed (log: $BENCH_TMP/build.log)"
  }
  [ -x "$BENCH_REPO/build-release/proxy/shellac" ] || bench_die "no build-release/proxy/shellac after make release"
  printf '%s\n' "$BENCH_REPO/build-release/proxy/shellac"
}

# ---------------------------------------------------------------------------------------------
# Processes

bench_start() {  # NAME LOGFILE CMD [ARG...]  -> BENCH_LAST_PID
  local name=$1 log=$2
  shift 2
  "$@" </dev/null >"$log" 2>&1 &
  BENCH_LAST_PID=$!
  BENCH_PIDS+=("$BENCH_LAST_PID")
  BENCH_PID_NAME[$BENCH_LAST_PID]=$name
  echo "$BENCH_LAST_PID" >"$BENCH_TMP/$name.pid"
  bench_log "started $name (pid $BENCH_LAST_PID): $*"
}

bench_alive() { kill -0 "$1" 2>/dev/null; }

bench_children() {  # PID -> its direct children's pids (read from /proc, no name matching)
  local stat rest ppid
  for stat in /proc/[0-9]*/stat; do
    { read -r rest <"$stat"; } 2>/dev/null || continue
    rest=${rest##*) }   # fields after "pid (comm) ": state ppid ...
    ppid=${rest#* } ppid=${ppid%% *}
    [ "$ppid" = "$1" ] && { stat=${stat#/proc/}; echo "${stat%/stat}"; }
  done
  return 0
}

bench_tree() {  # PID -> PID and its direct children
  echo "$1"
  bench_children "$1"
}

bench_stop() {  # PID [SECONDS]  TERM, then KILL (process and the children it had) after SECONDS
  local pid=$1 secs=${2:-10} name kids i
  name=${BENCH_PID_NAME[$pid]:-pid}
  for i in "${!BENCH_PIDS[@]}"; do [ "${BENCH_PIDS[i]}" = "$pid" ] && BENCH_PIDS[i]=""; done
  if bench_alive "$pid"; then
    kids=$(bench_tree "$pid" | tail -n +2 | tr '\n' ' ')
    kill -TERM "$pid" 2>/dev/null
    for ((i = 0; i < secs * 10; i++)); do bench_alive "$pid" || break; sleep 0.1; done
    if bench_alive "$pid"; then
      bench_log "$name (pid $pid) still running after ${secs}s: KILL"
      kill -KILL "$pid" $kids 2>/dev/null
    fi
  fi
  wait "$pid" 2>/dev/null && BENCH_STOP_RC=0 || BENCH_STOP_RC=$?
  bench_log "stopped $name (pid $pid, exit status $BENCH_STOP_RC)"
  return 0
}

bench_free_port() {  # -> a port in 20000-30999 that no socket on this host uses (ephemeral range
  # starts at 32768, so wrk's and the proxies' client sockets never take it first)
  local used port tries
  local sl addr rest
  used=" "
  while read -r sl addr rest; do
    [[ $addr == *:* ]] && used+="$((16#${addr##*:})) "
  done < <(cat /proc/net/tcp /proc/net/tcp6 2>/dev/null)
  for ((tries = 0; tries < 1000; tries++)); do
    port=$((20000 + RANDOM % 11000))
    [[ $used == *" $port "* || $BENCH_PORTS_GIVEN == *" $port "* ]] && continue
    BENCH_PORTS_GIVEN+="$port "
    echo "$port"
    return 0
  done
  bench_die "no free port found"
}

bench_wait_listen() {  # PORT SECONDS [PID]  until 127.0.0.1:PORT accepts a connection
  local port=$1 secs=$2 pid=${3:-} i
  for ((i = 0; i < secs * 20; i++)); do
    if [ -n "$pid" ] && ! bench_alive "$pid"; then return 1; fi
    (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && return 0
    sleep 0.05
  done
  return 1
}

bench_wait_log() {  # FILE EXTENDED-REGEX SECONDS [PID]  until a line of FILE matches
  local file=$1 re=$2 secs=$3 pid=${4:-} i
  for ((i = 0; i < secs * 20; i++)); do
    grep -Eq -- "$re" "$file" 2>/dev/null && return 0
    if [ -n "$pid" ] && ! bench_alive "$pid"; then return 1; fi
    sleep 0.05
  done
  return 1
}

bench_check_get() {  # URL EXPECTED-BODY-FILE [HEADER-REGEX...]  one GET: 200, same body, headers
  local url=$1 want=$2 hre out=$BENCH_TMP/check.body hdr=$BENCH_TMP/check.head code
  shift 2
  code=$(curl -sS --max-time 5 -o "$out" -D "$hdr" -w '%{http_code}' "$url") || {
    bench_log "GET $url failed"; return 1; }
  [ "$code" = 200 ] || { bench_log "GET $url: status $code"; cat "$hdr" >&2; return 1; }
  cmp -s "$out" "$want" || { bench_log "GET $url: body differs from $want ($(wc -c <"$out") bytes)"; return 1; }
  for hre in "$@"; do
    grep -Eiq -- "$hre" "$hdr" || { bench_log "GET $url: no header matching /$hre/"; cat "$hdr" >&2; return 1; }
  done
  return 0
}

# One GET with Accept-Encoding: gzip, as the load sends it: status 200 and, once gunzipped when the
# answer is gzip, exactly the bytes of EXPECTED-FILE. -> BENCH_CHECK_NOTE ("gzip on the wire, 2,942
# bytes" or why it failed: status, "wrong body: ..."); returns 1 on a failure. CURL-ARGS: e.g. -k.
bench_check_body() {  # URL EXPECTED-FILE [CURL-ARGS...]
  local url=$1 want=$2 raw=$BENCH_TMP/checkbody.raw hdr=$BENCH_TMP/checkbody.head got=$BENCH_TMP/checkbody.body code enc
  shift 2
  BENCH_CHECK_NOTE=""
  code=$(curl -sS --max-time 30 "$@" -H 'Accept-Encoding: gzip' -o "$raw" -D "$hdr" -w '%{http_code}' "$url" 2>"$hdr.err") ||
    { BENCH_CHECK_NOTE="request failed: $(head -c 200 "$hdr.err")"; return 1; }
  [ "$code" = 200 ] || { BENCH_CHECK_NOTE="status $code"; return 1; }
  enc=$(tr -d '\r' <"$hdr" | awk -F': *' 'tolower($1) == "content-encoding" { print tolower($2) }' | tail -n1)
  case $enc in
    gzip) gzip -dc <"$raw" >"$got" 2>/dev/null || { BENCH_CHECK_NOTE="wrong body: Content-Encoding gzip that does not gunzip"; return 1; } ;;
    "" | identity) cp "$raw" "$got" ;;
    *) BENCH_CHECK_NOTE="unexpected Content-Encoding: $enc"; return 1 ;;
  esac
  if ! cmp -s "$got" "$want"; then
    local n
    n=$(cmp "$got" "$want" 2>/dev/null | sed -n 's/.*byte \([0-9]*\).*/\1/p')
    BENCH_CHECK_NOTE="wrong body: $(wc -c <"$got") bytes, expected $(wc -c <"$want")"
    [ -n "$n" ] && BENCH_CHECK_NOTE+=", first difference at byte $n"
    grep -q '<esi:' "$got" && BENCH_CHECK_NOTE+=", ESI markup left unprocessed"
    return 1
  fi
  BENCH_CHECK_NOTE="${enc:-identity} on the wire, $(wc -c <"$raw") bytes ($(wc -c <"$got") assembled)"
  return 0
}

# New TLS connections per second, one after the other, for about SECONDS (openssl s_time, the CLI's
# TLS client: handshake, no request; its CPU counts too). MODE new: a full TLS 1.3 handshake each
# time; reuse: session resumption, over TLS 1.2 (s_time cannot resume TLS 1.3: it never reads the
# session tickets). -> "CONNS_PER_S CONNS RESUMED" (connections over the wall time of the run,
# resumed = those s_time marked 'r'); nothing when s_time failed (output in $BENCH_TMP/s_time-*.txt)
bench_handshakes() {  # HOST:PORT SECONDS new|reuse
  local out=$BENCH_TMP/s_time-${1//[:.]/_}-$3.txt t0 t1 args=(-new)
  [ "$3" = reuse ] && args=(-reuse -tls1_2)
  t0=$(date +%s%N)
  timeout -k 5 $(($2 + 30)) openssl s_time -connect "$1" "${args[@]}" -time "$2" </dev/null >"$out" 2>&1 || true
  t1=$(date +%s%N)
  awk -v ns=$((t1 - t0)) '/^starting/ { getline marks; r = gsub(/r/, "", marks) }
    /connections in [0-9.]+ real seconds/ { n = $1 }
    END { if (n > 0 && ns > 0) printf "%.0f %d %d\n", n / (ns / 1e9), n, r }' "$out"
}

bench_watch() {  # TARGET PID...  (their direct children are included when sampled)
  local t=$1
  shift
  BENCH_WATCH[$t]="$*"
}

bench_machine_ticks() {  # -> "BUSY TOTAL" clock ticks of all CPUs since boot (/proc/stat)
  local _ user nice system idle iowait irq softirq steal
  read -r _ user nice system idle iowait irq softirq steal _ </proc/stat
  echo "$((user + nice + system + irq + softirq + steal)) $((user + nice + system + idle + iowait + irq + softirq + steal))"
}

bench_reaped_cpu() {  # VAR  sets VAR to the CPU seconds of this shell's children that were waited for
  # `times` must run in this shell (not in $(...), a subshell with children of its own).
  times >"$BENCH_TMP/times"
  printf -v "$1" '%s' "$(awk 'NR == 2 { t = 0; for (i = 1; i <= 2; i++) { split($i, a, /[ms]/); t += a[1] * 60 + a[2] }; printf "%.3f", t }' "$BENCH_TMP/times")"
}

bench_cpu_ticks() {  # PID -> utime+stime of PID and its direct children, plus the cutime+cstime of
  # the children PID already reaped (a CGI server's per-request processes), in clock ticks
  local p rest total=0
  for p in $(bench_tree "$1"); do
    { read -r rest <"/proc/$p/stat"; } 2>/dev/null || continue
    rest=${rest##*) }
    set -- $rest
    total=$((total + ${12} + ${13} + ${14} + ${15}))
  done
  echo "$total"
}

# Waits until less than 15% of one core was busy in each of three consecutive 2-second windows, or
# gives up after MAX-SECONDS (returns 1). For shared machines: someone's compile ruins a point.
bench_wait_quiet() {  # MAX-SECONDS
  local max=$1 waited=0 quiet=0 a b busy
  while :; do
    a=$(bench_machine_ticks); sleep 2; b=$(bench_machine_ticks)
    busy=$(awk -v a="$a" -v b="$b" -v n="$(nproc)" 'BEGIN { split(a, x, " "); split(b, y, " ")
      d = y[2] - x[2]; printf "%.0f", (d > 0 ? (y[1] - x[1]) / d * n * 100 : 0) }')
    waited=$((waited + 2))
    if [ "$busy" -lt 15 ]; then
      quiet=$((quiet + 1))
      [ "$quiet" -ge 3 ] && return 0
      continue
    fi
    quiet=0
    if [ "$waited" -ge "$max" ]; then bench_log "machine still busy ($busy% of a core) after ${max}s; going on"; return 1; fi
    [ $((waited % 30)) = 0 ] && bench_log "waiting for a quiet machine: $busy% of a core busy"
  done
}

# ---------------------------------------------------------------------------------------------
# Load

bench_wrk_raw() {  # OUTFILE CONNS SECONDS URL  runs wrk (bounded by timeout(1)); 0 when it finished
  # wrk script: $BENCH_WRK_SCRIPT when set (bench/run.sh's workloads), else bench/wrk/report.lua
  local out=$1 c=$2 secs=$3 url=$4 t=2 pid rc
  [ "$c" -lt 2 ] && t=1
  timeout -k 5 $((secs + 30)) wrk -t"$t" -c"$c" -d"${secs}s" --timeout "$BENCH_WRK_TIMEOUT" \
    -s "${BENCH_WRK_SCRIPT:-$BENCH_DIR/wrk/report.lua}" "$url" >"$out" 2>&1 &
  pid=$!
  BENCH_PIDS+=("$pid")
  BENCH_PID_NAME[$pid]=wrk
  wait "$pid" && rc=0 || rc=$?
  for i in "${!BENCH_PIDS[@]}"; do [ "${BENCH_PIDS[i]}" = "$pid" ] && BENCH_PIDS[i]=""; done
  return $rc
}

# CPU over a measured window, in % of one core: each process watched for TARGET (bench_watch), the
# load driver (wrk, or any child of this shell that ran and was waited for in the window), and
# "other": whatever else ran on the machine meanwhile (should be ~0; a busy machine makes the point
# worthless).
declare -A BENCH_CPU_BEFORE=()
BENCH_CPU_STAT0="" BENCH_CPU_KIDS0="" BENCH_CPU=""

bench_cpu_begin() {  # TARGET  opens the window
  local p
  BENCH_CPU_BEFORE=()
  for p in ${BENCH_WATCH[$1]:-}; do BENCH_CPU_BEFORE[$p]=$(bench_cpu_ticks "$p"); done
  BENCH_CPU_STAT0=$(bench_machine_ticks)
  bench_reaped_cpu BENCH_CPU_KIDS0
}

bench_cpu_end() {  # TARGET  closes it -> BENCH_CPU "name:PCT,...,wrk:PCT,other:PCT" (the cpu column of a row)
  local stat1 kids1 p wall servers=0 pct ticks_hz
  stat1=$(bench_machine_ticks)
  bench_reaped_cpu kids1
  ticks_hz=$(getconf CLK_TCK)
  BENCH_CPU=""
  wall=$(awk -v a="$BENCH_CPU_STAT0" -v b="$stat1" -v n="$(nproc)" -v hz="$ticks_hz" \
    'BEGIN { split(a, x, " "); split(b, y, " "); printf "%.6f", (y[2] - x[2]) / n / hz }')
  for p in ${BENCH_WATCH[$1]:-}; do
    pct=$(awk -v a="${BENCH_CPU_BEFORE[$p]}" -v b="$(bench_cpu_ticks "$p")" -v hz="$ticks_hz" -v w="$wall" \
      'BEGIN { printf "%.0f", (w > 0 ? (b - a) / hz / w * 100 : 0) }')
    servers=$((servers + pct))
    BENCH_CPU+="${BENCH_PID_NAME[$p]:-$p}:$pct,"
  done
  BENCH_CPU+=$(awk -v a="$BENCH_CPU_STAT0" -v b="$stat1" -v k0="$BENCH_CPU_KIDS0" -v k1="$kids1" -v s="$servers" -v hz="$ticks_hz" -v w="$wall" '
    BEGIN { split(a, x, " "); split(b, y, " "); if (w <= 0) exit
            busy = (y[1] - x[1]) / hz / w * 100; wrk = (k1 - k0) / w * 100; other = busy - s - wrk
            printf "wrk:%.0f,other:%.0f", wrk, (other < 0 ? 0 : other) }')
}

bench_point() {  # TARGET URL CONNS  warm-up, measured run, one row appended to $BENCH_TSV
  local target=$1 url=$2 c=$3 out line secs
  out=$BENCH_TMP/wrk-$target-c$c.txt
  if [ "$BENCH_WARMUP" != 0 ]; then
    bench_wrk_raw "$out.warmup" "$c" "$BENCH_WARMUP" "$url" || bench_log "warm-up $target c=$c: wrk exit $?"
  fi
  bench_cpu_begin "$target"
  if ! bench_wrk_raw "$out" "$c" "$BENCH_DURATION" "$url"; then
    bench_log "wrk $target c=$c failed:"; cat "$out" >&2
  fi
  bench_cpu_end "$target"
  local cpu=$BENCH_CPU
  line=$(grep -m1 '^BENCH ' "$out" || true)
  [ -n "$line" ] || { bench_log "wrk $target c=$c: no BENCH line"; cat "$out" >&2; return 1; }
  local -A v=()
  local kv
  for kv in ${line#BENCH }; do v[${kv%%=*}]=${kv#*=}; done
  secs=$(awk -v d="${v[duration_us]}" 'BEGIN { printf "%.3f", d / 1e6 }')
  local errs=$((v[err_connect] + v[err_read] + v[err_write] + v[err_status] + v[err_timeout]))
  local detail="" k
  for k in connect read write status timeout; do
    [ "${v[err_$k]}" != 0 ] && detail+="$k ${v[err_$k]}, "
  done
  detail=${detail%, }
  local bpr
  bpr=$(awk -v b="${v[bytes]}" -v r="${v[requests]}" 'BEGIN { printf "%.0f", r ? b / r : 0 }')
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$target" "$c" "${v[rps]}" \
    "${v[p50_us]}" "${v[p95_us]}" "${v[p99_us]}" "${v[max_us]}" "${v[requests]}" "$errs" \
    "${detail:--}" "$bpr" "$secs" "${cpu:--}" >>"$BENCH_TSV"
  bench_log "$(printf '%-11s c=%-4s %10s req/s  p50 %6s us  p99 %7s us  errors %s  cpu %s' \
    "$target" "$c" "${v[rps]}" "${v[p50_us]}" "${v[p99_us]}" "$errs" "${cpu:--}")"
}

# ---------------------------------------------------------------------------------------------
# Reading results back

bench_peak() {  # TARGET -> "RPS CONNS" of the row with the highest req/s
  awk -F'\t' -v t="$1" '$1 == t && $3 + 0 > best { best = $3 + 0; c = $2 }
    END { if (c != "") printf "%.0f %s\n", best, c }' "$BENCH_TSV"
}

# -> "PEAK_RATIO LOWEST": TARGET's peak req/s / BASE's peak req/s, and the lowest per-level ratio
#    as "0.63x at c=256".
bench_ratios() {  # BASE TARGET
  awk -F'\t' -v b="$1" -v t="$2" '
    $1 == b { n[$2] = $3; if ($3 + 0 > bp) bp = $3 + 0 }
    $1 == t { s[$2] = $3; if ($3 + 0 > tp) tp = $3 + 0 }
    END {
      low = ""
      for (c in s) if (n[c] > 0) { r = s[c] / n[c]; if (low == "" || r < low) { low = r; lc = c } }
      printf "%.2f %s\n", (bp > 0 ? tp / bp : 0), (low == "" ? "n/a" : sprintf("%.2fx at c=%s", low, lc))
    }' "$BENCH_TSV"
}

# -> "N LIST": how many rows had more than PCT% of one core used by processes outside the benchmark
#    ("other" in the cpu column), and which ("shellac c=16 (other 61%), ...")
bench_disturbed() {  # PCT
  awk -F'\t' -v lim="$1" '{ if (match($13, /other:[0-9]+/)) { o = substr($13, RSTART + 6, RLENGTH - 6) + 0
      if (o > lim) { n++; l = l (l ? ", " : "") $1 " c=" $2 " (other " o "%)" } } }
    END { printf "%d %s\n", n, l }' "$BENCH_TSV"
}

bench_row_cpu() {  # TARGET CONNS NAME -> the CPU % of NAME ("other", "wrk", a watched process)
  #                  in that row (0 when unknown)
  awk -F'\t' -v t="$1" -v c="$2" -v n="$3" '$1 == t && $2 == c {
      k = split($13, f, ","); for (i = 1; i <= k; i++) { split(f[i], kv, ":"); if (kv[1] == n) o = kv[2] } }
    END { print o + 0 }' "$BENCH_TSV"
}

bench_other_cpu() { bench_row_cpu "$1" "$2" other; }  # TARGET CONNS -> "other" CPU % of that row

bench_drop_level() {  # CONNS  removes every row of that level (to measure it again)
  awk -F'\t' -v c="$1" '$2 != c' "$BENCH_TSV" >"$BENCH_TSV.new" && mv "$BENCH_TSV.new" "$BENCH_TSV"
}

# -> "nginx 6840; shellac 6873" (each target's distinct bytes-per-response values, "/"-separated)
bench_bytes_per_response() {  # TARGET...
  local t out=""
  for t in "$@"; do
    out+="${BENCH_LABEL[$t]:-$t} $(awk -F'\t' -v t="$t" '$1 == t { print $11 }' "$BENCH_TSV" | sort -n -u | paste -sd/); "
  done
  echo "${out%; }"
}

bench_rps_at() {  # TARGET CONNS -> req/s
  awk -F'\t' -v t="$1" -v c="$2" '$1 == t && $2 == c { print $3; exit }' "$BENCH_TSV"
}

# The knee: the lowest level where p99 grows faster than the load, i.e. p99(c_i) / p99(c_i-1) >
# c_i / c_i-1 (with a doubling sweep: p99 more than doubles when the connections double).
# -> "CONNS PREV_CONNS PREV_P99_US P99_US", or nothing when no level in the sweep qualifies.
bench_knee() {  # TARGET
  awk -F'\t' -v t="$1" '$1 == t { print $2, $6 }' "$BENCH_TSV" | sort -n -k1,1 |
    awk 'NR > 1 && pp > 0 && $2 / pp > $1 / pc { print $1, pc, pp, $2; exit } { pc = $1; pp = $2 }'
}

bench_ms() { awk -v u="$1" 'BEGIN { if (u >= 10000) printf "%.1f", u / 1000; else printf "%.2f", u / 1000 }'; }

# Markdown table of every row, levels ascending, targets in the given order; the ratio column is
# target req/s / BASE req/s at the same level; MIN is the ratio the scenario must reach (or "").
bench_md_table() {  # BASE MIN TARGET...
  local base=$1 min=$2 c t
  shift 2
  echo '| conns | target | req/s | p50 ms | p95 ms | p99 ms | errors | req/s vs '"${BENCH_LABEL[$base]:-$base}"' | CPU % (servers, wrk, other) |'
  echo '|---:|---|---:|---:|---:|---:|---|---:|---|'
  for c in $(cut -f2 "$BENCH_TSV" | sort -n -u); do
    for t in "$@"; do
      awk -F'\t' -v t="$t" -v c="$c" -v base="$(bench_rps_at "$base" "$c")" -v isbase="$([ "$t" = "$base" ] && echo 1)" \
        -v min="$min" -v label="${BENCH_LABEL[$t]:-$t}" '
        function ms(u) { return u >= 10000 ? sprintf("%.1f", u / 1000) : sprintf("%.2f", u / 1000) }
        $1 == t && $2 == c {
          err = $9 == 0 ? "0" : $9 " (" $10 ")"
          if (isbase) ratio = "baseline"
          else if (base > 0) {
            r = $3 / base; ratio = sprintf("%.2fx", r)
            if (min != "") ratio = ratio (r >= min ? " (met)" : " **(below " min "x)**")
          } else ratio = "n/a"
          cpu = $13; gsub(/,/, ", ", cpu); gsub(/:/, " ", cpu)
          printf "| %s | %s | %.0f | %s | %s | %s | %s | %s | %s |\n", c, label, $3, ms($4), ms($5), ms($6), err, ratio, cpu
        }' "$BENCH_TSV"
    done
  done
}

# PNG: req/s (top) and p99 latency (bottom) against connections (log2 x axis), one line per target.
# BENCH_PLOT_RPS_LOG=1: req/s on a log scale too (targets 100x apart).
bench_plot() {  # PNG TITLE TARGET...
  local png=$1 title=$2 t gp=$BENCH_TMP/plot.gp plots_rps="" plots_p99="" term yrps="set yrange [0:*]"
  [ "${BENCH_PLOT_RPS_LOG:-0}" = 1 ] && yrps="set logscale y 10; set yrange [*:*]"
  shift 2
  for t in "$@"; do
    awk -F'\t' -v t="$t" '$1 == t { print $2, $3, $6 / 1000 }' "$BENCH_TSV" | sort -n >"$BENCH_TMP/plot-$t.dat"
    plots_rps+="'$BENCH_TMP/plot-$t.dat' using 1:2 with linespoints lw 2 pt 7 title '${BENCH_LABEL[$t]:-$t}', "
    plots_p99+="'$BENCH_TMP/plot-$t.dat' using 1:3 with linespoints lw 2 pt 7 title '${BENCH_LABEL[$t]:-$t}', "
  done
  term="png size 1000,800 font ',11'"
  gnuplot -e 'set terminal' 2>&1 | grep -q pngcairo && term="pngcairo size 1000,800 font ',10'"
  cat >"$gp" <<EOF
set terminal $term
set output '$png'
set multiplot layout 2,1 title '$title'
set logscale x 2
set xlabel 'concurrent connections (wrk -c)'
set grid
set key top left
set ylabel 'requests/s'
$yrps
plot ${plots_rps%, }
set logscale y 10
set yrange [*:*]
set ylabel 'p99 latency (ms, log)'
plot ${plots_p99%, }
unset multiplot
EOF
  gnuplot "$gp" || bench_log "gnuplot failed (script $gp)"
}

# ---------------------------------------------------------------------------------------------
# Describing the run

bench_machine_line() {
  local cpu mem kernel os
  cpu=$(awk -F': *' '/^model name/ { print $2; exit }' /proc/cpuinfo)
  mem=$(awk '/^MemTotal/ { printf "%.1f GiB", $2 / 1048576 }' /proc/meminfo)
  kernel=$(uname -r)
  os=$(. /etc/os-release 2>/dev/null && echo "$PRETTY_NAME")
  [ -r /etc/debian_version ] && os+=" ($(cat /etc/debian_version))"
  echo "nproc=$(nproc), CPU: ${cpu:-unknown} ($(uname -m)), memory: $mem, kernel $kernel, $os"
}

bench_git_rev() {  # REPO -> short rev (+ "-dirty"), or a note when there is none
  local rev
  rev=$(git -C "${1:-$BENCH_REPO}" rev-parse --short HEAD 2>/dev/null) || { echo "no commit yet (working tree)"; return; }
  [ -n "$(git -C "${1:-$BENCH_REPO}" status --porcelain --untracked-files=no 2>/dev/null)" ] && rev+="-dirty"
  echo "$rev"
}

bench_version_nginx() {  # -> "nginx/1.22.1 (Debian package nginx 1.22.1-9+deb12u11)"
  local v p
  v=$(nginx -v 2>&1 | sed 's/^nginx version: //')
  p=$(dpkg-query -W -f='${Version}' nginx 2>/dev/null) && v+=" (Debian package nginx $p)"
  echo "$v"
}
bench_version_wrk() { wrk -v 2>&1 | head -n1 | awk '{ print $1, $2 }'; }

bench_cmdline() {  # ARGV... -> the command as typed from the repository root, shell-quoted
  local out="" a
  [ -n "${SHELLAC_BIN:-}" ] && out="SHELLAC_BIN=$(printf '%q' "$SHELLAC_BIN") "
  out+="bench/$(basename "$0")"
  for a in "$@"; do
    if [[ $a =~ ^[A-Za-z0-9_,./=:+@%-]+$ ]]; then out+=" $a"; else out+=" $(printf '%q' "$a")"; fi
  done
  echo "$out"
}

# ---------------------------------------------------------------------------------------------
# Added for bench/run.sh (crawler, hot, fork-spread, burst)

# "0.91x-1.04x (c=1..32)": the lowest and highest per-level ratio TARGET req/s / BASE req/s.
bench_ratio_range() {  # BASE TARGET
  awk -F'\t' -v b="$1" -v t="$2" '
    $1 == b { n[$2] = $3 } $1 == t { s[$2] = $3 }
    END {
      for (c in s) if (n[c] > 0) {
        r = s[c] / n[c]
        if (lo == "" || r < lo) { lo = r; lc = c }
        if (hi == "" || r > hi) { hi = r; hc = c }
      }
      if (lo == "") print "n/a"; else printf "%.2fx (c=%s) to %.2fx (c=%s)\n", lo, lc, hi, hc
    }' "$BENCH_TSV"
}

# Markdown table of every row, levels ascending, targets in the given order, with the ratio
# REF req/s / this target's req/s ("shellac / this") and, when rows have a 14th column (requests
# that reached the origin during the point), origin / answered in %.
bench_md_table_vs() {  # REF TARGET...
  local ref=$1 c t
  shift
  echo "| conns | target | req/s | p50 ms | p95 ms | p99 ms | errors | origin | ${BENCH_LABEL[$ref]:-$ref} / this | CPU % (servers, wrk, other) |"
  echo '|---:|---|---:|---:|---:|---:|---|---:|---:|---|'
  for c in $(cut -f2 "$BENCH_TSV" | sort -n -u); do
    for t in "$@"; do
      awk -F'\t' -v t="$t" -v c="$c" -v ref="$(bench_rps_at "$ref" "$c")" -v isref="$([ "$t" = "$ref" ] && echo 1)" \
        -v label="${BENCH_LABEL[$t]:-$t}" '
        function ms(u) { return u >= 10000 ? sprintf("%.1f", u / 1000) : sprintf("%.2f", u / 1000) }
        $1 == t && $2 == c {
          err = $9 == 0 ? "0" : $9 " (" $10 ")"
          if (isref) ratio = "-"
          else if ($3 > 0 && ref != "") ratio = sprintf("**%.2fx**", ref / $3)
          else ratio = "n/a"
          origin = ($14 == "" || $14 == "-") ? "-" : ($8 > 0 ? sprintf("%.0f%%", $14 / $8 * 100) : $14)
          cpu = $13; gsub(/,/, ", ", cpu); gsub(/:/, " ", cpu)
          printf "| %s | %s | %.0f | %s | %s | %s | %s | %s | %s | %s |\n", c, label, $3, ms($4), ms($5), ms($6), err, origin, ratio, cpu
        }' "$BENCH_TSV"
    done
  done
}

# Summary lines every report ends with: whether the machine stayed quiet while measuring, and how
# shellac ended (SHELLAC_DIED / SHELLAC_EXIT, set by the scenario).
bench_md_run_health() {
  local ndist dist
  read -r ndist dist < <(bench_disturbed 20)
  if [ "$ndist" -gt 0 ]; then
    echo "- **machine not quiet**: $ndist point(s) had more than 20% of a core used outside the benchmark: $dist"
  else
    echo "- machine quiet: no point had more than 20% of a core used outside the benchmark"
  fi
  if [ -n "${SHELLAC_DIED:-}" ]; then echo "- **$SHELLAC_DIED**; later shellac points are missing"; fi
  if [ -n "${SHELLAC_EXIT:-}" ]; then echo "- shellac shutdown: $SHELLAC_EXIT"; fi
  return 0
}
