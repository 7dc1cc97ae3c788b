#!/usr/bin/env bash
# bench/run.sh: shellac against its peers on a forge-shaped corpus, side by side, in one run.
#
# Usage: bench/run.sh SCENARIO [options]
#   SCENARIO   crawler | hot | fork-spread | burst | passthrough | cached | esi | render | tls | all
#
# crawler, hot and fork-spread load three targets back to back at each concurrency level of the sweep:
# cgit direct (CGI under lighttpd), shellac -> that lighttpd+cgit, Varnish 7 -> the same lighttpd+cgit
# (hot adds nginx serving the same pages as static files: the ceiling). burst sends N simultaneous
# requests for one cold commit page to each target and counts what reached cgit. passthrough runs
# bench/passthrough.sh. cached, esi, render and tls need later issues: they say so and write a results
# file that says so. all runs every scenario, one after the other (each in its own process).
# Results: bench/results/SCENARIO.md (+ SCENARIO.png), bench/results/all.md for `all`.
#
# Options:
#   --sweep LIST      connection counts (default 1,2,4,8,16,32; --small: 1,2,4)
#   --duration S      measured seconds per point (default 5; --small: 2)
#   --warmup S        discarded seconds of load before each point (default 1)
#   --burst LIST      burst sizes (default 10,100,1000; --small: 10,50)
#   --burst-timeout S a burst client waits at most S seconds (default 90)
#   --small           a quick run for development: 2,000 commits, 100 tags, 10 forks, 30 sampled
#                     commits, the short sweep and durations above (results go to bench/tmp/)
#   --commits N       commits of the generated base repository (default 20000)
#   --tags T          annotated tags of the generated base repository (default 1000)
#   --forks F         forks in the fork farm (default 100)
#   --sample M        sampled commits the URL lists are made of (default 150)
#   --seed S          seed of the generators and of the URL order (default 1)
#   --from REPO       use this repository (e.g. a clone of git/git) as the base instead of generating one
#   --corpus DIR      keep the corpus in DIR (default: $SHELLAC_BENCH_CORPUS, else
#                     ${XDG_CACHE_HOME:-/tmp}/shellac-bench-corpus/<parameters>); reused when present
#                     and made with the same parameters and generator
#   --identity        do not send Accept-Encoding: gzip (default: sent, as crawlers and browsers do)
#   --wait-quiet S    wait for an idle machine (< 15% of a core busy) before each scenario, at most S
#                     seconds over the whole run; with it, a level disturbed by other processes (> 20% of
#                     a core) is measured again once while the budget lasts (see --retries)
#   --retries N       measure a disturbed level again at most N times (default 1 with --wait-quiet, else 0)
#   --out DIR         where the reports go (default bench/results; bench/tmp with --small)
#   --keep-tmp        keep the temp dir (configs, logs, raw wrk output)
#   SHELLAC_BIN=PATH  use this binary instead of `make -C REPO release` -> build-release/proxy/shellac
#   SHELLAC_CONF='k=v k=v'  extra lines for shellac's generated config (e.g. 'cache=off')
set -euo pipefail
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/peers.sh"

ARGS=("$@")
usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit "${1:-2}"; }
[ $# -ge 1 ] || usage 2
case $1 in -h | --help) usage 0 ;; esac
SCENARIO=$1
shift

SWEEP="" DURATION="" BURST="" BURST_TIMEOUT=90 SMALL=0 COMMITS="" TAGS="" FORKS="" SAMPLE="" SEED=1
FROM="" CORPUS="" IDENTITY=0 WAIT_QUIET=0 RETRIES="" OUT=""
PASS_ARGS=()   # options forwarded to the children of `all`
while [ $# -gt 0 ]; do
  case $1 in
    --sweep) SWEEP=${2:?--sweep needs a list}; PASS_ARGS+=("$1" "$2"); shift 2 ;;
    --duration) DURATION=${2:?--duration needs seconds}; PASS_ARGS+=("$1" "$2"); shift 2 ;;
    --warmup) BENCH_WARMUP=${2:?--warmup needs seconds}; PASS_ARGS+=("$1" "$2"); shift 2 ;;
    --burst) BURST=${2:?--burst needs a list}; PASS_ARGS+=("$1" "$2"); shift 2 ;;
    --burst-timeout) BURST_TIMEOUT=${2:?}; PASS_ARGS+=("$1" "$2"); shift 2 ;;
    --small) SMALL=1; PASS_ARGS+=("$1"); shift ;;
    --commits) COMMITS=${2:?}; PASS_ARGS+=("$1" "$2"); shift 2 ;;
    --tags) TAGS=${2:?}; PASS_ARGS+=("$1" "$2"); shift 2 ;;
    --forks) FORKS=${2:?}; PASS_ARGS+=("$1" "$2"); shift 2 ;;
    --sample) SAMPLE=${2:?}; PASS_ARGS+=("$1" "$2"); shift 2 ;;
    --seed) SEED=${2:?}; PASS_ARGS+=("$1" "$2"); shift 2 ;;
    --from) FROM=${2:?--from needs a repository}; PASS_ARGS+=("$1" "$2"); shift 2 ;;
    --corpus) CORPUS=${2:?--corpus needs a folder}; PASS_ARGS+=("$1" "$2"); shift 2 ;;
    --identity) IDENTITY=1; PASS_ARGS+=("$1"); shift ;;
    --wait-quiet) WAIT_QUIET=${2:?--wait-quiet needs seconds}; shift 2 ;;
    --retries) RETRIES=${2:?}; PASS_ARGS+=("$1" "$2"); shift 2 ;;
    --out) OUT=${2:?--out needs a folder}; PASS_ARGS+=("$1" "$2"); shift 2 ;;
    --keep-tmp) BENCH_KEEP_TMP=1; PASS_ARGS+=("$1"); shift ;;
    -h | --help) usage 0 ;;
    *) echo "run.sh: unknown argument: $1" >&2; usage 2 ;;
  esac
done
if [ "$SMALL" = 1 ]; then
  : "${SWEEP:=1,2,4}" "${DURATION:=2}" "${BURST:=10,50}" "${COMMITS:=2000}" "${TAGS:=100}" "${FORKS:=10}" "${SAMPLE:=30}"
else
  : "${SWEEP:=1,2,4,8,16,32}" "${DURATION:=5}" "${BURST:=10,100,1000}" "${COMMITS:=20000}" "${TAGS:=1000}" "${FORKS:=100}" "${SAMPLE:=150}"
fi
BENCH_DURATION=$DURATION
[ -n "$RETRIES" ] || { [ "$WAIT_QUIET" -gt 0 ] && RETRIES=1 || RETRIES=0; }
[[ $SWEEP =~ ^[1-9][0-9]*(,[1-9][0-9]*)*$ ]] || bench_die "--sweep: expected a list like 1,2,4,8"
[[ $BURST =~ ^[1-9][0-9]*(,[1-9][0-9]*)*$ ]] || bench_die "--burst: expected a list like 10,100,1000"
for v in DURATION BENCH_WARMUP BURST_TIMEOUT COMMITS TAGS FORKS SAMPLE SEED WAIT_QUIET RETRIES; do
  [[ ${!v} =~ ^[0-9]+$ ]] || bench_die "${v,,}: expected a whole number, got '${!v}'"
done
[ "$DURATION" -ge 1 ] || bench_die "--duration: at least 1 second"
if [ -z "$OUT" ]; then
  if [ "$SMALL" = 1 ]; then OUT=$BENCH_REPO/bench/tmp; else OUT=$BENCH_REPO/bench/results; fi
fi
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true   # 1,000 burst clients and wrk need descriptors

# The --wait-quiet budget is shared by every scenario of one `all` run through a file.
: "${BENCH_QUIET_FILE:=}"
quiet_wait() {  # waits for an idle machine within what is left of the budget
  [ "$WAIT_QUIET" -gt 0 ] || return 0
  local left t0 t1
  left=$WAIT_QUIET
  [ -n "$BENCH_QUIET_FILE" ] && [ -s "$BENCH_QUIET_FILE" ] && left=$(cat "$BENCH_QUIET_FILE")
  [ "$left" -gt 0 ] || { bench_log "wait-quiet budget used up; measuring anyway"; return 1; }
  t0=$(date +%s)
  local rc=0
  bench_wait_quiet "$left" || rc=1
  t1=$(date +%s)
  left=$((left - (t1 - t0)))
  [ "$left" -ge 0 ] || left=0
  if [ -n "$BENCH_QUIET_FILE" ]; then echo "$left" >"$BENCH_QUIET_FILE"; else WAIT_QUIET=$left; fi
  [ "$rc" = 0 ] && bench_log "machine quiet (wait-quiet budget left: ${left}s)"
  return $rc
}

# ---------------------------------------------------------------------------------------------
# Corpus: generated (or --from a real repository) once, kept outside the tree, reused.

corpus_hash() {  # the generator's version: a hash of every file of bench/corpus
  (cd "$BENCH_DIR/corpus" && cat gen-repo.sh gen-forks.sh sample-commits.sh py/*.py) | sha1sum | cut -c1-12
}

corpus_prepare() {  # -> CORPUS_DIR BASE_REPO CGITRC COMMITS_FILE HEAD_BRANCH CORPUS_DESC
  local root key params stamp
  root=${SHELLAC_BENCH_CORPUS:-${XDG_CACHE_HOME:-/tmp}/shellac-bench-corpus}
  if [ -n "$FROM" ]; then
    git -C "$FROM" rev-parse --git-dir >/dev/null 2>&1 || bench_die "--from $FROM: not a git repository"
    BASE_REPO=$(realpath "$(git -C "$FROM" rev-parse --absolute-git-dir)")
    local head
    head=$(git -C "$BASE_REPO" rev-parse HEAD)
    key="from-$(basename "$BASE_REPO" .git)-${head:0:12}-f$FORKS-m$SAMPLE-s$SEED"
    params="from=$BASE_REPO head=$head forks=$FORKS sample=$SAMPLE seed=$SEED generator=$(corpus_hash)"
  else
    key="gen-c$COMMITS-t$TAGS-f$FORKS-m$SAMPLE-s$SEED"
    params="commits=$COMMITS tags=$TAGS forks=$FORKS sample=$SAMPLE seed=$SEED generator=$(corpus_hash)"
  fi
  CORPUS_DIR=${CORPUS:-$root/$key}
  [ -z "$FROM" ] && BASE_REPO=$CORPUS_DIR/base.git
  stamp=$CORPUS_DIR/.shellac-bench-corpus
  if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$params" ] && [ -s "$CORPUS_DIR/commits.txt" ] &&
    [ -f "$CORPUS_DIR/cgitrc" ]; then
    bench_log "corpus: reusing $CORPUS_DIR"
  else
    if [ -e "$CORPUS_DIR" ] && [ -n "$(ls -A "$CORPUS_DIR" 2>/dev/null)" ]; then
      [ -f "$stamp" ] || bench_die "$CORPUS_DIR exists and was not made by bench/run.sh; choose another --corpus"
      bench_log "corpus: $CORPUS_DIR was made with other parameters or another generator; making it again"
      rm -rf -- "$CORPUS_DIR/base.git" "$CORPUS_DIR/forks" "$CORPUS_DIR/cgitrc" "$CORPUS_DIR/commits.txt" "$stamp" \
        "$CORPUS_DIR"/*.log
    fi
    mkdir -p "$CORPUS_DIR"
    local t0
    t0=$(date +%s)
    if [ -n "$FROM" ]; then
      "$BENCH_DIR/corpus/gen-repo.sh" --from "$BASE_REPO" >"$CORPUS_DIR/gen-repo.log" 2>&1 ||
        { cat "$CORPUS_DIR/gen-repo.log" >&2; bench_die "gen-repo.sh --from $BASE_REPO failed"; }
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
  local ncommits nrepos ntags
  ncommits=$(git -C "$BASE_REPO" rev-list --all --count)
  ntags=$(git -C "$BASE_REPO" for-each-ref --format=x refs/tags | wc -l)
  nrepos=$(grep -c '^repo.url=' "$CGITRC")
  CORPUS_DESC="$( [ -n "$FROM" ] && echo "real repository $BASE_REPO" || echo "generated by bench/corpus/gen-repo.sh (seed $SEED)"): $ncommits commits, $ntags tags, HEAD $HEAD_BRANCH $(git -C "$BASE_REPO" rev-parse --short HEAD); fork farm of $FORKS forks (gen-forks.sh, alternates) = $nrepos repositories in the cgitrc; $(wc -l <"$COMMITS_FILE") sampled commits (sample-commits.sh --seed $SEED); kept in $CORPUS_DIR"
}

make_lists() {  # writes $BENCH_TMP/lists/{crawler,forkspread,hot,burst}.txt (+ *-warmup.txt)
  mkdir -p "$BENCH_TMP/lists"
  local k n w l=$BENCH_TMP/lists
  for k in crawler forkspread hot burst; do
    python3 "$BENCH_DIR/wrk/urls.py" "$k" --cgitrc "$CGITRC" --commits "$COMMITS_FILE" --branch "$HEAD_BRANCH" \
      --seed "$SEED" >"$l/$k.txt" || bench_die "urls.py $k failed"
  done
  # The warm-ups get URLs of their own (the last 15% of the shuffled list), so that every target's
  # measured run at a level starts at the same line and asks for the same pages as the others.
  for k in crawler forkspread; do
    n=$(wc -l <"$l/$k.txt")
    w=$((n * 15 / 100 > 0 ? n * 15 / 100 : 1))
    tail -n "$w" "$l/$k.txt" >"$l/$k-warmup.txt"
    head -n "$((n - w))" "$l/$k.txt" >"$l/$k.tmp" && mv "$l/$k.tmp" "$l/$k.txt"
  done
}

# ---------------------------------------------------------------------------------------------
# Targets: cgit direct, shellac -> cgit, varnish -> cgit (+ nginx static for hot)

start_targets() {  # [with-nginx-static-dir]
  peers_need
  SHELLAC=$(bench_build_shellac)
  # the tree the binary was built from: taken now, not when the report is written (commits may land
  # meanwhile); `all` builds once and passes it on
  if [ -z "${SHELLAC_GIT_REV:-}" ]; then
    SHELLAC_GIT_REV="$(bench_git_rev "$BENCH_REPO")"
    [ -n "${SHELLAC_BIN:-}" ] && SHELLAC_GIT_REV="unknown (SHELLAC_BIN given; the tree was at $SHELLAC_GIT_REV)"
  fi
  peer_cgit_start "$CGITRC"
  echo mark >"$CGIT_DIR/www/bench-mark.txt"
  local extra=()
  [ -z "${SHELLAC_CONF:-}" ] || read -r -a extra <<<"$SHELLAC_CONF"
  peer_shellac_start "$SHELLAC" "$CGIT_PORT" "${extra[@]}"
  peer_varnish_start "$CGIT_PORT"
  bench_watch cgit "$CGIT_PID"
  bench_watch shellac "$SHELLAC_PID" "$CGIT_PID"
  bench_watch varnish "$VARNISH_PID" "$CGIT_PID"
  BENCH_LABEL[cgit]="cgit direct"
  BENCH_LABEL[shellac]="shellac -> cgit"
  BENCH_LABEL[varnish]="varnish -> cgit"
  declare -gA TARGET_URL=([cgit]="http://127.0.0.1:$CGIT_PORT" [shellac]="http://127.0.0.1:$SHELLAC_PORT"
    [varnish]="http://127.0.0.1:$VARNISH_PORT")
  TARGETS=(cgit shellac varnish)
  PEERS=(cgit varnish)
  SHELLAC_DIED=""
}

check_target() {  # TARGET PATH  one GET: 200, a cgit page; shellac's and varnish's headers
  local t=$1 path=$2 url hdr=$BENCH_TMP/check-$1.head body=$BENCH_TMP/check-$1.body code
  url=${TARGET_URL[$t]}$path
  code=$(curl -sS --compressed --max-time 60 -H 'Accept-Encoding: gzip' -o "$body" -D "$hdr" -w '%{http_code}' "$url") ||
    code=fail
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
  a=$(curl -sS --max-time 60 -o /dev/null -D - "$url" | tr -d '\r' | sed -n 's/^[Xx]-[Cc]ache: *//p')
  b=$(curl -sS --max-time 60 -o /dev/null -D - "$url" | tr -d '\r' | sed -n 's/^[Xx]-[Cc]ache: *//p')
  if [ "${b:-}" = hit ]; then
    SHELLAC_MODE="caches: the same commit page asked twice gave X-Cache: ${a:-none}, then ${b}"
  else
    SHELLAC_MODE="does not cache commit pages: the same page asked twice gave X-Cache: ${a:-none}, then ${b:-none}"
  fi
  bench_log "shellac $SHELLAC_MODE"
}

mark() {  # NAME  a request for a static file with NAME in the query: a mark in lighttpd's access log
  curl -sS --max-time 10 -o /dev/null "http://127.0.0.1:$CGIT_PORT/bench-mark.txt?$1" || bench_log "mark $1 failed"
}

# After lighttpd stopped (its log flushed): the access log lines between the marks NAME-start and
# NAME-end of every point, appended to the row as column 14 (requests that reached cgit).
add_origin_column() {
  awk -F'\t' -v OFS='\t' -v lf="$CGIT_ACCESS_LOG" '
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
    { k = $1 "-c" $2; $14 = (k in n) ? n[k] : "-"; print }' "$BENCH_TSV" >"$BENCH_TSV.new" && mv "$BENCH_TSV.new" "$BENCH_TSV"
}

# crawler, fork-spread: at each level every target's measured run starts at LEVEL_START of the list
# (the same pages for all); the next level starts past the furthest any target got (NEXT). Warm-ups
# walk a list of their own, one cursor per target (WARM).
LEVEL_START=0 NEXT=0
declare -A WARM=()
WORKLOAD=""            # crawler | forkspread | hot

workload_env() {  # TARGET [warmup]  exports what the wrk script of $WORKLOAD reads for TARGET
  local t=$1
  case $WORKLOAD in
    crawler | forkspread)
      export BENCH_WRK_SCRIPT=$BENCH_DIR/wrk/$WORKLOAD.lua CRAWL_LANES=2
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
  BENCH_WARMUP=0 bench_point "$t" "${TARGET_URL[$t]}/" "$c" || true
  peer_origin_idle 60 || true
  mark "$t-c$c-end"
  next=$(crawl_next "$out")
  [ -n "$next" ] && [ "$next" -gt "$NEXT" ] && NEXT=$next
  return 0
}

sweep() {  # every level, every target back to back; a disturbed level again (--retries)
  local c t attempt disturbed rc
  REMEASURED=""
  for c in ${SWEEP//,/ }; do
    for ((attempt = 0; ; attempt++)); do
      disturbed=0
      LEVEL_START=$NEXT
      for t in "${TARGETS[@]}"; do
        [ "$t" = shellac ] && [ -n "$SHELLAC_DIED" ] && continue
        point "$t" "$c"
        [ "$(bench_other_cpu "$t" "$c")" -gt 20 ] && disturbed=1
        if ! bench_alive "$SHELLAC_PID" && [ -z "$SHELLAC_DIED" ]; then
          wait "$SHELLAC_PID" 2>/dev/null && rc=0 || rc=$?
          SHELLAC_DIED="shellac (pid $SHELLAC_PID) exited with status $rc during the $t run at c=$c"
          bench_log "$SHELLAC_DIED"; tail -n 20 "$SHELLAC_DIR/stderr.log" >&2
        fi
        bench_alive "$CGIT_PID" || bench_die "lighttpd died during the $t run at c=$c"
        bench_alive "$VARNISH_PID" || bench_die "varnishd died during the $t run at c=$c"
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

knee_text() {  # TARGET
  local k
  k=$(bench_knee "$1")
  if [ -z "$k" ]; then echo "none in range"; return; fi
  set -- $k
  echo "c=$1 (p99 $(bench_ms "$3") ms at c=$2 -> $(bench_ms "$4") ms)"
}

report_head() {  # TITLE DESCRIPTION...
  echo "# $1"
  shift
  echo
  printf '%s\n' "$@"
  echo
  echo "- command: \`$(bench_cmdline "${ARGS0[@]}")\`"
  echo "- date: $STARTED (run took $(($(date +%s) - T_START)) s)"
  echo "- machine: $(bench_machine_line); load average at start: $LOAD_AT_START"
  echo "- versions: $(peer_versions); $(bench_version_wrk); ${SHELLAC_VERSION:-shellac not run}; shellac built from git ${SHELLAC_GIT_REV:-$(bench_git_rev "$BENCH_REPO")}"
  echo "- corpus: $CORPUS_DESC"
}

report_common() {  # the setup lines of the three-target scenarios
  echo "- load: wrk -t2 (-t1 at c=1) -c CONNS -d ${BENCH_DURATION}s --timeout $BENCH_WRK_TIMEOUT, keep-alive,"
  echo "  ${BENCH_WARMUP}s warm-up before each point (on URLs of its own), script bench/wrk/$1;"
  if [ "$IDENTITY" = 1 ]; then echo "  no Accept-Encoding"; else echo "  every request sends Accept-Encoding: gzip (as crawlers do)"; fi
  echo "- cgit: /usr/lib/cgit/cgit.cgi as CGI under lighttpd (one process per request), the corpus' cgitrc"
  echo "  (cache-size=0: no cgit cache; virtual-root=/)"
  echo "- shellac: threads=2, access-log=off, admin-listen=off, backend=that lighttpd${SHELLAC_CONF:+, $SHELLAC_CONF}, everything else default;"
  echo "  this build $SHELLAC_MODE"
  echo "- varnish: malloc,256m, ESI on for Surrogate-Control content=\"ESI/1.0\" (cgit sends none), gzip"
  echo "  for text/*, TTL from cgit's Expires (commit pages by SHA: far future), backend=that lighttpd"
  echo "- all on the same $(nproc) cores: wrk, the proxy and lighttpd+cgit compete for them"
}

report_summary() {  # the summary lines of the three-target scenarios
  local t p
  for t in "${TARGETS[@]}"; do
    p=$(bench_peak "$t")
    [ -n "$p" ] || { echo "- ${BENCH_LABEL[$t]}: no measurement"; continue; }
    set -- $p
    echo "- ${BENCH_LABEL[$t]}: peak $1 req/s at c=$2 (p99 there $(bench_ms "$(awk -F'\t' -v t="$t" -v c="$2" '$1 == t && $2 == c { print $6 }' "$BENCH_TSV")") ms); knee: $(knee_text "$t")"
  done
  for p in "${PEERS[@]}" "${EXTRA_PEERS[@]}"; do
    read -r ratio _ < <(bench_ratios "$p" shellac)
    echo "- shellac / ${BENCH_LABEL[$p]}: **${ratio}x** at peak (shellac's peak / its peak); per level $(bench_ratio_range "$p" shellac)"
  done
  for t in "${TARGETS[@]}"; do
    echo "- ${BENCH_LABEL[$t]}: $(awk -F'\t' -v t="$t" '$1 == t { s += $9 } END { print s + 0 }' "$BENCH_TSV") errors over the sweep; $(awk -F'\t' -v t="$t" '$1 == t && $14 != "-" { o += $14; r += $8 } END { if (r) printf "%.0f%% of its answered requests reached cgit", o / r * 100; else print "origin requests unknown" }' "$BENCH_TSV")"
  done
  [ -n "${REPEATS_NOTE:-}" ] && echo "- $REPEATS_NOTE"
  [ -n "$REMEASURED" ] && echo "- levels measured again because other processes disturbed them: ${REMEASURED% }"
  bench_md_run_health
}

report_tables() {  # NAME
  echo "## Per level"
  echo
  echo "One row per target and level. shellac / this = shellac's req/s / this target's req/s at the same"
  echo "level (above 1: shellac faster). origin = requests that reached lighttpd+cgit during the measured"
  echo "run (its access log between two marks) / requests answered. CPU % = CPU time during the measured"
  echo "run / wall time, in % of one core ($(($(nproc) * 100))% = every core): each server process tree (lighttpd"
  echo "includes the cgit processes it ran), wrk, and other = everything else on the machine (should be ~0)."
  echo
  bench_md_table_vs shellac "${TARGETS[@]}"
  echo
  echo "Bytes per response (wrk, headers + body): $(bench_bytes_per_response "${TARGETS[@]}")"
  echo
  echo "![throughput and p99 vs concurrency]($1.png)"
  if [ -s "$SHELLAC_DIR/stderr.log" ]; then
    echo
    echo "## shellac stderr (last 20 lines)"
    echo
    echo '```'
    tail -n 20 "$SHELLAC_DIR/stderr.log"
    echo '```'
  fi
}

repeats_note() {  # URLs asked for a second time (the lists are finite)
  local f r total=0 urls=0 wtotal=0 wurls=0
  REPEATS_NOTE=""
  for f in "$BENCH_TMP"/wrk-*.txt; do
    r=$(sed -n 's/^BENCH_CRAWL .*repeats=\([0-9]*\) urls=\([0-9]*\).*/\1 \2/p' "$f")
    [ -n "$r" ] || continue
    set -- $r
    total=$((total + $1)) urls=$2
  done
  for f in "$BENCH_TMP"/wrk-*.txt.warmup; do
    r=$(sed -n 's/^BENCH_CRAWL .*repeats=\([0-9]*\) urls=\([0-9]*\).*/\1 \2/p' "$f")
    [ -n "$r" ] || continue
    set -- $r
    wtotal=$((wtotal + $1)) wurls=$2
  done
  if [ "$total" -gt 0 ]; then
    REPEATS_NOTE="**URL list too short**: $total measured requests asked for a URL the same target had already been asked for (list of $urls URLs, walked to line $NEXT); use more --forks or --sample"
  else
    REPEATS_NOTE="no measured request repeated a URL for its target (measured list: $urls URLs, walked to line $NEXT; every target starts a level at the same line)"
  fi
  [ "$wtotal" -gt 0 ] && REPEATS_NOTE+="; warm-ups (a list of their own, $wurls URLs) repeated $wtotal"
  return 0
}

# ---------------------------------------------------------------------------------------------
# Scenarios. Each is a function scenario_NAME; a scenario that needs a later issue is a stub that
# calls skip (replace the stub with the real function when the issue lands).

begin() {  # NAME
  bench_init "$1"
  STARTED=$(date -u '+%Y-%m-%d %H:%M:%S UTC')
  T_START=$(date +%s)
  LOAD_AT_START=$(cut -d' ' -f1-3 /proc/loadavg)
  SHELLAC_VERSION=""
}

three_target_scenario() {  # NAME WORKLOAD LUA TITLE DESCRIPTION...
  local name=$1 lua=$3 title=$4
  WORKLOAD=$2
  shift 4
  begin "$name"
  peers_need
  corpus_prepare
  make_lists
  [ "$IDENTITY" = 1 ] || echo "Accept-Encoding: gzip" >"$BENCH_TMP/lists/headers.txt"
  start_targets
  SHELLAC_VERSION=$("$SHELLAC" --version 2>&1 | head -n1)
  EXTRA_PEERS=()
  local check
  check="$(head -n1 "$BENCH_TMP/lists/hot.txt")&bench=check"
  if [ "$WORKLOAD" = hot ]; then
    hot_static_ceiling
  fi
  for t in "${TARGETS[@]}"; do [ "$t" = nginx ] || check_target "$t" "$check"; done
  probe_shellac "$(head -n1 "$BENCH_TMP/lists/hot.txt")"
  quiet_wait || true
  sweep
  [ "$WORKLOAD" = hot ] || repeats_note
  stop_targets
  add_origin_column
  local md=$OUT/$name.md png=$OUT/$name.png
  {
    report_head "$title" "$@"
    report_common "$lua"
    [ "$WORKLOAD" = hot ] && echo "- nginx static: the same pages as files, gzip_static (the .gz made by gzip -6), 2 workers: the ceiling for serving these bytes from memory"
    echo
    echo "## Summary"
    echo
    report_summary
    echo
    report_tables "$name"
  } >"$md"
  # targets 20x apart or more (a cache vs cgit): req/s on a log scale, or cgit's line lies on the axis
  local logy=0
  awk -F'\t' '{ if (min == "" || $3 < min) min = $3; if ($3 > max) max = $3 } END { exit !(min > 0 && max / min > 20) }' \
    "$BENCH_TSV" && logy=1
  BENCH_PLOT_RPS_LOG=$logy bench_plot "$png" "$name: $(IFS=/; echo "${TARGETS[*]}") on $(nproc) cores, loopback$([ "$logy" = 0 ] || echo " (req/s on a log scale)")" "${TARGETS[@]}"
  bench_log "wrote $md and $png"
  cat "$md"
  [ -z "$SHELLAC_DIED" ]
}

hot_static_ceiling() {  # the hot pages saved from cgit, served by nginx (+ precompressed .gz)
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

scenario_crawler() {
  three_target_scenario crawler crawler crawler.lua "crawler: every request a new commit URL" \
    "Every request asks for a commit page URL no one asked for before in this run: repository (the base" \
    "and every fork) x sampled commit x diff option (none, context=3/5/10, ignorews=1, dt=1, each with" \
    "and without h=BRANCH), in a seeded random order (bench/wrk/urls.py). A URL cache never hits; what" \
    "shellac will cache (repository-neutral diff fragments, issues 5 and 6) would. Each target walks the" \
    "same list from its start, so all three see the same pages."
}

scenario_hot() {
  three_target_scenario hot hot hot.lua "hot: ten pages over and over" \
    "Ten commit pages (base and forks, default options) requested again and again: a fully cached" \
    "working set. Varnish serves them from its cache after the first warm-up round, and so does shellac" \
    "when its build caches (the shellac line below says whether it does; a pass-through build sends every" \
    "request to cgit). nginx serving the same bytes as static files is the ceiling."
}

scenario_fork_spread() {
  three_target_scenario fork-spread forkspread forkspread.lua "fork-spread: the same commits through every fork" \
    "Ten commits, each asked for under every repository of the fork farm (base + forks) and every diff" \
    "option (12 variants), never the same URL twice, seeded random order. The diff part of these pages is" \
    "byte-identical in every fork: a repository-neutral fragment cache (shellac, issues 5 and 6) renders" \
    "ten diffs x options; a URL cache (Varnish) renders every URL."
}

scenario_burst() {
  begin burst
  peers_need
  corpus_prepare
  make_lists
  start_targets
  SHELLAC_VERSION=$("$SHELLAC" --version 2>&1 | head -n1)
  local check
  check="$(head -n1 "$BENCH_TMP/lists/hot.txt")&bench=check"
  for t in "${TARGETS[@]}"; do check_target "$t" "$check"; done
  probe_shellac "$(head -n1 "$BENCH_TMP/lists/hot.txt")"
  local tsv=$BENCH_TMP/burst.tsv i=0 n t path hdr=() out line
  : >"$tsv"
  [ "$IDENTITY" = 1 ] || hdr=(--header 'Accept-Encoding: gzip')
  quiet_wait || true
  for n in ${BURST//,/ }; do
    i=$((i + 1))
    path=$(sed -n "${i}p" "$BENCH_TMP/lists/burst.txt")
    [ -n "$path" ] || bench_die "not enough burst URLs"
    for t in "${TARGETS[@]}"; do
      peer_origin_idle 120 || bench_log "cgit processes still running before the $t burst of $n"
      sleep 1
      out=$BENCH_TMP/burst-$t-n$n.txt
      local m0 m1 p
      local -A before=() after=()
      for p in ${BENCH_WATCH[$t]}; do before[$p]=$(bench_cpu_ticks "$p"); done
      m0=$(bench_machine_ticks)
      mark "$t-c$n-start"
      timeout -k 5 $((BURST_TIMEOUT + 60)) python3 "$BENCH_DIR/wrk/burst.py" --port "${TARGET_URL[$t]##*:}" \
        --path "$path" --clients "$n" --timeout "$BURST_TIMEOUT" "${hdr[@]}" >"$out" 2>&1 ||
        bench_log "burst $t n=$n: exit $?"
      peer_origin_idle "$BURST_TIMEOUT" || true   # the herd's cgit processes finish before the end mark
      mark "$t-c$n-end"
      m1=$(bench_machine_ticks)
      for p in ${BENCH_WATCH[$t]}; do after[$p]=$(bench_cpu_ticks "$p"); done
      line=$(grep -m1 '^BENCH ' "$out" || true)
      [ -n "$line" ] || { cat "$out" >&2; bench_log "burst $t n=$n: no BENCH line"; continue; }
      local -A v=()
      local kv
      for kv in ${line#BENCH } $(grep -m1 '^BENCH_BURST ' "$out" | cut -d' ' -f2-); do v[${kv%%=*}]=${kv#*=}; done
      local errs=$((v[err_connect] + v[err_read] + v[err_write] + v[err_status] + v[err_timeout])) detail="" k
      for k in connect read write status timeout; do [ "${v[err_$k]}" != 0 ] && detail+="$k ${v[err_$k]}, "; done
      local cpu_s
      cpu_s=$(for p in ${BENCH_WATCH[$t]}; do echo "${before[$p]} ${after[$p]}"; done |
        awk -v hz="$(getconf CLK_TCK)" '{ s += $2 - $1 } END { printf "%.1f", s / hz }')
      local busy
      busy=$(awk -v a="$m0" -v b="$m1" -v n="$(nproc)" 'BEGIN { split(a, x, " "); split(b, y, " ")
        d = y[2] - x[2]; printf "%.0f", (d > 0 ? (y[1] - x[1]) / d * n * 100 : 0) }')
      printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$t" "$n" "${v[requests]}" "$errs" "${detail%, }" \
        "${v[status]}" "${v[duration_us]}" "${v[p50_us]}" "${v[p99_us]}" "${v[spread_us]}" "$cpu_s" "$busy" >>"$tsv"
      bench_log "$(printf 'burst %-8s n=%-5s answered %5s  errors %s  all in %s ms  p50 %s ms  p99 %s ms' "$t" "$n" \
        "${v[requests]}" "$errs" "$(bench_ms "${v[duration_us]}")" "$(bench_ms "${v[p50_us]}")" "$(bench_ms "${v[p99_us]}")")"
      if ! bench_alive "$SHELLAC_PID" && [ -z "$SHELLAC_DIED" ]; then
        SHELLAC_DIED="shellac (pid $SHELLAC_PID) died during the $t burst of $n"; bench_log "$SHELLAC_DIED"
      fi
    done
  done
  stop_targets
  # origin requests per burst, from lighttpd's log (same marks as the sweeps)
  cp "$tsv" "$BENCH_TSV"
  add_origin_column   # column 14 of a row "target n ..." -> requests that reached cgit
  local md=$OUT/burst.md
  {
    report_head "burst: a thundering herd on one cold commit page" \
      "N clients connect, then all send the same request at the same instant (bench/wrk/burst.py: every" \
      "connection opened first, then the N requests written back to back, one request per client," \
      "Connection: close), for a commit page no target was asked for before. cgit direct runs N CGI" \
      "processes; a proxy that coalesces identical misses (Varnish's waiting list; shellac's single-flight" \
      "store, issue 5) asks cgit once and answers everyone from that one response."
    echo "- load: bench/wrk/burst.py, one request per client, timeout ${BURST_TIMEOUT}s per client$([ "$IDENTITY" = 1 ] || echo ", Accept-Encoding: gzip"); a different commit for each N (the same for every target); before each burst the machine waits until lighttpd has no cgit process left"
    echo "- cgit: CGI under lighttpd (cache-size=0); varnish: malloc,256m, gzip; shellac: threads=2, this build $SHELLAC_MODE"
    echo
    echo "## Summary"
    echo
    for n in ${BURST//,/ }; do
      echo "- N=$n: $(awk -F'\t' -v n="$n" -v l="cgit direct|shellac -> cgit|varnish -> cgit" '
        BEGIN { split(l, L, "|"); lab["cgit"] = L[1]; lab["shellac"] = L[2]; lab["varnish"] = L[3] }
        $2 == n { printf "%s%s: cgit saw %s request(s), all %s answered in %.0f ms", sep, lab[$1], $14, $3, $7 / 1000; if ($4 > 0) printf " (%d errors)", $4; sep = "; " }' "$BENCH_TSV")"
    done
    [ -n "$SHELLAC_DIED" ] && echo "- **$SHELLAC_DIED**"
    [ -n "$SHELLAC_EXIT" ] && echo "- shellac shutdown: $SHELLAC_EXIT"
    echo
    echo "## Per burst"
    echo
    echo "answered = complete answers; all in = from the first request written to the last answer complete;"
    echo "p50/p99 = per-client latency from that same instant; origin = requests lighttpd+cgit saw for the"
    echo "burst (its access log between two marks); send spread = time to write all N requests; server CPU ="
    echo "CPU seconds of the target's processes (lighttpd includes its cgit children) during the burst;"
    echo "machine busy = every process on the machine (the driver, the servers, anyone else), % of one core,"
    echo "from the start mark to the end mark (which includes a wait for cgit's processes to finish)."
    echo
    echo '| N | target | answered | errors | statuses | all in (ms) | p50 ms | p99 ms | origin requests | send spread ms | server CPU s | machine busy % |'
    echo '|---:|---|---:|---|---|---:|---:|---:|---:|---:|---:|---:|'
    awk -F'\t' -v l="cgit direct|shellac -> cgit|varnish -> cgit" '
      function ms(u) { return u >= 10000 ? sprintf("%.1f", u / 1000) : sprintf("%.2f", u / 1000) }
      BEGIN { split(l, L, "|"); lab["cgit"] = L[1]; lab["shellac"] = L[2]; lab["varnish"] = L[3] }
      { printf "| %s | %s | %s | %s | %s | %s | %s | %s | **%s** | %s | %s | %s |\n", $2, lab[$1], $3,
          ($4 == 0 ? "0" : $4 " (" $5 ")"), $6, ms($7), ms($8), ms($9), $14, ms($10), $11, $12 }' "$BENCH_TSV"
    if [ -s "$SHELLAC_DIR/stderr.log" ]; then
      echo; echo "## shellac stderr (last 20 lines)"; echo; echo '```'; tail -n 20 "$SHELLAC_DIR/stderr.log"; echo '```'
    fi
  } >"$md"
  bench_log "wrote $md"
  cat "$md"
  [ -z "$SHELLAC_DIED" ]
}

scenario_passthrough() {  # bench/passthrough.sh, with the options that apply to it
  local a=()
  [ "$DURATION" != 5 ] && a+=(--duration "$DURATION")
  [ "$BENCH_WARMUP" != 1 ] && a+=(--warmup "$BENCH_WARMUP")
  [ "$SMALL" = 1 ] && a+=(--sweep "1,8,64")
  [[ " ${ARGS0[*]} " == *" --sweep "* ]] && a+=(--sweep "$SWEEP")
  [ "$OUT" != "$BENCH_REPO/bench/results" ] && a+=(--out "$OUT")
  if [ "$WAIT_QUIET" -gt 0 ]; then
    local left=$WAIT_QUIET
    [ -n "$BENCH_QUIET_FILE" ] && [ -s "$BENCH_QUIET_FILE" ] && left=$(cat "$BENCH_QUIET_FILE")
    [ "$left" -gt 0 ] && a+=(--wait-quiet "$left" --retries "$RETRIES")
  fi
  [ "$BENCH_KEEP_TMP" = 1 ] && a+=(--keep-tmp)
  bench_log "passthrough: bench/passthrough.sh ${a[*]}"
  exec "$BENCH_DIR/passthrough.sh" "${a[@]}"
}

skip() {  # NAME NEEDS ISSUE WHAT-IT-WILL-MEASURE...
  local name=$1 needs=$2 issue=$3 msg
  shift 3
  msg="skipped: needs $needs (issue $issue), not implemented yet"
  echo "$name: $msg"
  {
    echo "# $name"
    echo
    echo "**$msg.**"
    echo
    echo "It runs (\`bench/run.sh $name\`) once issue $issue lands: the stub \`scenario_${name}\` in bench/run.sh"
    echo "is then replaced by the scenario. What it will measure:"
    echo
    printf '%s\n' "$@"
    echo
    echo "- checked: $(date -u '+%Y-%m-%d %H:%M:%S UTC'), shellac git $(bench_git_rev "$BENCH_REPO")"
  } >"$OUT/$name.md"
  rm -f "$OUT/$name.png"
}

scenario_cached() {
  skip cached "the cache/ store: gzip fragments, stitching, single-flight" 5 \
    "A frame (from the upstream, cached) with one include of a stored fragment, gzip on the wire, real" \
    "sizes of a cgit commit page (~5 KB frame, ~1.4 KB gzip fragment): shellac vs Varnish 7 doing the same" \
    "ESI on the same files vs nginx serving the assembled page statically. Target: shellac >= 3x Varnish and" \
    ">= 0.6x nginx. Plus the memory table: objects stored, bytes, bytes/object overhead."
}

scenario_esi() {
  skip esi "the esi/ ESI 1.0 engine" 4 \
    "Pages with 1, 10 and 100 includes served from cache: shellac vs Varnish 7 (ESI on), same run."
}

scenario_render() {
  skip render "the gitfrag/ resident renderer" 6 \
    "The same sampled commits through stock cgit (CGI under lighttpd) and shellac's resident renderer:" \
    "cold commit page (frame + fragment) median/p90, frame only, a 10k+ line diff. Targets: frame <= 0.1 ms" \
    "median, cold page <= 1 ms median, 16k-line diff <= 30 ms."
}

scenario_tls() {
  skip tls "TLS listeners in shellac" 7 \
    "A fully cached ESI commit page over HTTPS with keep-alive and gzip: shellac vs hitch + Varnish 7" \
    "(bench/peers.sh: peer_hitch_start with a certificate made by the openssl CLI), same run; new-connection" \
    "rate (handshakes/s) with and without resumption. Target: shellac >= 3x hitch+Varnish on cached pages."
}

ALL=(crawler hot fork-spread burst passthrough cached esi render tls)

scenario_all() {
  local t0 s rc status=() start
  t0=$(date +%s)
  start=$(date -u '+%Y-%m-%d %H:%M:%S UTC')
  BENCH_TMP=$(mktemp -d "${TMPDIR:-/tmp}/shellac-bench-all.XXXXXX")
  trap 'rm -rf "$BENCH_TMP"' EXIT
  # one build and one corpus for every scenario
  if [ -z "${SHELLAC_BIN:-}" ]; then
    SHELLAC_BIN=$(bench_build_shellac)
    SHELLAC_GIT_REV="$(bench_git_rev "$BENCH_REPO") (built $(date -u '+%H:%M:%S UTC') for every scenario of this run)"
    export SHELLAC_BIN SHELLAC_GIT_REV
  fi
  peers_need
  corpus_prepare
  if [ "$WAIT_QUIET" -gt 0 ]; then
    export BENCH_QUIET_FILE=$BENCH_TMP/quiet-budget
    echo "$WAIT_QUIET" >"$BENCH_QUIET_FILE"
  fi
  local qa=()
  [ "$WAIT_QUIET" -gt 0 ] && qa=(--wait-quiet "$WAIT_QUIET")
  for s in "${ALL[@]}"; do
    local ts
    ts=$(date +%s)
    bench_log "=== $s"
    "$0" "$s" "${PASS_ARGS[@]}" "${qa[@]}" && rc=0 || rc=$?
    status+=("$s|$rc|$(($(date +%s) - ts))")
  done
  local total=$(($(date +%s) - t0))
  {
    echo "# bench/run.sh all"
    echo
    echo "- command: \`$(bench_cmdline "${ARGS0[@]}")\`"
    echo "- date: $start; total $((total / 60)) min $((total % 60)) s"
    echo "- machine: $(bench_machine_line)"
    echo "- corpus: $CORPUS_DESC"
    [ "$WAIT_QUIET" -gt 0 ] && echo "- wait-quiet budget: ${WAIT_QUIET}s, left at the end: $(cat "$BENCH_QUIET_FILE")s"
    echo
    echo '| scenario | exit status | time (s) | report |'
    echo '|---|---:|---:|---|'
    for s in "${status[@]}"; do
      IFS='|' read -r name rc secs <<<"$s"
      echo "| $name | $rc | $secs | [$name.md]($name.md) |"
    done
    for s in "${status[@]}"; do
      IFS='|' read -r name rc secs <<<"$s"
      [ -f "$OUT/$name.md" ] || continue
      echo
      echo "## $name"
      echo
      if grep -q '^## Summary' "$OUT/$name.md"; then
        sed -n '/^## Summary/,/^## /p' "$OUT/$name.md" | sed '1,2d; $d'
      else
        grep -m1 'skipped' "$OUT/$name.md"
      fi
    done
  } >"$OUT/all.md"
  bench_log "all: $((total / 60)) min $((total % 60)) s; wrote $OUT/all.md"
  local bad=0
  for s in "${status[@]}"; do [ "$(cut -d'|' -f2 <<<"$s")" = 0 ] || bad=1; done
  return $bad
}

scenario_corpus() {  # makes (or finds) the corpus and says what it is; no load
  BENCH_TMP=$(mktemp -d "${TMPDIR:-/tmp}/shellac-bench-corpus.XXXXXX")
  trap 'rm -rf "$BENCH_TMP"' EXIT
  corpus_prepare
  make_lists
  echo "$CORPUS_DESC"
  echo "cgitrc: $CGITRC"
  local k
  for k in crawler forkspread hot burst; do
    echo "$k list: $(wc -l <"$BENCH_TMP/lists/$k.txt") URLs$([ -f "$BENCH_TMP/lists/$k-warmup.txt" ] && echo " (+ $(wc -l <"$BENCH_TMP/lists/$k-warmup.txt") for warm-ups)"), e.g. $(head -n1 "$BENCH_TMP/lists/$k.txt")"
  done
}

ARGS0=("${ARGS[@]}")
case $SCENARIO in
  crawler | hot | burst | passthrough | cached | esi | render | tls | all | corpus) "scenario_$SCENARIO" ;;
  fork-spread) scenario_fork_spread ;;
  *) echo "run.sh: unknown scenario: $SCENARIO" >&2; usage 2 ;;
esac
