# shellcheck shell=bash
# bench/lib.sh: the machinery shared by shellac's benchmark scenarios (bench/scenarios/*.sh,
# bench/run.sh). Source it, don't run it. Scenarios measure and check; they write raw results into
# one run folder ($RAW: meta.json + TSV files) and bench/report.py makes the markdown and the plot.
#
# Processes and load:
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
#   bench_handshakes H:P S new|reuse   TLS connections in S seconds (openssl s_time)
#   bench_machine_line, bench_git_rev, bench_version_*, bench_cmdline
# Raw results (see bench/README.md, "Raw results"):
#   begin NAME                 temp dir, $RAW = $OUT/raw/NAME (emptied), $BENCH_TSV = $RAW/points.tsv,
#                              the common metadata (command, date, machine, options)
#   bench_meta KEY VALUE...    one metadata value (KEY a.b: nested; KEY[]: appended to a list)
#   bench_report               versions, shellac's end, meta.json; bench/report.py -> $OUT/NAME.md
# The forge scenarios (cgit, shellac, varnish on a git corpus): corpus_prepare, make_lists,
# start_targets, check_target, probe_shellac, sweep (POINT_FN per target and level), stop_targets.
# The ESI scenarios (synthetic pages from an nginx origin): esi_setup, esi_add_target, esi_stop.
#
# Rows of $BENCH_TSV (tab separated, one per measured point; bench/report.py POINT_COLUMNS):
#   target conns rps p50_us p95_us p99_us max_us requests errors err_detail bytes_per_resp secs cpu [origin]
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

# New TLS connections, one after the other, for about SECONDS (openssl s_time, the CLI's TLS client:
# handshake, no request; its CPU counts too). MODE new: a full TLS 1.3 handshake each time; reuse:
# session resumption, over TLS 1.2 (s_time cannot resume TLS 1.3: it never reads the session
# tickets). -> "CONNS RESUMED WALL_NS" (resumed = those s_time marked 'r'; wall = the run's wall
# time); nothing when s_time failed (output in $BENCH_TMP/s_time-*.txt)
bench_handshakes() {  # HOST:PORT SECONDS new|reuse
  local out=$BENCH_TMP/s_time-${1//[:.]/_}-$3.txt t0 t1 args=(-new) n marks
  [ "$3" = reuse ] && args=(-reuse -tls1_2)
  t0=$(date +%s%N)
  timeout -k 5 $(($2 + 30)) openssl s_time -connect "$1" "${args[@]}" -time "$2" </dev/null >"$out" 2>&1 || true
  t1=$(date +%s%N)
  n=$(sed -n 's/^\([0-9]*\) connections in [0-9.]* real seconds.*/\1/p' "$out" | tail -n1)
  marks=$(grep -A1 '^starting' "$out" | tail -n1 | tr -cd r)
  [ -n "$n" ] && [ "$n" -gt 0 ] && echo "$n ${#marks} $((t1 - t0))"
  return 0
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
  rm -f -- "$out.stop"   # crawler.lua ends wrk through it once every thread stopped
  CRAWL_STOP_FILE=$out.stop CRAWL_THREADS=$t timeout -k 5 $((secs + 30)) wrk -t"$t" -c"$c" -d"${secs}s" --timeout "$BENCH_WRK_TIMEOUT" \
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
  secs=$((v[duration_us] / 1000000)).$(printf '%03d' $((v[duration_us] % 1000000 / 1000)))
  local errs=$((v[err_connect] + v[err_read] + v[err_write] + v[err_status] + v[err_timeout]))
  local detail="" k
  for k in connect read write status timeout; do
    [ "${v[err_$k]}" != 0 ] && detail+="$k ${v[err_$k]}, "
  done
  detail=${detail%, }
  local bpr
  bpr=$((v[requests] > 0 ? (v[bytes] + v[requests] / 2) / v[requests] : 0))
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$target" "$c" "${v[rps]}" \
    "${v[p50_us]}" "${v[p95_us]}" "${v[p99_us]}" "${v[max_us]}" "${v[requests]}" "$errs" \
    "${detail:--}" "$bpr" "$secs" "${cpu:--}" >>"$BENCH_TSV"
  bench_log "$(printf '%-11s c=%-4s %10s req/s  p50 %6s us  p99 %7s us  errors %s  cpu %s' \
    "$target" "$c" "${v[rps]}" "${v[p50_us]}" "${v[p99_us]}" "$errs" "${cpu:--}")"
}

# ---------------------------------------------------------------------------------------------
# Reading a measured row back (what the sweeps decide on: was the point disturbed?)

bench_row_cpu() {  # TARGET CONNS NAME -> the CPU % of NAME ("other", "wrk", a watched process)
  #                  in that row (0 when unknown)
  awk -F'\t' -v t="$1" -v c="$2" -v n="$3" '$1 == t && $2 == c {
      k = split($13, f, ","); for (i = 1; i <= k; i++) { split(f[i], kv, ":"); if (kv[1] == n) o = kv[2] } }
    END { print o + 0 }' "$BENCH_TSV"
}

bench_other_cpu() { bench_row_cpu "$1" "$2" other; }  # TARGET CONNS -> "other" CPU % of that row

bench_drop_level() {  # CONNS  removes every row of that level (to measure it again), also from $RAW/crawl.tsv
  local f
  for f in "$BENCH_TSV" "${RAW:-/nonexistent}/crawl.tsv"; do
    [ -f "$f" ] || continue
    awk -F'\t' -v c="$1" '$2 != c' "$f" >"$f.new" && mv "$f.new" "$f"
  done
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
  [ -n "${SHELLAC_CONF:-}" ] && out="SHELLAC_CONF=$(printf '%q' "$SHELLAC_CONF") "
  [ -n "${SHELLAC_BIN:-}" ] && out+="SHELLAC_BIN=$(printf '%q' "$SHELLAC_BIN") "
  out+="bench/$(basename "$0")"
  for a in "$@"; do
    if [[ $a =~ ^[A-Za-z0-9_,./=:+@%-]+$ ]]; then out+=" $a"; else out+=" $(printf '%q' "$a")"; fi
  done
  echo "$out"
}

# ---------------------------------------------------------------------------------------------
# A scenario's run: options (from bench/run.sh's environment), raw results, the report

# bench/run.sh exports the options: SWEEP DURATION MIN_PAGES MAX_DURATION BURST BURST_TIMEOUT SMALL COMMITS TAGS FORKS SAMPLE
# SEED FROM CORPUS REPORT IDENTITY WAIT_QUIET RETRIES OUT MEM_OBJECTS BENCH_WARMUP BENCH_DURATION
# BENCH_KEEP_TMP, the command as typed (BENCH_COMMAND), --note (BENCH_NOTE) and, within `all`,
# BENCH_QUIET_FILE.

begin() {  # SCENARIO [REPORT-NAME]  temp dir, an empty $RAW, the run's common metadata
  : "${BENCH_COMMAND:?scenario scripts run through bench/run.sh}" "${OUT:?}"
  bench_init "$1"
  BENCH_NAME=${2:-$1}
  RAW=$OUT/raw/$BENCH_NAME
  rm -rf -- "$RAW"
  mkdir -p "$RAW"
  BENCH_TSV=$RAW/points.tsv
  : >"$BENCH_TSV"
  T_START=$(date +%s)
  QUIET_GIVEN=0   # --wait-quiet was given (WAIT_QUIET is what is left of it: 0 = used up, not "off")
  [ "$WAIT_QUIET" -gt 0 ] && QUIET_GIVEN=1
  SHELLAC_VERSION="" SHELLAC_DIED="" SHELLAC_EXIT="" REMEASURED=""
  bench_meta scenario "$1"
  bench_meta report "$BENCH_NAME"
  bench_meta command "$BENCH_COMMAND"
  bench_meta note "${BENCH_NOTE:-}"
  bench_meta date "$(date -u '+%Y-%m-%d %H:%M:%S UTC')"
  bench_meta machine "$(bench_machine_line)"
  bench_meta nproc "$(nproc)"
  bench_meta load_at_start "$(cut -d' ' -f1-3 /proc/loadavg)"
  local k
  for k in SWEEP DURATION MIN_PAGES MAX_DURATION BENCH_WARMUP BENCH_WRK_TIMEOUT BURST BURST_TIMEOUT SMALL IDENTITY SEED WAIT_QUIET RETRIES; do
    bench_meta "options.$(tr 'A-Z' 'a-z' <<<"${k#BENCH_}")" "${!k:-}"
  done
  bench_meta options.shellac_conf "${SHELLAC_CONF:-}"
  bench_log "raw results: $RAW"
}

bench_meta() {  # KEY VALUE...  one line of $RAW/meta.tsv (KEY a.b: nested; KEY[]: a list), for meta.json
  [ -n "${RAW:-}" ] || return 0   # no run folder (corpus, all's preparations)
  local v="${*:2}"
  v=${v//$'\n'/ }
  printf '%s\t%s\n' "$1" "${v//$'\t'/ }" >>"$RAW/meta.tsv"
}

bench_report() {  # the run's end: versions, how shellac ended, meta.json; bench/report.py -> $OUT/NAME.md
  local md
  bench_meta run_seconds "$(($(date +%s) - T_START))"
  bench_meta versions.peers "$(peer_versions)"
  bench_meta versions.wrk "$(bench_version_wrk)"
  bench_meta versions.shellac "${SHELLAC_VERSION:-}"
  bench_meta versions.shellac_rev "${SHELLAC_GIT_REV:-$(bench_git_rev "$BENCH_REPO")}"
  bench_meta shellac_died "${SHELLAC_DIED:-}"
  bench_meta shellac_exit "${SHELLAC_EXIT:-}"
  bench_meta remeasured "${REMEASURED:-}"
  local k
  for k in "${!BENCH_LABEL[@]}"; do bench_meta "labels.$k" "${BENCH_LABEL[$k]}"; done
  for k in "${!TARGET_FAILED[@]}"; do bench_meta "failed.$k" "${TARGET_FAILED[$k]}"; done
  for k in "${!TARGET_CHECK[@]}"; do bench_meta "checks.$k" "${TARGET_CHECK[$k]}"; done
  if [ -n "${SHELLAC_DIR:-}" ] && [ -s "$SHELLAC_DIR/stderr.log" ]; then
    tail -n 20 "$SHELLAC_DIR/stderr.log" >"$RAW/shellac-stderr.txt"
  fi
  python3 "$BENCH_DIR/report.py" --finish-meta "$RAW" || bench_die "report.py --finish-meta $RAW failed"
  md=$(python3 "$BENCH_DIR/report.py" "$RAW" --out "$OUT") || bench_die "bench/report.py $RAW failed"
  bench_log "wrote $md (from $RAW)"
  cat "$md"
}

# The --wait-quiet budget is shared by every scenario of one `all` run through a file.
quiet_wait() {  # waits for an idle machine within what is left of the budget (1: budget used up)
  [ "${QUIET_GIVEN:-0}" = 1 ] || return 0
  local left t0 t1
  left=$WAIT_QUIET
  [ -n "${BENCH_QUIET_FILE:-}" ] && [ -s "$BENCH_QUIET_FILE" ] && left=$(cat "$BENCH_QUIET_FILE")
  [ "$left" -gt 0 ] || { bench_log "wait-quiet budget used up; measuring anyway"; return 1; }
  t0=$(date +%s)
  local rc=0
  bench_wait_quiet "$left" || rc=1
  t1=$(date +%s)
  left=$((left - (t1 - t0)))
  [ "$left" -ge 0 ] || left=0
  if [ -n "${BENCH_QUIET_FILE:-}" ]; then echo "$left" >"$BENCH_QUIET_FILE"; else WAIT_QUIET=$left; fi
  [ "$rc" = 0 ] && bench_log "machine quiet (wait-quiet budget left: ${left}s)"
  return $rc
}

# ---------------------------------------------------------------------------------------------
# Corpus: generated (or --from a real repository) once, kept outside the tree, reused.

corpus_hash() {  # the generator's version: a hash of every file of bench/corpus
  (cd "$BENCH_DIR/corpus" && cat gen-repo.sh gen-forks.sh sample-commits.sh py/*.py) | sha1sum | cut -c1-12
}

corpus_prepare() {  # -> CORPUS_DIR BASE_REPO CGITRC COMMITS_FILE HEAD_BRANCH CORPUS_DESC
  local root key params stamp src="" graph_key="" graph_param=""
  root=${SHELLAC_BENCH_CORPUS:-${XDG_CACHE_HOME:-/tmp}/shellac-bench-corpus}
  if [ "${COMMIT_GRAPH:-0}" = 1 ]; then graph_key="-g" graph_param=" commit-graph=changed-paths"; fi
  if [ -n "$FROM" ]; then
    git -C "$FROM" rev-parse --git-dir >/dev/null 2>&1 || bench_die "--from $FROM: not a git repository"
    src=$(realpath "$(git -C "$FROM" rev-parse --absolute-git-dir)")
    BASE_REPO=$src
    local head
    head=$(git -C "$src" rev-parse HEAD)
    key="from-$(basename "$src" .git)-${head:0:12}-f$FORKS-m$SAMPLE-s$SEED$graph_key"
    params="from=$src head=$head forks=$FORKS sample=$SAMPLE seed=$SEED generator=$(corpus_hash)$graph_param"
  else
    key="gen-c$COMMITS-t$TAGS-f$FORKS-m$SAMPLE-s$SEED$graph_key"
    params="commits=$COMMITS tags=$TAGS forks=$FORKS sample=$SAMPLE seed=$SEED generator=$(corpus_hash)$graph_param"
  fi
  CORPUS_DIR=${CORPUS:-$root/$key}
  # The base is generated in the corpus, and so is a --from base that gets a graph (a shared clone:
  # refs and an alternates line; the graph is written there, never into REPO).
  if [ -z "$FROM" ] || [ -n "$graph_key" ]; then BASE_REPO=$CORPUS_DIR/base.git; fi
  stamp=$CORPUS_DIR/.shellac-bench-corpus
  if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$params" ] && [ -s "$CORPUS_DIR/commits.txt" ] &&
    [ -f "$CORPUS_DIR/cgitrc" ]; then
    bench_log "corpus: reusing $CORPUS_DIR"
  else
    if [ -e "$CORPUS_DIR" ] && [ -n "$(ls -A "$CORPUS_DIR" 2>/dev/null)" ]; then
      [ -f "$stamp" ] || bench_die "$CORPUS_DIR exists and was not made by bench/run.sh; choose another --corpus"
      bench_log "corpus: $CORPUS_DIR was made with other parameters or another generator; making it again"
      rm -rf -- "$CORPUS_DIR/base.git" "$CORPUS_DIR/forks" "$CORPUS_DIR/cgitrc" "$CORPUS_DIR/commits.txt" "$stamp" \
        "$CORPUS_DIR/big.txt" "$CORPUS_DIR"/*.log
    fi
    mkdir -p "$CORPUS_DIR"
    local t0
    t0=$(date +%s)
    if [ -n "$FROM" ]; then
      "$BENCH_DIR/corpus/gen-repo.sh" --from "$src" >"$CORPUS_DIR/gen-repo.log" 2>&1 ||
        { cat "$CORPUS_DIR/gen-repo.log" >&2; bench_die "gen-repo.sh --from $src failed"; }
      if [ "$BASE_REPO" != "$src" ]; then
        git clone -q --mirror --shared "$src" "$BASE_REPO" 2>>"$CORPUS_DIR/gen-repo.log" ||
          bench_die "git clone --mirror --shared $src failed"
      fi
    else
      bench_log "corpus: generating a $COMMITS-commit repository in $BASE_REPO (20,000 commits: ~30-60 s)"
      "$BENCH_DIR/corpus/gen-repo.sh" --out "$BASE_REPO" --commits "$COMMITS" --tags "$TAGS" --seed "$SEED" \
        --force >"$CORPUS_DIR/gen-repo.log" 2>&1 ||
        { tail -n 20 "$CORPUS_DIR/gen-repo.log" >&2; bench_die "gen-repo.sh failed (log: $CORPUS_DIR/gen-repo.log)"; }
    fi
    bench_log "corpus: $FORKS forks + cgitrc"
    "$BENCH_DIR/corpus/gen-forks.sh" --base "$BASE_REPO" --out "$CORPUS_DIR" --forks "$FORKS" --seed "$SEED" \
      --force >"$CORPUS_DIR/gen-forks.log" 2>&1 ||
      { tail -n 20 "$CORPUS_DIR/gen-forks.log" >&2; bench_die "gen-forks.sh failed (log: $CORPUS_DIR/gen-forks.log)"; }
    if [ -n "$graph_key" ]; then
      # As a forge does: a graph with changed-path filters where objects are (the forks borrow
      # every object from the base, so theirs is the base's, found through the alternates).
      local repo g0
      g0=$(date +%s)
      for repo in "$BASE_REPO" "$CORPUS_DIR"/forks/*.git; do
        [ "$repo" = "$BASE_REPO" ] || [ -n "$(find "$repo/objects" -type f ! -path '*/info/*' -print -quit)" ] || continue
        bench_log "corpus: git commit-graph write --reachable --changed-paths in $repo"
        git -C "$repo" commit-graph write --reachable --changed-paths --no-progress \
          >>"$CORPUS_DIR/commit-graph.log" 2>&1 || bench_die "git commit-graph write failed in $repo"
      done
      echo "commit-graphs written in $(($(date +%s) - g0)) s" >>"$CORPUS_DIR/commit-graph.log"
    fi
    "$BENCH_DIR/corpus/sample-commits.sh" --repo "$BASE_REPO" --count "$SAMPLE" --seed "$SEED" \
      >"$CORPUS_DIR/commits.txt" 2>"$CORPUS_DIR/sample.log" ||
      { cat "$CORPUS_DIR/sample.log" >&2; bench_die "sample-commits.sh failed"; }
    echo "$params" >"$stamp"
    bench_log "corpus: ready in $(($(date +%s) - t0)) s"
  fi
  chmod 755 "$CORPUS_DIR"
  CGITRC=$CORPUS_DIR/cgitrc
  COMMITS_FILE=$CORPUS_DIR/commits.txt
  HEAD_BRANCH=$(git -C "$BASE_REPO" symbolic-ref --short -q HEAD || echo main)
  local ncommits nrepos ntags graphs
  ncommits=$(git -C "$BASE_REPO" rev-list --all --count)
  ntags=$(git -C "$BASE_REPO" for-each-ref --format=x refs/tags | wc -l)
  nrepos=$(grep -c '^repo.url=' "$CGITRC")
  if [ -n "$graph_key" ]; then
    graphs="commit-graph with changed-path Bloom filters in the base ($(tail -n 1 "$CORPUS_DIR/commit-graph.log" 2>/dev/null)), read by the forks through their alternates"
  elif [ -e "$BASE_REPO/objects/info/commit-graph" ] || [ -e "$BASE_REPO/objects/info/commit-graphs" ]; then
    graphs="the base's commit-graph as it is ($( [ -n "$FROM" ] && echo "from the repository" || echo "gen-repo.sh's"), without --commit-graph)"
  else
    graphs="no commit-graph"
  fi
  CORPUS_DESC="$( [ -n "$FROM" ] && echo "real repository $src" || echo "generated by bench/corpus/gen-repo.sh (seed $SEED)"): $ncommits commits, $ntags tags, HEAD $HEAD_BRANCH $(git -C "$BASE_REPO" rev-parse --short HEAD); fork farm of $FORKS forks (gen-forks.sh, alternates) = $nrepos repositories in the cgitrc; $graphs; $(wc -l <"$COMMITS_FILE") sampled commits (sample-commits.sh --seed $SEED); kept in $CORPUS_DIR"
  bench_meta corpus "$CORPUS_DESC"
}

corpus_big() {  # -> BIG_FILE: the base's commits with 10k+ changed lines (sample-commits.sh --big), kept
  # BIG_NOTE: what went wrong while listing them (e.g. a partial clone lacks blobs: git log stops there)
  BIG_FILE=$CORPUS_DIR/big.txt BIG_NOTE=""
  if ! [ -f "$BIG_FILE" ] || ! [ "$BIG_FILE" -nt "$CORPUS_DIR/.shellac-bench-corpus" ]; then
    bench_log "corpus: listing the commits with 10k+ line diffs (sample-commits.sh --big)"
    # a partial clone: git log fails at the first missing blob; the commits listed before it are kept
    "$BENCH_DIR/corpus/sample-commits.sh" --repo "$BASE_REPO" --big >"$BIG_FILE.tmp" 2>"$CORPUS_DIR/big.log" ||
      grep -q '^fatal: unable to read [0-9a-f]*$' "$CORPUS_DIR/big.log" ||
      { cat "$CORPUS_DIR/big.log" >&2; bench_die "sample-commits.sh --big failed"; }
    mv "$BIG_FILE.tmp" "$BIG_FILE"
  fi
  if [ -s "$CORPUS_DIR/big.log" ]; then
    BIG_NOTE="the list is partial ($(wc -l <"$BIG_FILE") commit(s) listed before git log stopped with \`$(head -n1 "$CORPUS_DIR/big.log")\`)"
    ls "$BASE_REPO"/objects/pack/*.promisor >/dev/null 2>&1 &&
      BIG_NOTE+=" (the repository is a partial clone, a promisor pack: some blobs are not there)"
    bench_log "corpus: $BIG_NOTE"
  fi
}

commit_facts() {  # SHA-FILE -> "SHA<TAB>changed lines<TAB>files<TAB>subject" a line, in the file's order
  # lines = added + deleted against the first parent (renames detected), what cgit's diff shows. In
  # a partial clone git cannot diff a commit whose blobs are missing: then each commit on its own, and
  # such a commit gets lines -1 (unknown) and files 1 (its page is expected to show a diff).
  local sha
  commit_facts_git <"$1" 2>/dev/null && return
  while read -r sha; do
    commit_facts_git <<<"$sha" 2>/dev/null ||
      printf '%s\t-1\t1\t%s\n' "$sha" "$(git -C "$BASE_REPO" log -1 --format=%s "$sha")"
  done <"$1"
}

commit_facts_git() {  # SHAs on stdin -> commit_facts lines; fails when git cannot make a diff
  local t
  t=$(git -C "$BASE_REPO" log --no-walk=unsorted --stdin -M --numstat --diff-merges=first-parent \
    --format='%x01%H%x09%s') || return 1
  awk -F'\t' '
      function out() { if (sha != "") printf "%s\t%d\t%d\t%s\n", sha, lines, files, subj }
      /^\x01/ { out(); sha = substr($1, 2); subj = $2; lines = 0; files = 0; next }
      NF >= 3 { files++; if ($1 != "-") lines += $1 + $2 }
      END { out() }' <<<"$t"
}

make_lists() {  # writes $BENCH_TMP/lists/{crawler,forkspread,hot,burst}.txt (+ *-warmup.txt)
  mkdir -p "$BENCH_TMP/lists"
  local k n w l=$BENCH_TMP/lists
  for k in crawler forkspread hot burst; do
    python3 "$BENCH_DIR/wrk/urls.py" "$k" --cgitrc "$CGITRC" --commits "$COMMITS_FILE" --branch "$HEAD_BRANCH" \
      --seed "$SEED" >"$l/$k.txt" || bench_die "urls.py $k failed"
  done
  if [ "${WORKLOAD:-}" = crawler-mix ]; then
    # crawler-mix: every page kind shellac renders, weighted as crawlers walk a forge, each URL once
    # (bench/wrk/pages_urls.py --mix); the sampled commits left out, as for cold
    python3 "$BENCH_DIR/wrk/pages_urls.py" --cgitrc "$CGITRC" --repo "$BASE_REPO" --branch "$HEAD_BRANCH" \
      --out "$l/kinds" --seed "$SEED" --skip "$COMMITS_FILE" --mix "$l/crawler-mix.txt" ||
      bench_die "pages_urls.py failed"
    cp "$l/kinds/kinds.tsv" "$RAW/kinds.tsv"
  fi
  if [ "${WORKLOAD:-}" = cold ]; then
    # cold: every non-merge commit of the base, once, in a seeded order; the sampled commits (which
    # the checks and the probe ask for) left out, so that no measured URL is one a target saw.
    local base
    base=$(sed -n 's/^repo\.url=//p' "$CGITRC" | head -n1)
    git -C "$BASE_REPO" rev-list --no-merges --all |
      grep -v -F -f <(cut -c1-40 "$COMMITS_FILE") |
      shuf --random-source=<(yes "$SEED") | sed "s|^|/$base/commit/?id=|" >"$l/cold.txt"
  fi
  # The warm-ups get URLs of their own (the last 15% of the shuffled list), so that every target's
  # measured run at a level starts at the same line and asks for the same pages as the others.
  for k in crawler forkspread $(case ${WORKLOAD:-} in cold | crawler-mix) echo "$WORKLOAD" ;; esac); do
    n=$(wc -l <"$l/$k.txt")
    w=$((n * 15 / 100 > 0 ? n * 15 / 100 : 1))
    tail -n "$w" "$l/$k.txt" >"$l/$k-warmup.txt"
    head -n "$((n - w))" "$l/$k.txt" >"$l/$k.tmp" && mv "$l/$k.tmp" "$l/$k.txt"
  done
}


# ---------------------------------------------------------------------------------------------
# Targets: cgit direct, shellac -> cgit, varnish -> cgit (+ nginx static for hot)

shellac_binary() {  # -> SHELLAC (built unless SHELLAC_BIN) SHELLAC_GIT_REV SHELLAC_VERSION
  SHELLAC=$(bench_build_shellac)
  # the tree the binary was built from: taken now, not when the report is written (commits may land
  # meanwhile); `all` builds once and passes it on
  if [ -z "${SHELLAC_GIT_REV:-}" ]; then
    SHELLAC_GIT_REV="$(bench_git_rev "$BENCH_REPO")"
    [ -n "${SHELLAC_BIN:-}" ] && SHELLAC_GIT_REV="unknown (SHELLAC_BIN given; the tree was at $SHELLAC_GIT_REV)"
  fi
  SHELLAC_VERSION=$("$SHELLAC" --version 2>&1 | head -n1)
}

start_targets() {  # [with-nginx-static-dir]
  peers_need
  shellac_binary
  peer_cgit_start "$CGITRC"
  echo mark >"$CGIT_DIR/www/bench-mark.txt"
  local extra=()
  [ -z "${SHELLAC_CONF:-}" ] || read -r -a extra <<<"$SHELLAC_CONF"
  render_lines
  PEER_SHELLAC_ADMIN=$SHELLAC_RENDER peer_shellac_start "$SHELLAC" "$CGIT_PORT" "${RENDER_LINES[@]}" "${extra[@]}"
  peer_varnish_start "$CGIT_PORT"
  bench_watch cgit "$CGIT_PID"
  bench_watch shellac "$SHELLAC_PID" "$CGIT_PID"
  bench_watch varnish "$VARNISH_PID" "$CGIT_PID"
  BENCH_LABEL[cgit]="cgit direct"
  BENCH_LABEL[shellac]="shellac -> cgit"
  [ "$SHELLAC_RENDER" = 1 ] && BENCH_LABEL[shellac]="shellac (renders; rest -> cgit)"
  BENCH_LABEL[varnish]="varnish -> cgit"
  declare -gA TARGET_URL=([cgit]="http://127.0.0.1:$CGIT_PORT" [shellac]="http://127.0.0.1:$SHELLAC_PORT"
    [varnish]="http://127.0.0.1:$VARNISH_PORT")
  TARGETS=(cgit shellac varnish)
  PEERS=(cgit varnish)
  SWEEP_LIVE=("lighttpd=$CGIT_PID" "varnishd=$VARNISH_PID")
  SHELLAC_DIED=""
}

# The resident renderer in the scenarios that turn it on (SHELLAC_RENDER=1): shellac imports the
# corpus' cgitrc (every repository of the fork farm) and renders commit pages itself; every other
# page still goes to lighttpd+cgit. max-open-repos covers every repository, so that a sweep over all
# forks does not close and open repositories (the default, 1024, covers the usual fork farms).
SHELLAC_RENDER=0
RENDER_LINES=()

render_lines() {  # -> RENDER_LINES (config lines of the renderer, or none)
  RENDER_LINES=()
  [ "$SHELLAC_RENDER" = 1 ] || return 0
  local n
  n=$(grep -c '^repo.url=' "$CGITRC")
  RENDER_LINES=("cgitrc=$CGITRC")
  [ "$n" -gt 1024 ] && RENDER_LINES+=("max-open-repos=$((n + 8))")
  bench_meta options.render 1
  bench_meta render_lines "${RENDER_LINES[*]}"
}

render_shellac_start() {  # [KEY=VALUE...]  shellac rendering (render_lines, an admin port), SHELLAC_CONF's lines and these
  local extra=()
  [ -z "${SHELLAC_CONF:-}" ] || read -r -a extra <<<"$SHELLAC_CONF"
  PEER_SHELLAC_ADMIN=1 peer_shellac_start "$SHELLAC" "$CGIT_PORT" "${RENDER_LINES[@]}" "${extra[@]}" "$@"
}

plan_line() {  # PHASE TARGET PATH FACTS  a line of bench/wrk/render.py's plan; FACTS: a commit_facts line
  local sha lines files subj
  IFS=$'\t' read -r sha lines files subj <<<"$4"
  printf '%s\t%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "${subj:--}" "$([ "${files:-0}" -gt 0 ] && echo 1 || echo 0)"
}

check_target() {  # TARGET PATH  one GET: 200, a cgit page (shellac rendering: the commit's subject and diff); headers
  local t=$1 path=$2 url hdr=$BENCH_TMP/check-$1.head body=$BENCH_TMP/check-$1.body code
  url=${TARGET_URL[$t]}$path
  code=$(curl -sS --compressed --max-time 60 -H 'Accept-Encoding: gzip' -o "$body" -D "$hdr" -w '%{http_code}' "$url") ||
    code=fail
  if [ "$t" = shellac ] && [ "$SHELLAC_RENDER" = 1 ]; then
    local sha out
    sha=$(sed -n 's/.*[?&]id=\([0-9a-f]*\).*/\1/p' <<<"$path")
    plan_line check shellac "$path" "$(commit_facts <(echo "$sha"))" >"$BENCH_TMP/check-plan.tsv"
    out=$(python3 "$BENCH_DIR/wrk/render.py" --plan "$BENCH_TMP/check-plan.tsv" --port "shellac=${TARGET_URL[shellac]##*:}" 2>&1) ||
      bench_die "render.py: $out"
    grep -q "generator' content='shellac" "$body" && grep -q '^BENCH_RENDER .* bad=0 ' <<<"$out" ||
      { bench_log "check shellac: GET $url -> $code"; echo "$out" >&2; head -c 600 "$body" >&2
        tail -n 20 "$SHELLAC_DIR/stderr.log" >&2; bench_die "shellac does not render the commit page (its subject and diff)"; }
    grep -qi '^via:.*shellac' "$hdr" || bench_die "shellac's answer has no Via: shellac"
    return 0
  fi
  if [ "$code" != 200 ] || ! grep -q "generator' content='cgit" "$body"; then
    bench_log "check $t: GET $url -> $code"; cat "$hdr" >&2; head -c 600 "$body" >&2
    [ "$t" = shellac ] && tail -n 20 "$SHELLAC_DIR/stderr.log" >&2
    bench_die "$t does not serve cgit's page"
  fi
  case $t in
    shellac) grep -qi '^via:.*shellac' "$hdr" || bench_die "shellac's answer has no Via: shellac" ;;
    varnish) grep -qi '^x-varnish:' "$hdr" || bench_die "varnish's answer has no X-Varnish" ;;
  esac
}

probe_shellac() {  # PATH  the same page twice through shellac -> SHELLAC_MODE (a sentence)
  local url="${TARGET_URL[shellac]}$1&bench=probe" a b
  if [ "$SHELLAC_RENDER" = 1 ]; then
    bench_meta shellac_mode "renders commit pages itself (\`${RENDER_LINES[*]}\`: a frame on a page's first request, the diff from its fragment store, shared by every fork; a page asked again within its lifetime served whole from the page memo, page-memo-size=); checked: a commit page carries the commit's subject and diff"
    return
  fi
  a=$(curl -sS --max-time 60 -o /dev/null -D - "$url" | tr -d '\r' | sed -n 's/^[Xx]-[Cc]ache: *//p')
  b=$(curl -sS --max-time 60 -o /dev/null -D - "$url" | tr -d '\r' | sed -n 's/^[Xx]-[Cc]ache: *//p')
  if [ "${b:-}" = hit ]; then
    SHELLAC_MODE="caches: the same commit page asked twice gave X-Cache: ${a:-none}, then ${b}"
  else
    SHELLAC_MODE="does not cache commit pages: the same page asked twice gave X-Cache: ${a:-none}, then ${b:-none}"
  fi
  bench_log "shellac $SHELLAC_MODE"
  bench_meta shellac_mode "$SHELLAC_MODE"
}

mark() {  # NAME  a request for a static file with NAME in the query: a mark in lighttpd's access log
  curl -sS --max-time 10 -o /dev/null "http://127.0.0.1:$CGIT_PORT/bench-mark.txt?$1" || bench_log "mark $1 failed"
}

# After lighttpd stopped (its log flushed): the access log lines between the marks NAME-start and
# NAME-end of every point (NAME = "TARGET-cCONNS"), put in column COL of its row (requests that reached cgit).
add_origin_column() {  # [TSV [COL]]  default: $BENCH_TSV, column 14
  local tsv=${1:-$BENCH_TSV}
  awk -F'\t' -v OFS='\t' -v lf="$CGIT_ACCESS_LOG" -v col="${2:-14}" '
    BEGIN {
      while ((getline line < lf) > 0) {
        if (match(line, /bench-mark\.txt\?[^ ]+/)) {
          m = substr(line, RSTART + 15, RLENGTH - 15)
          if (m ~ /-start$/) { cur = substr(m, 1, length(m) - 6); n[cur] = 0; open[cur] = 1 }
          else if (m ~ /-end$/) { delete open[substr(m, 1, length(m) - 4)] }
          continue
        }
        for (k in open) n[k]++
      }
    }
    { k = $1 "-c" $2; $col = (k in n) ? n[k] : "-"; print }' "$tsv" >"$tsv.new" && mv "$tsv.new" "$tsv"
}

# crawler, fork-spread: at each level every target's measured run starts at LEVEL_START of the list
# (the same pages for all); the next level starts past the furthest any target got (NEXT), shellac
# excepted when it renders (see point). Warm-ups
# walk a list of their own, one cursor per target (WARM).
LEVEL_START=0 NEXT=0
declare -A WARM=()
WORKLOAD=""            # crawler | forkspread | hot

workload_env() {  # TARGET [warmup]  exports what the wrk script of $WORKLOAD reads for TARGET
  local t=$1
  case $WORKLOAD in
    crawler | forkspread | cold | crawler-mix)
      export BENCH_WRK_SCRIPT=$BENCH_DIR/wrk/$([ "$WORKLOAD" = forkspread ] && echo forkspread || echo crawler).lua CRAWL_LANES=2
      if [ "${2:-}" = warmup ]; then
        export CRAWL_URLS=$BENCH_TMP/lists/$WORKLOAD-warmup.txt CRAWL_START=${WARM[$t]:-0}
      else
        export CRAWL_URLS=$BENCH_TMP/lists/$WORKLOAD.txt CRAWL_START=$LEVEL_START
      fi ;;
    hot)
      export BENCH_WRK_SCRIPT=$BENCH_DIR/wrk/hot.lua HOT_URLS=$BENCH_TMP/lists/hot.txt
      [ "$t" = nginx ] && HOT_URLS=$BENCH_TMP/lists/hot-static.txt ;;
  esac
  if [ "$IDENTITY" = 1 ]; then unset WRK_HEADERS; else export WRK_HEADERS=$BENCH_TMP/lists/headers.txt; fi
}

crawl_next() {  # WRK-OUTPUT -> where the run's list walk ended (BENCH_CRAWL next=), or nothing
  sed -n 's/^BENCH_CRAWL .*next=\([0-9]*\).*/\1/p' "$1" | head -n1
}

crawl_fields() {  # WRK-OUTPUT -> "REPEATS URLS ENDED WALKED_US" of crawler.lua's BENCH_CRAWL line (ENDED: threads that
  # stopped at the list's end; WALKED_US: the walk's time when every thread stopped, at the end or at
  # the page floor, else 0), or nothing
  sed -n 's/^BENCH_CRAWL .*repeats=\([0-9]*\) urls=\([0-9]*\)\( ended=\([0-9]*\)\)\{0,1\}\( enough=[0-9]*\)\{0,1\}\( walked_us=\([0-9]*\)\)\{0,1\}.*/\1\t\2\t\4\t\7/p' "$1" |
    awk -F'\t' -v OFS='\t' '{ if ($3 == "") $3 = 0; if ($4 == "") $4 = 0; print }' | head -n1
}

crawl_row() {  # TARGET C measured|warmup WRK-OUTPUT  -> $RAW/crawl.tsv: "TARGET C KIND REPEATS URLS ENDED WALKED_US"
  local r
  r=$(crawl_fields "$4")
  [ -z "$r" ] || printf '%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$r" >>"$RAW/crawl.tsv"
}

# The page floor (--min-pages N): a measured walk lasts --duration and longer, up to --max-duration,
# until the target answered N pages: each wrk thread stops (crawler.lua's CRAWL_ENOUGH) once it sent
# its share of N plus one request per connection it holds (those may be unanswered at the stop).
# POINT_MIN_US (pages: the first target's walk) makes the walk last at least that long too.
crawl_point() {  # TARGET URL CONNS  bench_point with no warm-up, with the page floor when there is one
  local th=2 secs=$BENCH_DURATION rc least=$((BENCH_DURATION * 1000000))
  [ "$3" -lt 2 ] && th=1   # bench_wrk_raw's threads
  [ "${POINT_MIN_US:-0}" -gt "$least" ] && least=$POINT_MIN_US
  if [ "${MIN_PAGES:-0}" -gt 0 ] && [[ ${BENCH_WRK_SCRIPT:-} == */crawler.lua ]]; then
    export CRAWL_ENOUGH=$(((MIN_PAGES + th - 1) / th + ($3 + th - 1) / th)) CRAWL_MIN_US=$least
    secs=$MAX_DURATION
  fi
  BENCH_WARMUP=0 BENCH_DURATION=$secs bench_point "$@" && rc=0 || rc=$?
  unset CRAWL_ENOUGH CRAWL_MIN_US
  return $rc
}

point() {  # TARGET C  warm-up (own URLs), marks, measured run; one row in $BENCH_TSV
  local t=$1 c=$2 out=$BENCH_TMP/wrk-$1-c$2.txt next
  if [ "$BENCH_WARMUP" != 0 ]; then
    workload_env "$t" warmup
    bench_wrk_raw "$out.warmup" "$c" "$BENCH_WARMUP" "${TARGET_URL[$t]}/" || bench_log "warm-up $t c=$c: wrk exit $?"
    next=$(crawl_next "$out.warmup")
    [ -n "$next" ] && WARM[$t]=$next
  fi
  # cgit processes a run leaves behind (answers wrk no longer waits for) would load the next run
  peer_origin_idle 60 || bench_log "cgit processes still running before $t c=$c"
  workload_env "$t"
  mark "$t-c$c-start"
  crawl_point "$t" "${TARGET_URL[$t]}/" "$c" || true
  peer_origin_idle 60 || true
  mark "$t-c$c-end"
  next=$(crawl_next "$out")
  crawl_row "$t" "$c" measured "$out"
  [ -f "$out.warmup" ] && crawl_row "$t" "$c" warmup "$out.warmup"
  # shellac rendering keeps the pages it made (its page memo), so its walk pushes the next level's
  # start as every caching peer's does: no target is asked a URL again at a later level.
  [ -n "$next" ] && [ "$next" -gt "$NEXT" ] && NEXT=$next
  return 0
}

cold_workload() { case ${WORKLOAD:-} in cold | crawler-mix) return 0 ;; esac; return 1; }  # store empty at the start

render_point() {  # TARGET C  a point; shellac's render counts before and after -> $RAW/cold-renders.tsv
  local before
  [ "$1" = shellac ] && before=$(render_counts)
  point "$@"
  [ "$1" = shellac ] || return 0
  printf '%s\t%s\t%s\n' "$2" "$before" "$(render_counts)" >>"$RAW/cold-renders.tsv"
}

# sweep's hooks: POINT_FN measures one target at one level (default: point, the cgit workloads);
# SWEEP_LIVE lists NAME=PID of the servers that must stay up; a target with an entry in
# TARGET_FAILED (e.g. a wrong body in the pre-check) is not measured; targets named shellac* are
# skipped once shellac died.
POINT_FN=point
SWEEP_LIVE=()
declare -A TARGET_FAILED=() TARGET_CHECK=()

sweep() {  # every level, every target back to back; a disturbed level again (--retries)
  local c t attempt disturbed rc p
  REMEASURED=""
  for c in ${SWEEP//,/ }; do
    for ((attempt = 0; ; attempt++)); do
      disturbed=0
      LEVEL_START=$NEXT
      for t in "${TARGETS[@]}"; do
        [[ $t == shellac* ]] && [ -n "$SHELLAC_DIED" ] && continue
        [ -n "${TARGET_FAILED[$t]:-}" ] && continue
        "$POINT_FN" "$t" "$c"
        [ "$(bench_other_cpu "$t" "$c")" -gt 20 ] && disturbed=1
        if [ -n "${SHELLAC_PID:-}" ] && ! bench_alive "$SHELLAC_PID" && [ -z "$SHELLAC_DIED" ]; then
          wait "$SHELLAC_PID" 2>/dev/null && rc=0 || rc=$?
          SHELLAC_DIED="shellac (pid $SHELLAC_PID) exited with status $rc during the $t run at c=$c"
          bench_log "$SHELLAC_DIED"; tail -n 20 "$SHELLAC_DIR/stderr.log" >&2
        fi
        for p in "${SWEEP_LIVE[@]}"; do
          bench_alive "${p#*=}" || bench_die "${p%%=*} died during the $t run at c=$c"
        done
      done
      [ "$disturbed" = 1 ] && [ "$attempt" -lt "$RETRIES" ] && [ -z "$SHELLAC_DIED" ] || break
      quiet_wait || break   # no budget left: keep the disturbed level (the report says so)
      bench_log "c=$c disturbed by other processes: measuring the level again"
      REMEASURED+="c=$c "
      bench_drop_level "$c"
    done
  done
}

stop_targets() {  # stops every server by pid (lighttpd last, so its log is complete) -> SHELLAC_EXIT
  SHELLAC_EXIT=""
  if [ -z "$SHELLAC_DIED" ]; then
    bench_stop "$SHELLAC_PID" 35
    SHELLAC_EXIT="exit status $BENCH_STOP_RC after SIGTERM"
  fi
  bench_stop "$VARNISH_PID" 15
  [ -n "${NGINX_PID:-}" ] && bench_stop "$NGINX_PID" 10
  bench_stop "$CGIT_PID" 15
}


# The sweep of the forge scenarios (crawler, cold, hot, fork-spread): cgit direct, shellac, Varnish
# at every level, on the corpus' URL lists. A scenario script may define forge_extra_targets (after
# the targets started: hot adds nginx static), forge_before_sweep (instead of filling shellac's
# fragment store when it renders; cold and crawler-mix keep it empty) and forge_after_sweep (after
# the servers stopped: cold).
forge_run() {  # SCENARIO WORKLOAD LUA [REPORT-NAME]
  local name=$1 lua=$3 t check
  WORKLOAD=$2
  begin "$name" "${4:-$name}"
  peers_need
  corpus_prepare
  make_lists
  [ "$IDENTITY" = 1 ] || echo "Accept-Encoding: gzip" >"$BENCH_TMP/lists/headers.txt"
  start_targets
  EXTRA_PEERS=()
  check="$(head -n1 "$BENCH_TMP/lists/hot.txt")&bench=check"
  if declare -F forge_extra_targets >/dev/null; then forge_extra_targets; fi
  for t in "${TARGETS[@]}"; do [ "$t" = nginx ] || check_target "$t" "$check"; done
  probe_shellac "$(head -n1 "$BENCH_TMP/lists/hot.txt")"
  if declare -F forge_before_sweep >/dev/null; then forge_before_sweep
  elif cold_workload; then  # the store stays empty: nothing rendered before the sweep but the check and probe pages
    POINT_FN=render_point
    : >"$RAW/cold-renders.tsv"
  elif [ "$SHELLAC_RENDER" = 1 ]; then warm_fragments; fi
  quiet_wait || true
  bench_meta sweep_renders_before "$(render_counts)"
  sweep
  bench_meta sweep_renders_after "$(render_counts)"
  stop_targets
  add_origin_column
  if declare -F forge_after_sweep >/dev/null; then forge_after_sweep; fi
  bench_meta workload "$WORKLOAD"
  bench_meta lua "$lua"
  bench_meta next_line "$NEXT"
  for t in "${TARGETS[@]}"; do bench_meta "targets[]" "$t"; done
  for t in "${PEERS[@]}"; do bench_meta "peers[]" "$t"; done
  for t in "${EXTRA_PEERS[@]}"; do bench_meta "extra_peers[]" "$t"; done
  bench_report
  [ -z "$SHELLAC_DIED" ]
}

# -> "KIND RENDERS SECONDS;..." (bench/report.py takes the differences), from shellac's /metrics
# (admin port), or nothing; a kind whose bodies were streamed also gives "KIND:stream PIECES
# SECONDS" (the pieces made after the render: a snapshot's archive).
render_counts() {
  [ -n "${SHELLAC_ADMIN_PORT:-}" ] || return 0
  { curl -sS --max-time 10 "http://127.0.0.1:$SHELLAC_ADMIN_PORT/metrics" 2>/dev/null || true; } |
    sed -n 's/^shellac_render\(s\|_seconds\|_stream_pieces\|_stream_seconds\)_total{kind="\([^"]*\)"} \(.*\)/\2 \1 \3/p' |
    awk '{ k[$1] = 1; v[$1, $2] = $3 }
         END { for (x in k) {
                 print x, v[x, "s"] + 0, v[x, "_seconds"] + 0
                 if (v[x, "_stream_pieces"] > 0) print x ":stream", v[x, "_stream_pieces"] + 0, v[x, "_stream_seconds"] + 0 } }' |
    sort | paste -sd';'
}


warm_fragments() {  # fills shellac's fragment store: urls.py warm (every sampled commit x diff option) -> meta warm.*
  local l=$BENCH_TMP/lists out t0 t1
  python3 "$BENCH_DIR/wrk/urls.py" warm --cgitrc "$CGITRC" --commits "$COMMITS_FILE" >"$l/warm.txt" || bench_die "urls.py warm failed"
  sed 's/^/warm\tshellac\t/; s/$/\t-\t0/' "$l/warm.txt" >"$l/warm-plan.tsv"
  bench_log "warming shellac's fragment store: $(wc -l <"$l/warm.txt") pages, one at a time"
  bench_meta warm.pages "$(wc -l <"$l/warm.txt")"
  bench_meta warm.renders_before "$(render_counts)"
  t0=$(date +%s%N)
  out=$(python3 "$BENCH_DIR/wrk/render.py" --plan "$l/warm-plan.tsv" --port "shellac=$SHELLAC_PORT") || bench_die "render.py (warm) failed"
  t1=$(date +%s%N)
  grep -q '^BENCH_RENDER .* bad=0 ' <<<"$out" || { echo "$out" >&2; bench_log "warm: some pages failed"; }
  bench_meta warm.ms "$(((t1 - t0) / 1000000))"
  bench_meta warm.renders_after "$(render_counts)"
  bench_meta warm.failed "$(sed -n 's/^BENCH_RENDER .* bad=\([0-9]*\) .*/\1/p' <<<"$out")"
}

# ---------------------------------------------------------------------------------------------
# ESI scenarios (cached, esi, tls): synthetic cgit-like pages (bench/wrk/esipages.py) served by nginx
# as the origin (frames with Surrogate-Control: content="ESI/1.0", everything cacheable for an hour);
# shellac (esi=surrogate) and Varnish (do_esi on that header, do_gzip) in front of it. Before any
# load every target's page is fetched once with Accept-Encoding: gzip, gunzipped and compared with
# the assembled page: a target that delivers something else is reported as failed and not measured.

esi_setup() {  # NAME [slow] [tls]  pages, origin, shellac, varnish -> PAGES, TARGET_URL, SHELLAC_NOTES
  local name=$1 want_slow=0 want_tls=0 a
  shift
  for a in "$@"; do case $a in slow) want_slow=1 ;; tls) want_tls=1 ;; esac; done
  begin "$name"
  peers_need
  shellac_binary
  PAGES=$BENCH_TMP/pages
  python3 "$BENCH_DIR/wrk/esipages.py" --out "$PAGES" --seed "$SEED" || bench_die "esipages.py failed"
  chmod -R a+rX "$PAGES"
  chmod 755 "$BENCH_TMP"
  local sizes
  sizes=$(awk '{ printf "%s%s %s bytes (gzip %s)", (NR > 1 ? ", " : ""), $1, $2, $3 }' "$PAGES/sizes.txt")
  bench_meta corpus "synthetic cgit-like commit pages from bench/wrk/esipages.py (seed $SEED, no git corpus): $sizes"
  local loc
  loc="    location /page/ { add_header Surrogate-Control 'content=\"ESI/1.0\"'; add_header Cache-Control 'max-age=3600'; }
    location /frag/ { add_header Cache-Control 'max-age=3600'; }
    location /mem/ { add_header Cache-Control 'max-age=3600'; rewrite ^ /frag/diff.html break; }"
  if [ "$want_slow" = 1 ]; then
    peer_slow_origin_start "$PAGES/www" "$SLOW_DELAY_MS"
    loc+="
    location /slow/ { proxy_pass http://127.0.0.1:$SLOW_PORT; proxy_http_version 1.1; }"
  fi
  peer_nginx_static_start "$PAGES/www" gzip_static "$loc"
  ORIGIN_PORT=$NGINX_PORT
  # shellac: ESI on Surrogate-Control (esi=surrogate), the admin port for /metrics, TLS for tls. A
  # build that does not take a line yet is started without it (the check then shows what it delivers).
  local lines=(cache=on) extra=() l
  SHELLAC_NOTES=() SHELLAC_TLS_PORT=""
  l=esi=surrogate
  if peer_shellac_accepts "$SHELLAC" "$l"; then lines+=("$l")
  else SHELLAC_NOTES+=("this build does not take \`$l\` ($(tail -n1 "$BENCH_TMP/shellac-probe/probe.log")): started without it"); fi
  if [ "$want_tls" = 1 ]; then
    local td
    td=$(peer_dir shellac-tls)
    peer_tls_cert "$td"
    SHELLAC_TLS_PORT=$(bench_free_port)
    l="listen-tls=127.0.0.1:$SHELLAC_TLS_PORT cert=$td/cert.pem key=$td/key.pem"
    if peer_shellac_accepts "$SHELLAC" "$l"; then lines+=("$l")
    else
      SHELLAC_NOTES+=("this build does not take \`listen-tls=... cert=... key=...\` ($(tail -n1 "$BENCH_TMP/shellac-probe/probe.log")): no TLS listener")
      SHELLAC_TLS_PORT=""
    fi
  fi
  [ -z "${SHELLAC_CONF:-}" ] || read -r -a extra <<<"$SHELLAC_CONF"
  PEER_SHELLAC_ADMIN=1 peer_shellac_start "$SHELLAC" "$ORIGIN_PORT" "${lines[@]}" "${extra[@]}"
  bench_meta shellac_lines "${lines[*]}${SHELLAC_CONF:+ $SHELLAC_CONF}"
  for l in "${SHELLAC_NOTES[@]}"; do bench_meta "shellac_notes[]" "$l"; done
  peer_varnish_start "$ORIGIN_PORT"
  SWEEP_LIVE=("nginx=$NGINX_PID" "varnishd=$VARNISH_PID")
  [ "$want_slow" = 1 ] && SWEEP_LIVE+=("slow-origin=$SLOW_PID")
  SHELLAC_DIED=""
  TARGETS=()
  declare -gA TARGET_URL=()
  POINT_FN=esi_point
  [ "$IDENTITY" = 1 ] || echo "Accept-Encoding: gzip" >"$BENCH_TMP/headers.txt"
}

esi_point() {  # TARGET C  warm-up + measured run on TARGET_URL[TARGET] (one URL, keep-alive)
  unset BENCH_WRK_SCRIPT
  if [ "$IDENTITY" = 1 ]; then unset WRK_HEADERS; else export WRK_HEADERS=$BENCH_TMP/headers.txt; fi
  bench_point "$1" "${TARGET_URL[$1]}" "$2" || true
}

esi_add_target() {  # KEY LABEL URL EXPECTED-FILE WATCH-PID... [-- CURL-ARGS...]  checks the body first
  local key=$1 label=$2 url=$3 want=$4 pids=() curl_args=()
  shift 4
  while [ $# -gt 0 ] && [ "$1" != -- ]; do pids+=("$1"); shift; done
  [ "${1:-}" = -- ] && { shift; curl_args=("$@"); }
  TARGETS+=("$key")
  TARGET_URL[$key]=$url
  BENCH_LABEL[$key]=$label
  bench_watch "$key" "${pids[@]}"
  # twice: the first answer may be a miss that fills the cache; the second is what the load gets
  bench_check_body "$url" "$want" "${curl_args[@]}" >/dev/null || true
  if bench_check_body "$url" "$want" "${curl_args[@]}"; then
    TARGET_CHECK[$key]=$BENCH_CHECK_NOTE
    bench_log "check $key: ok: $BENCH_CHECK_NOTE"
  else
    TARGET_FAILED[$key]=$BENCH_CHECK_NOTE
    bench_log "check $key: failed, not measured: $BENCH_CHECK_NOTE"
  fi
}

esi_no_target() {  # KEY LABEL WHY  a target that cannot run at all (e.g. no TLS listener)
  TARGETS+=("$1")
  BENCH_LABEL[$1]=$2
  TARGET_FAILED[$1]=$3
  bench_log "check $1: $3"
}

esi_stop() {  # shellac first (its exit is part of the report); the EXIT trap stops the rest by pid
  SHELLAC_EXIT=""
  if [ -z "$SHELLAC_DIED" ]; then
    bench_stop "$SHELLAC_PID" 35
    SHELLAC_EXIT="exit status $BENCH_STOP_RC after SIGTERM"
  fi
}

source "$BENCH_DIR/peers.sh"

# ---------------------------------------------------------------------------------------------
# Instruction counts (bench/callgrind-cold.sh, bench/callgrind-frames.sh)

callgrind_shellac() {  # BIN OUT NAME CGITRC CONF-LINES ASK [ARG...]  -> the run's total Ir on stdout
  # shellac BIN under valgrind --tool=callgrind, one worker and one render thread, no access log,
  # no backend, cgitrc=CGITRC plus CONF-LINES (newline separated, may be empty); the whole process
  # counted from start to exit. Once it is ready, ASK ARG... runs with $CALLGRIND_PORT set (its
  # stdout must go elsewhere: this function's is the count); then SIGTERM. Files in OUT: NAME.conf,
  # run-NAME.log (shellac's stderr), callgrind-NAME.out.
  local bin=$1 out=$2 name=$3 cgitrc=$4 lines=$5 pid
  shift 5
  CALLGRIND_PORT=$(bench_free_port)
  {
    printf '%s\n' "listen=127.0.0.1:$CALLGRIND_PORT" admin-listen=off backend=127.0.0.1:1 threads=1 \
      render-threads=1 access-log=off "cgitrc=$cgitrc"
    [ -z "$lines" ] || printf '%s\n' "$lines"
  } >"$out/$name.conf"
  valgrind --tool=callgrind --callgrind-out-file="$out/callgrind-$name.out" \
    "$bin" -c "$out/$name.conf" 2>"$out/run-$name.log" &
  pid=$!
  if ! bench_wait_log "$out/run-$name.log" '^shellac: ready' 120 "$pid"; then
    kill -TERM "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
    echo "shellac did not start under callgrind: $out/run-$name.log" >&2
    return 1
  fi
  if ! CALLGRIND_PORT=$CALLGRIND_PORT "$@"; then
    kill -TERM "$pid"
    wait "$pid" 2>/dev/null
    return 1
  fi
  kill -TERM "$pid"
  wait "$pid" || true
  awk '/^(summary|totals):/ {print $2; exit}' "$out/callgrind-$name.out"
}
