#!/usr/bin/env bash
# bench/run.sh: shellac against its peers on a forge-shaped corpus, side by side, in one run.
#
# Usage: bench/run.sh SCENARIO [options]
#   SCENARIO   crawler | cold | hot | fork-spread | burst | passthrough | cached | esi | render | tls | flood | all
#
# crawler, hot and fork-spread load three targets back to back at each concurrency level of the sweep:
# cgit direct (CGI under lighttpd), shellac -> that lighttpd+cgit, Varnish 7 -> the same lighttpd+cgit
# (hot adds nginx serving the same pages as static files: the ceiling). In crawler shellac renders the
# commit pages itself (the corpus' cgitrc imported; other pages -> cgit), its fragment store filled
# first by one pass over the sampled commits x diff options. burst sends N simultaneous
# requests for one cold commit page to each target and counts what reached cgit. passthrough runs
# bench/passthrough.sh. cached, esi and tls use synthetic cgit-like ESI pages (bench/wrk/esipages.py)
# from an nginx origin, no corpus: cached = a frame + one stored fragment, gzip, shellac vs Varnish 7
# (ESI) vs nginx serving the assembled page, plus a memory table (objects, bytes, overhead per
# object); esi = pages with 1, 10, 100 includes from cache, shellac vs Varnish, and a page of 10
# includes that take 50 ms each at the origin (bench/wrk/slow_origin.py); tls = the cached page over
# HTTPS, shellac's listen-tls vs hitch -> Varnish, and TLS handshakes/s (openssl s_time). Each first
# fetches every target's page, gunzips it and compares it with the assembled page: a target with a
# wrong body is reported as failed and not measured. render: shellac's resident renderer vs cgit, one
# request at a time (bench/wrk/render.py): per sampled commit the cold commit page (frame + diff
# fragment), the page again in another fork (frame only), the stored fragment alone, cgit's page; then
# every 10k+ line diff; latencies and shellac's own render time per request. flood: 400 crawler
# connections (wrk, 127.0.0.1) ask for cold commit pages while one person (bench/wrk/person.py from
# 127.0.0.3) opens a new cold commit page every 200 ms, against shellac rendering, cgit direct and
# Varnish -> cgit, and the person alone (bench/wrk/flood.lua counts the crawler's statuses). all runs every scenario,
# one after the other (each in its own process). Results: bench/results/SCENARIO.md (+ SCENARIO.png), bench/results/all.md for `all`.
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
#   --report NAME     render, cold, flood: write the report to OUT/NAME.md instead of OUT/SCENARIO.md
#                     (e.g. render-git, cold-git for a run --from a clone of git/git)
#   --mem-objects N   cached: distinct fragment URLs loaded for the memory table (default 20000;
#                     --small: 2000)
#   SHELLAC_BIN=PATH  use this binary instead of `make -C REPO release` -> build-release/proxy/shellac
#   SHELLAC_CONF='k=v k=v'  extra lines for shellac's generated config (e.g. 'cache=off')
#   FLOOD_BASELINE_BIN=PATH flood: the same phases once more with this shellac (e.g. a build from
#                     before the render queue), as a fourth target
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
FROM="" CORPUS="" REPORT="" IDENTITY=0 WAIT_QUIET=0 RETRIES="" OUT="" MEM_OBJECTS_ARG=""
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
    --report) REPORT=${2:?--report needs a name}; shift 2 ;;
    --mem-objects) MEM_OBJECTS_ARG=${2:?--mem-objects needs a count}; PASS_ARGS+=("$1" "$2"); shift 2 ;;
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
QUIET_GIVEN=0   # --wait-quiet was given (WAIT_QUIET is what is left of it: 0 = used up, not "off")
[ "$WAIT_QUIET" -gt 0 ] && QUIET_GIVEN=1
quiet_wait() {  # waits for an idle machine within what is left of the budget (1: budget used up)
  [ "$QUIET_GIVEN" = 1 ] || return 0
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
        "$CORPUS_DIR/big.txt" "$CORPUS_DIR"/*.log
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
  for k in crawler forkspread $([ "${WORKLOAD:-}" = cold ] && echo cold); do
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
# forks does not close and open repositories (the default, 64, is below the fork farm's 101).
SHELLAC_RENDER=0
RENDER_LINES=()

render_lines() {  # -> RENDER_LINES (config lines of the renderer, or none)
  RENDER_LINES=()
  [ "$SHELLAC_RENDER" = 1 ] || return 0
  local n
  n=$(grep -c '^repo.url=' "$CGITRC")
  RENDER_LINES=("cgitrc=$CGITRC")
  [ "$n" -gt 64 ] && RENDER_LINES+=("max-open-repos=$((n + 8))")
  return 0
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
    SHELLAC_MODE="renders commit pages itself (\`${RENDER_LINES[*]}\`: a frame per request, the diff from its fragment store, shared by every fork); checked: a commit page carries the commit's subject and diff"
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
# (the same pages for all); the next level starts past the furthest any target got (NEXT), shellac
# excepted when it renders (see point). Warm-ups
# walk a list of their own, one cursor per target (WARM).
LEVEL_START=0 NEXT=0
declare -A WARM=()
WORKLOAD=""            # crawler | forkspread | hot

workload_env() {  # TARGET [warmup]  exports what the wrk script of $WORKLOAD reads for TARGET
  local t=$1
  case $WORKLOAD in
    crawler | forkspread | cold)
      export BENCH_WRK_SCRIPT=$BENCH_DIR/wrk/$([ "$WORKLOAD" = cold ] && echo crawler || echo "$WORKLOAD").lua CRAWL_LANES=2
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
  # shellac rendering keeps no page (a frame per request, the fragments stored before the sweep): a
  # URL it saw at an earlier level costs it what a new one does, so its walk (~70,000 URLs a level)
  # does not push the next level's start, which keeps the list from wrapping for the caching peers
  [ "$SHELLAC_RENDER" = 1 ] && [ "$t" = shellac ] && [ "$WORKLOAD" != cold ] && return 0
  [ -n "$next" ] && [ "$next" -gt "$NEXT" ] && NEXT=$next
  return 0
}

# sweep's hooks: POINT_FN measures one target at one level (default: point, the cgit workloads);
# SWEEP_LIVE lists NAME=PID of the servers that must stay up; a target with an entry in
# TARGET_FAILED (e.g. a wrong body in the pre-check) is not measured; targets named shellac* are
# skipped once shellac died.
POINT_FN=point
SWEEP_LIVE=()
declare -A TARGET_FAILED=()

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
        if ! bench_alive "$SHELLAC_PID" && [ -z "$SHELLAC_DIED" ]; then
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

knee_text() {  # TARGET
  local k
  k=$(bench_knee "$1")
  if [ -z "$k" ]; then echo "none in range"; return; fi
  set -- $k
  echo "c=$1 (p99 $(bench_ms "$3") ms at c=$2 -> $(bench_ms "$4") ms)"
}

render_counts() {  # -> "KIND RENDERS SECONDS" a line, from shellac's /metrics (admin port), or nothing
  [ -n "${SHELLAC_ADMIN_PORT:-}" ] || return 0
  { curl -sS --max-time 10 "http://127.0.0.1:$SHELLAC_ADMIN_PORT/metrics" 2>/dev/null || true; } |
    sed -n 's/^shellac_render\(s\|_seconds\)_total{kind="\([^"]*\)"} \(.*\)/\2 \1 \3/p' |
    awk '{ if ($2 == "s") n[$1] = $3; else t[$1] = $3; k[$1] = 1 } END { for (x in k) print x, n[x] + 0, t[x] + 0 }' | sort
}

render_delta() {  # BEFORE AFTER (render_counts outputs) -> "N commit pages (mean X ms of render time), ..."
  join -a2 -e0 -o '0,1.2,1.3,2.2,2.3' <(echo "$1") <(echo "$2") | awk '
    $4 > $2 { n = $4 - $2; printf "%s%d %s (mean %.3f ms of render time)", sep, n, $1, ($5 - $3) / n * 1000; sep = ", " }
    END { if (sep == "") printf "nothing" }'
}

render_targets() {  # the issue-6 targets of a sweep with shellac rendering: >= 5,000 pages/s, >= 50x cgit direct
  local p ratio
  p=$(bench_peak shellac)
  [ -n "$p" ] || return 0
  read -r ratio _ < <(bench_ratios cgit shellac)
  echo "- targets (issue 6, $(nproc) cores shared with wrk): >= 5,000 pages/s: $(awk -v r="${p%% *}" 'BEGIN { print (r >= 5000 ? "**met**" : "**not met**") }') (peak ${p%% *}); >= 50x cgit direct: $(awk -v r="$ratio" 'BEGIN { print (r >= 50 ? "**met**" : "**not met**") }') (${ratio}x at peak)"
}

warm_fragments() {  # fills shellac's fragment store: urls.py warm (every sampled commit x diff option) -> WARM_NOTE
  local l=$BENCH_TMP/lists out t0 t1 before
  python3 "$BENCH_DIR/wrk/urls.py" warm --cgitrc "$CGITRC" --commits "$COMMITS_FILE" >"$l/warm.txt" || bench_die "urls.py warm failed"
  awk '{ printf "warm\tshellac\t%s\t-\t0\n", $0 }' "$l/warm.txt" >"$l/warm-plan.tsv"
  bench_log "warming shellac's fragment store: $(wc -l <"$l/warm.txt") pages, one at a time"
  before=$(render_counts)
  t0=$(date +%s.%N)
  out=$(python3 "$BENCH_DIR/wrk/render.py" --plan "$l/warm-plan.tsv" --port "shellac=$SHELLAC_PORT") || bench_die "render.py (warm) failed"
  t1=$(date +%s.%N)
  grep -q '^BENCH_RENDER .* bad=0 ' <<<"$out" || { echo "$out" >&2; bench_log "warm: some pages failed"; }
  WARM_NOTE="before the sweep, one pass over \`urls.py warm\` ($(wc -l <"$l/warm.txt") pages: every sampled commit x the 6 diff options, base repository, one at a time, $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }') s): shellac rendered $(render_delta "$before" "$(render_counts)"); $(sed -n 's/^BENCH_RENDER .* bad=\([0-9]*\) .*/\1/p' <<<"$out") failed"
  bench_log "$WARM_NOTE"
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
  if [ "$SHELLAC_RENDER" = 1 ]; then
    echo "- shellac: threads=2, access-log=off, admin-listen=127.0.0.1:PORT (for /metrics), backend=that lighttpd (every page"
    echo "  it does not render), ${RENDER_LINES[*]}${SHELLAC_CONF:+, $SHELLAC_CONF}, everything else default (render-threads = cores);"
    echo "  this build $SHELLAC_MODE"
    echo "- shellac's fragment store: $WARM_NOTE"
    echo "- shellac's renders during the sweep (its /metrics): $SWEEP_RENDERS"
  else
    echo "- shellac: threads=2, access-log=off, admin-listen=off, backend=that lighttpd${SHELLAC_CONF:+, $SHELLAC_CONF}, everything else default;"
    echo "  this build $SHELLAC_MODE"
  fi
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
  local -A per=()
  local t by=""
  for f in "$BENCH_TMP"/wrk-*.txt; do
    r=$(sed -n 's/^BENCH_CRAWL .*repeats=\([0-9]*\) urls=\([0-9]*\).*/\1 \2/p' "$f")
    [ -n "$r" ] || continue
    set -- $r
    total=$((total + $1)) urls=$2
    t=${f##*/wrk-}; t=${t%-c*}
    per[$t]=$((${per[$t]:-0} + $1))
  done
  for t in "${TARGETS[@]}"; do by+="${BENCH_LABEL[$t]:-$t} ${per[$t]:-0}, "; done
  for f in "$BENCH_TMP"/wrk-*.txt.warmup; do
    r=$(sed -n 's/^BENCH_CRAWL .*repeats=\([0-9]*\) urls=\([0-9]*\).*/\1 \2/p' "$f")
    [ -n "$r" ] || continue
    set -- $r
    wtotal=$((wtotal + $1)) wurls=$2
  done
  if [ "$total" -gt 0 ]; then
    REPEATS_NOTE="**URL list too short**: $total measured requests asked for a URL the same target had already been asked for (${by%, }; list of $urls URLs, walked to line $NEXT); use more --forks or --sample"
    [ "$SHELLAC_RENDER" = 1 ] && [ "$total" = "${per[shellac]:-0}" ] &&
      REPEATS_NOTE="only shellac asked for URLs again within a run ($total measured requests; list of $urls URLs): it renders every frame per request and keeps no page, so a URL it saw before costs it what a new one does (the fragments are stored either way); its walk does not move the levels' start, so no other target repeated a URL"
  else
    REPEATS_NOTE="no measured request repeated a URL for its target (measured list: $urls URLs, walked to line $NEXT; every target starts a level at the same line)"
  fi
  [ "$wtotal" -gt 0 ] && REPEATS_NOTE+="; warm-ups (a list of their own, $wurls URLs) repeated $wtotal"
  if [ "$SHELLAC_RENDER" = 1 ] && [ "$WORKLOAD" != cold ] && [ "$total" = 0 ]; then
    REPEATS_NOTE+=". shellac's run at a level starts where the others' does and goes on much further, over URLs it was asked at earlier levels (it does not move the levels' start, see bench/README.md): it keeps no page, so those cost it what new URLs do"
  fi
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
  EXTRA_PEERS=()
  local check
  check="$(head -n1 "$BENCH_TMP/lists/hot.txt")&bench=check"
  if [ "$WORKLOAD" = hot ]; then
    hot_static_ceiling
  fi
  for t in "${TARGETS[@]}"; do [ "$t" = nginx ] || check_target "$t" "$check"; done
  probe_shellac "$(head -n1 "$BENCH_TMP/lists/hot.txt")"
  if [ "$WORKLOAD" = cold ]; then
    WARM_NOTE="empty: nothing rendered before the sweep but the check and probe pages (sampled commits, left out of the list)"
    POINT_FN=cold_point
    : >"$BENCH_TMP/cold-renders.tsv"
  elif [ "$SHELLAC_RENDER" = 1 ]; then
    warm_fragments
  fi
  quiet_wait || true
  local renders0
  renders0=$(render_counts)
  sweep
  SWEEP_RENDERS=$(render_delta "$renders0" "$(render_counts)")
  [ "$WORKLOAD" = hot ] || repeats_note
  stop_targets
  add_origin_column
  [ "$WORKLOAD" = cold ] && cold_floor
  local md=$OUT/$name.md png=$OUT/$name.png
  {
    report_head "$title" "$@"
    report_common "$lua"
    [ "$WORKLOAD" = hot ] && echo "- nginx static: the same pages as files, gzip_static (the .gz made by gzip -6), 2 workers: the ceiling for serving these bytes from memory"
    echo
    echo "## Summary"
    echo
    report_summary
    if [ "$WORKLOAD" = cold ]; then cold_summary; elif [ "$SHELLAC_RENDER" = 1 ]; then render_targets; fi
    echo
    [ "$WORKLOAD" = cold ] && cold_tables
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
  SHELLAC_RENDER=1
  three_target_scenario crawler crawler crawler.lua "crawler: every request a new commit URL" \
    "Every request asks for a commit page URL no one asked for before in this run: repository (the base" \
    "and every fork) x sampled commit x diff option (none, context=3/5/10, ignorews=1, dt=1, each with" \
    "and without h=BRANCH), in a seeded random order (bench/wrk/urls.py). A URL cache never hits. shellac" \
    "renders these pages itself (the fork farm's cgitrc imported): a frame per request and the diff as a" \
    "repository-neutral fragment, filled once before the sweep (one pass over the sampled commits and" \
    "options, \"fragments cached\"), which serves every fork and h=. Each target walks the same list from" \
    "its start, so all three see the same pages. Targets (issue 6): shellac >= 5,000 pages/s on 2 cores" \
    "shared with wrk, and >= 50x cgit direct."
}

# cold: the crawler's first pass. shellac's render time per level, from its /metrics around its run.
cold_point() {  # TARGET C
  local before
  [ "$1" = shellac ] && before=$(render_counts)
  point "$@"
  [ "$1" = shellac ] || return 0
  join -a2 -e0 -o '0,1.2,1.3,2.2,2.3' <(echo "$before") <(render_counts) |
    awk -v c="$2" '$4 > $2 { printf "%s\t%s\t%d\t%.6f\n", c, $1, $4 - $2, $5 - $3 }' >>"$BENCH_TMP/cold-renders.tsv"
}

cold_floor() {  # -> FLOOR_N FLOOR_MS: git log -p --stat --minimal over the first commits of the measured list
  local n
  n=$((NEXT < 2000 ? NEXT : 2000))
  [ "$n" -ge 100 ] || n=$(wc -l <"$BENCH_TMP/lists/cold.txt")
  [ "$n" -le 2000 ] || n=2000
  head -n "$n" "$BENCH_TMP/lists/cold.txt" | sed 's/.*id=//' >"$BENCH_TMP/floor-commits.txt"
  FLOOR_N=$n
  # one core, as a render thread: the same commits, the same diff work (cgit's minimal diff, stat)
  local t0 t1
  git -C "$BASE_REPO" log --no-walk --stdin -p --stat --minimal <"$BENCH_TMP/floor-commits.txt" >/dev/null  # page cache
  t0=$(date +%s.%N)
  git -C "$BASE_REPO" log --no-walk --stdin -p --stat --minimal <"$BENCH_TMP/floor-commits.txt" >/dev/null
  t1=$(date +%s.%N)
  FLOOR_MS=$(awk -v a="$t0" -v b="$t1" -v n="$n" 'BEGIN { printf "%.3f", (b - a) * 1000 / n }')
}

cold_summary() {
  local p frag
  p=$(bench_peak shellac)
  frag=$(awk -F'\t' '$2 == "diff-fragment" { n += $3; s += $4 } END { if (n) printf "%.3f", s / n * 1000 }' "$BENCH_TMP/cold-renders.tsv")
  echo "- git's floor: \`git log --no-walk --stdin -p --stat --minimal\` over the first $FLOOR_N commits of the measured list (those every target was asked for at the first levels), one process, one core: **$FLOOR_MS ms a commit** ($(awk -v m="$FLOOR_MS" 'BEGIN { printf "%.0f", 2000 / m }') commits/s on $(nproc) cores at that rate)"
  echo "- shellac's render time as its /metrics count it, over the whole sweep: diff fragment mean **${frag:-n/a} ms**, $(awk -F'\t' '$2 == "commit" { n += $3; s += $4 } END { if (n) printf "commit frame mean %.3f ms", s / n * 1000 }' "$BENCH_TMP/cold-renders.tsv"); fragment / git's floor: **$(awk -v f="${frag:-0}" -v g="$FLOOR_MS" 'BEGIN { if (f > 0 && g > 0) printf "%.2fx", f / g; else print "n/a" }')** (target <= 1)"
  [ -n "$p" ] && echo "- shellac peak ${p%% *} pages/s: target >= 800 pages/s on $(nproc) cores shared with wrk: $(awk -v r="${p%% *}" 'BEGIN { print (r >= 800 ? "**met**" : "**not met**") }'); shellac's peak / git's floor on $(nproc) cores: $(awk -v r="${p%% *}" -v m="$FLOOR_MS" 'BEGIN { printf "%.2fx", r / (2000 / m) }')"
}

cold_tables() {
  echo "## shellac's render time per level"
  echo
  echo "From its /metrics before and after its measured run at each level (warm-ups not counted)."
  echo
  echo "| c | diff fragments | mean ms | commit frames | mean ms | fragment / git floor |"
  echo "|---:|---:|---:|---:|---:|---:|"
  awk -F'\t' -v g="$FLOOR_MS" '{ n[$1 FS $2] = $3; s[$1 FS $2] = $4; if (!($1 in seen)) { seen[$1] = 1; order[++k] = $1 } }
    END { for (i = 1; i <= k; i++) { c = order[i]; fn = n[c FS "diff-fragment"]; cn = n[c FS "commit"]
      fm = fn ? s[c FS "diff-fragment"] / fn * 1000 : 0; cm = cn ? s[c FS "commit"] / cn * 1000 : 0
      printf "| %s | %d | %.3f | %d | %.3f | %.2fx |\n", c, fn, fm, cn, cm, (g > 0 ? fm / g : 0) } }' "$BENCH_TMP/cold-renders.tsv"
  echo
}

scenario_cold() {
  SHELLAC_RENDER=1
  three_target_scenario "${REPORT:-cold}" cold crawler.lua "cold: a crawler's first pass, every page a commit no target saw" \
    "Every request asks for the commit page of a commit no target was asked for before in this run (every" \
    "non-merge commit of the base repository once, seeded order, the sampled commits left out): the store" \
    "starts empty and every page costs shellac a frame and a diff fragment render (each stored, never asked" \
    "for again), Varnish a fetch from cgit. Each target walks the same list from its start at each level;" \
    "the next level starts past the furthest any target got. The floor is git's own diff work on the same" \
    "commits: \`git log --no-walk --stdin -p --stat --minimal\`. Targets (issue 12): shellac's mean fragment" \
    "render <= git's time a commit, and >= 800 pages/s on 2 cores."
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

# ---------------------------------------------------------------------------------------------
# ESI scenarios (cached, esi, tls): synthetic cgit-like pages (bench/wrk/esipages.py) served by nginx
# as the origin (frames with Surrogate-Control: content="ESI/1.0", everything cacheable for an hour);
# shellac (esi=surrogate) and Varnish (do_esi on that header, do_gzip) in front of it. Before any
# load every target's page is fetched once with Accept-Encoding: gzip, gunzipped and compared with
# the assembled page: a target that delivers something else is reported as failed and not measured.

SLOW_DELAY_MS=50        # esi: what each slow include costs at the origin
SLOW_SWEEP=1,4          # esi: levels of the slow-include page
MEM_OBJECTS=$MEM_OBJECTS_ARG  # cached: distinct fragment URLs loaded for the memory table

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
  CORPUS_DESC="synthetic cgit-like commit pages from bench/wrk/esipages.py (seed $SEED, no git corpus): $sizes"
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
  SHELLAC_LINES="${lines[*]}${SHELLAC_CONF:+ $SHELLAC_CONF}"
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
    TARGET_CHECK[$key]="ok: $BENCH_CHECK_NOTE"
  else
    TARGET_FAILED[$key]=$BENCH_CHECK_NOTE
    TARGET_CHECK[$key]="**failed, not measured**: $BENCH_CHECK_NOTE"
  fi
  bench_log "check $key: ${TARGET_CHECK[$key]}"
}
declare -A TARGET_CHECK=()

esi_no_target() {  # KEY LABEL WHY  a target that cannot run at all (e.g. no TLS listener)
  TARGETS+=("$1")
  BENCH_LABEL[$1]=$2
  TARGET_FAILED[$1]=$3
  TARGET_CHECK[$1]="**failed, not measured**: $3"
  bench_log "check $1: $3"
}

esi_stop() {  # shellac first (its exit is part of the report); the EXIT trap stops the rest by pid
  SHELLAC_EXIT=""
  if [ -z "$SHELLAC_DIED" ]; then
    bench_stop "$SHELLAC_PID" 35
    SHELLAC_EXIT="exit status $BENCH_STOP_RC after SIGTERM"
  fi
}

esi_report_setup() {  # the setup lines every ESI report has
  echo "- load: wrk -t2 (-t1 at c=1) -c CONNS -d ${BENCH_DURATION}s --timeout $BENCH_WRK_TIMEOUT, keep-alive, one URL per target,"
  echo "  ${BENCH_WARMUP}s warm-up before each point, script bench/wrk/report.lua;$([ "$IDENTITY" = 1 ] && echo " no Accept-Encoding" || echo " Accept-Encoding: gzip")"
  echo "- origin: nginx (2 workers) serving bench/wrk/esipages.py's files: frames (/page/) with"
  echo "  \`Surrogate-Control: content=\"ESI/1.0\"\` and \`Cache-Control: max-age=3600\`, fragments (/frag/) with"
  echo "  \`Cache-Control: max-age=3600\`, identity (the caches compress)"
  echo "- shellac: generated config \`listen\`, \`admin-listen\`, \`backend\`=that nginx, \`threads=2\`, \`access-log=off\`, $(printf '`%s` ' $SHELLAC_LINES)"
  local n
  for n in "${SHELLAC_NOTES[@]}"; do echo "  - **$n**"; done
  echo "- varnish: malloc,256m; VCL \`set beresp.do_esi = true\` when Surrogate-Control has content=\"ESI/1.0\","
  echo "  \`set beresp.do_gzip = true\` for text/*; TTL from Cache-Control (bench/peers.sh)"
  echo "- all on the same $(nproc) cores: wrk, the cache and the origin compete for them"
}

esi_report_checks() {  # the correctness table
  local t
  echo "## Correctness check (before any load)"
  echo
  echo "Each target's page, fetched with Accept-Encoding: gzip (the second of two fetches), gunzipped and"
  echo "compared byte for byte with the page assembled by bench/wrk/esipages.py. A target that fails is"
  echo "not measured."
  echo
  echo '| target | result |'
  echo '|---|---|'
  for t in "${TARGETS[@]}"; do echo "| ${BENCH_LABEL[$t]} | ${TARGET_CHECK[$t]} |"; done
}

esi_report_peak() {  # TARGET  one summary line: peak, p99 there, knee (or why it was not measured)
  local t=$1 p
  if [ -n "${TARGET_FAILED[$t]:-}" ]; then echo "- ${BENCH_LABEL[$t]}: **not measured: ${TARGET_FAILED[$t]}**"; return; fi
  p=$(bench_peak "$t")
  [ -n "$p" ] || { echo "- ${BENCH_LABEL[$t]}: no measurement"; return; }
  set -- $p
  echo "- ${BENCH_LABEL[$t]}: peak $1 req/s at c=$2 (p99 there $(bench_ms "$(awk -F'\t' -v t="$t" -v c="$2" '$1 == t && $2 == c { print $6 }' "$BENCH_TSV")") ms); knee: $(knee_text "$t"); $(awk -F'\t' -v t="$t" '$1 == t { s += $9 } END { print s + 0 }' "$BENCH_TSV") errors"
}

esi_report_ratio() {  # SUBJECT PEER TARGET-RATIO|""  "subject / peer: Rx at peak (target met)" or why not
  local s=$1 p=$2 min=$3 ratio met=""
  if [ -n "${TARGET_FAILED[$s]:-}${TARGET_FAILED[$p]:-}" ] || [ -z "$(bench_peak "$s")" ] || [ -z "$(bench_peak "$p")" ]; then
    echo "- ${BENCH_LABEL[$s]} / ${BENCH_LABEL[$p]}: **n/a** (not both measured)$([ -z "$min" ] || echo "; target ${min}x **not shown**")"
    return
  fi
  read -r ratio _ < <(bench_ratios "$p" "$s")
  [ -n "$min" ] && met=$(awk -v r="$ratio" -v m="$min" 'BEGIN { print (r >= m) ? "met" : "NOT met" }')
  echo "- ${BENCH_LABEL[$s]} / ${BENCH_LABEL[$p]}: **${ratio}x** at peak; per level $(bench_ratio_range "$p" "$s")$([ -z "$min" ] || echo "; target ${min}x **$met**")"
}

esi_measured() {  # TARGET...  -> those that have rows
  local t
  for t in "$@"; do [ -n "$(bench_peak "$t")" ] && echo "$t"; done
  return 0
}

esi_bytes_per_response() {  # bench_bytes_per_response of the measured TARGETS
  local m=()
  mapfile -t m < <(esi_measured "${TARGETS[@]}")
  [ ${#m[@]} = 0 ] || bench_bytes_per_response "${m[@]}"
}

esi_plot() {  # PNG TITLE TARGET...  plots the measured ones
  local png=$1 title=$2 m=()
  shift 2
  mapfile -t m < <(esi_measured "$@")
  if [ ${#m[@]} = 0 ]; then rm -f "$png"; return; fi
  local logy=0   # targets 20x apart or more (1 vs 100 includes): req/s on a log scale
  awk -F'\t' -v l=" ${m[*]} " 'index(l, " " $1 " ") { if (min == "" || $3 < min) min = $3; if ($3 > max) max = $3 }
    END { exit !(min > 0 && max / min > 20) }' "$BENCH_TSV" && logy=1
  BENCH_PLOT_RPS_LOG=$logy bench_plot "$png" "$title$([ "$logy" = 0 ] || echo " (req/s on a log scale)")" "${m[@]}"
}

esi_shellac_stderr() {
  if [ -s "$SHELLAC_DIR/stderr.log" ]; then
    echo; echo "## shellac stderr (last 20 lines)"; echo; echo '```'; tail -n 20 "$SHELLAC_DIR/stderr.log"; echo '```'
  fi
}

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
# what each store says it holds before and after (shellac: /metrics shellac_cache_objects and
# shellac_cache_bytes; Varnish: varnishstat MAIN.n_object, SMA.s0.g_bytes) and resident memory.
memory_table() {  # COUNT
  local n=$1 t o0 o1 b0 b1 d0 d1 r0 r1 gz id
  read -r _ id gz < <(grep '^fragment ' "$PAGES/sizes.txt")
  MEM_ROWS=()
  bench_log "memory: $n distinct fragment URLs through shellac"
  o0=$(peer_shellac_metric shellac_cache_objects); b0=$(peer_shellac_metric shellac_cache_bytes)
  d0=$(peer_shellac_metric shellac_cache_body_bytes); r0=$(rss_kb "$SHELLAC_PID")
  local k0 h0 k1 h1
  k0=$(peer_shellac_metric shellac_cache_key_bytes); h0=$(peer_shellac_metric shellac_cache_header_bytes)
  mem_load "http://127.0.0.1:$SHELLAC_PORT" 1 "$n"
  sleep 1
  o1=$(peer_shellac_metric shellac_cache_objects); b1=$(peer_shellac_metric shellac_cache_bytes)
  d1=$(peer_shellac_metric shellac_cache_body_bytes); r1=$(rss_kb "$SHELLAC_PID")
  k1=$(peer_shellac_metric shellac_cache_key_bytes); h1=$(peer_shellac_metric shellac_cache_header_bytes)
  MEM_KH="$o0 $o1 $b0 $b1 $d0 $d1 $k0 $k1 $h0 $h1"
  MEM_ROWS+=("shellac|$o0|$o1|$b0|$b1|$d0|$d1|$r0|$r1")
  bench_log "memory: $n distinct fragment URLs through varnish"
  local v0 v1
  v0=$(peer_varnish_stat MAIN.n_object SMA.s0.g_bytes); r0=$(rss_kb "$VARNISH_PID")
  mem_load "http://127.0.0.1:$VARNISH_PORT" 1 "$n"
  sleep 1
  v1=$(peer_varnish_stat MAIN.n_object SMA.s0.g_bytes); r1=$(rss_kb "$VARNISH_PID")
  val() { sed -n "s/.*$1=\([0-9]*\).*/\1/p" <<<"$2"; }
  MEM_ROWS+=("varnish|$(val MAIN.n_object "$v0")|$(val MAIN.n_object "$v1")|$(val SMA.s0.g_bytes "$v0")|$(val SMA.s0.g_bytes "$v1")|||$r0|$r1")
  MEM_FRAG="$id $gz"
}

memory_report() {
  local row name o0 o1 b0 b1 d0 d1 r0 r1 id gz k0 k1 h0 h1
  read -r id gz <<<"$MEM_FRAG"
  echo "## Memory: ${MEM_OBJECTS} distinct fragment objects"
  echo
  echo "After the sweep, ${MEM_OBJECTS} distinct URLs (/mem/1.html ... /mem/${MEM_OBJECTS}.html; the origin answers each with"
  echo "the fragment, $id bytes, $gz as gzip -6, Cache-Control: max-age=3600) asked once each through each cache"
  echo "(curl, keep-alive, Accept-Encoding: gzip). Store figures are the cache's own, before -> after. shellac"
  echo "(/metrics): objects \`shellac_cache_objects\`, store bytes \`shellac_cache_bytes\` (charged to the budget),"
  echo "body bytes \`shellac_cache_body_bytes\` (stored deflate); overhead/object = (added store bytes - added body"
  echo "bytes) / added objects. Varnish (varnishstat): \`MAIN.n_object\`, \`SMA.s0.g_bytes\`; it exports no body"
  echo "bytes, so its overhead/object = bytes/object - the fragment's gzip size ($gz; it stores gzip too)."
  echo "RSS = resident memory of the process tree (Varnish: manager + cache process)."
  echo
  echo '| cache | objects before -> after | store bytes before -> after | body bytes before -> after | bytes/object | overhead/object | RSS before -> after (MiB) | RSS growth/object |'
  echo '|---|---|---|---|---:|---:|---|---:|'
  for row in "${MEM_ROWS[@]}"; do
    IFS='|' read -r name o0 o1 b0 b1 d0 d1 r0 r1 <<<"$row"
    awk -v name="$name" -v o0="$o0" -v o1="$o1" -v b0="$b0" -v b1="$b1" -v d0="$d0" -v d1="$d1" -v r0="$r0" -v r1="$r1" \
      -v gz="$gz" -v n="$MEM_OBJECTS" '
      BEGIN {
        body = (d1 == "") ? "not exported" : d0 " -> " d1
        if (o1 == "" || b1 == "") {
          obj = "not exported"; byt = "not exported"; bpo = "n/a"; ovh = "n/a"
        } else {
          obj = o0 " -> " o1; byt = b0 " -> " b1; d = o1 - o0
          if (d > 0) {
            bpo = sprintf("%.0f", (b1 - b0) / d)
            ovh = (d1 != "") ? sprintf("%.0f", ((b1 - b0) - (d1 - d0)) / d) : sprintf("%.0f (vs %d gzip)", (b1 - b0) / d - gz, gz)
          } else { bpo = "n/a (no objects added)"; ovh = "n/a" }
        }
        printf "| %s | %s | %s | %s | %s | %s | %.1f -> %.1f | %.0f B |\n", name, obj, byt, body, bpo, ovh, r0 / 1024, r1 / 1024, (r1 - r0) * 1024 / n
      }'
  done
  read -r o0 o1 b0 b1 d0 d1 k0 k1 h0 h1 <<<"$MEM_KH"
  if [ -n "$k1" ] && [ -n "$h1" ] && [ "$((o1 - o0))" -gt 0 ]; then
    awk -v o="$((o1 - o0))" -v b="$((b1 - b0))" -v d="$((d1 - d0))" -v k="$((k1 - k0))" -v h="$((h1 - h0))" 'BEGIN {
      printf "\nshellac, per added object: %.0f B key (`shellac_cache_key_bytes`), %.0f B kept headers (`shellac_cache_header_bytes`), %.0f B body; **%.1f B beyond key, headers and body** (object header, segment table, allocator rounding, index slot, queue and ghost entries; the #5 bound is 64 B).\n", k / o, h / o, d / o, (b - d - k - h) / o }'
  fi
  if [ -z "$(cut -d'|' -f3 <<<"${MEM_ROWS[0]}")" ]; then
    echo
    echo "shellac: **this build exports no \`shellac_cache_objects\` / \`shellac_cache_bytes\`** at /metrics: only RSS"
    echo "growth is shown (which includes allocator slack and the URL index, not only the store)."
  fi
}

scenario_cached() {
  esi_setup cached
  local o=http://127.0.0.1
  esi_add_target shellac "shellac (ESI)" "$o:$SHELLAC_PORT/page/commit.html" "$PAGES/expected/commit.html" "$SHELLAC_PID" "$NGINX_PID"
  esi_add_target varnish "varnish (ESI)" "$o:$VARNISH_PORT/page/commit.html" "$PAGES/expected/commit.html" "$VARNISH_PID" "$NGINX_PID"
  esi_add_target nginx "nginx static (assembled page)" "$o:$NGINX_PORT/static/commit.html" "$PAGES/expected/commit.html" "$NGINX_PID"
  PEERS=(varnish) EXTRA_PEERS=(nginx)
  quiet_wait || true
  sweep
  [ -n "$MEM_OBJECTS" ] || { [ "$SMALL" = 1 ] && MEM_OBJECTS=2000 || MEM_OBJECTS=20000; }
  memory_table "$MEM_OBJECTS"
  esi_stop
  local md=$OUT/cached.md
  {
    report_head "cached: an ESI commit page from the store" \
      "A cgit-like commit page as a frame (~5 KB, from the origin, cached) with one include of a stored" \
      "fragment (the diff, ~1.4 KB as gzip), gzip on the wire: shellac vs Varnish 7 doing the same ESI on" \
      "the same files vs nginx serving the assembled page as a static file (gzip_static, the ceiling)." \
      "Target: shellac >= 3x Varnish and >= 0.6x nginx. Then the memory table."
    esi_report_setup
    echo "- nginx static: the assembled page and its .gz (gzip -6), gzip_static, from the same nginx"
    echo
    echo "## Summary"
    echo
    local t
    for t in "${TARGETS[@]}"; do esi_report_peak "$t"; done
    esi_report_ratio shellac varnish 3
    esi_report_ratio shellac nginx 0.6
    [ -n "$REMEASURED" ] && echo "- levels measured again because other processes disturbed them: ${REMEASURED% }"
    bench_md_run_health
    echo
    esi_report_checks
    echo
    echo "## Per level"
    echo
    echo "shellac / this = shellac's req/s / this target's req/s at the same level. CPU % = CPU time during"
    echo "the measured run / wall time, in % of one core: each server process tree (a cache's row includes"
    echo "the origin nginx, idle on hits), wrk, and other = everything else on the machine."
    echo
    bench_md_table_vs shellac "${TARGETS[@]}"
    echo
    echo "Bytes per response (wrk, headers + body): $(esi_bytes_per_response)"
    echo
    memory_report
    echo
    [ -f "$OUT/cached.png" ] || true
    echo "![throughput and p99 vs concurrency](cached.png)"
    esi_shellac_stderr
  } >"$md"
  esi_plot "$OUT/cached.png" "cached: ESI commit page (frame + 1 include), gzip, $(nproc) cores, loopback" "${TARGETS[@]}"
  bench_log "wrote $md"
  cat "$md"
  [ -z "$SHELLAC_DIED" ]
}

scenario_esi() {
  esi_setup esi slow
  local o=http://127.0.0.1 n t
  for n in 1 10 100; do
    esi_add_target "shellac-i$n" "shellac, $n include$([ "$n" = 1 ] || echo s)" "$o:$SHELLAC_PORT/page/inc-$n.html" \
      "$PAGES/expected/inc-$n.html" "$SHELLAC_PID" "$NGINX_PID"
    esi_add_target "varnish-i$n" "varnish, $n include$([ "$n" = 1 ] || echo s)" "$o:$VARNISH_PORT/page/inc-$n.html" \
      "$PAGES/expected/inc-$n.html" "$VARNISH_PID" "$NGINX_PID"
  done
  local cached_targets=("${TARGETS[@]}")
  TARGETS=()
  esi_add_target shellac-slow "shellac, 10 slow includes" "$o:$SHELLAC_PORT/page/slow-10.html" \
    "$PAGES/expected/slow-10.html" "$SHELLAC_PID" "$NGINX_PID" "$SLOW_PID"
  esi_add_target varnish-slow "varnish, 10 slow includes" "$o:$VARNISH_PORT/page/slow-10.html" \
    "$PAGES/expected/slow-10.html" "$VARNISH_PID" "$NGINX_PID" "$SLOW_PID"
  local slow_targets=("${TARGETS[@]}")
  quiet_wait || true
  TARGETS=("${cached_targets[@]}")
  sweep
  local remeasured=$REMEASURED sweep0=$SWEEP dur0=$BENCH_DURATION
  # slow includes: every page request fetches its 10 includes (no-store), 50 ms each at the origin
  TARGETS=("${slow_targets[@]}") SWEEP=$SLOW_SWEEP BENCH_DURATION=$((DURATION * 2))
  sweep
  REMEASURED="$remeasured$REMEASURED" SWEEP=$sweep0 BENCH_DURATION=$dur0
  TARGETS=("${cached_targets[@]}" "${slow_targets[@]}")
  esi_stop
  local md=$OUT/esi.md
  {
    report_head "esi: pages with 1, 10 and 100 includes, and 10 slow includes" \
      "Cached: frames with 1, 10 and 100 includes of distinct fragments (one diff hunk each, ~460-700 bytes)," \
      "everything cacheable, served from the cache: shellac vs Varnish 7 (ESI on), same run." \
      "Slow: a frame (cached) with 10 includes that the origin answers after ${SLOW_DELAY_MS} ms each with" \
      "Cache-Control: no-store (bench/wrk/slow_origin.py behind the origin nginx's /slow/), so every page" \
      "request fetches its 10 includes: fetched in parallel the page takes ~${SLOW_DELAY_MS} ms, one after the" \
      "other ~$((SLOW_DELAY_MS * 10)) ms."
    esi_report_setup
    echo "- slow page: levels $SLOW_SWEEP, ${BENCH_WARMUP}s warm-up + $((DURATION * 2))s measured per point"
    echo
    echo "## Summary"
    echo
    for n in 1 10 100; do
      esi_report_peak "shellac-i$n"
      esi_report_peak "varnish-i$n"
      esi_report_ratio "shellac-i$n" "varnish-i$n" ""
    done
    local c
    for t in "${slow_targets[@]}"; do
      if [ -n "${TARGET_FAILED[$t]:-}" ]; then echo "- ${BENCH_LABEL[$t]}: **not measured: ${TARGET_FAILED[$t]}**"; continue; fi
      echo "- ${BENCH_LABEL[$t]}: $(awk -F'\t' -v t="$t" '
        function ms(u) { return u >= 10000 ? sprintf("%.1f", u / 1000) : sprintf("%.2f", u / 1000) }
        $1 == t { printf "%sc=%s: p50 %s ms, p95 %s ms, p99 %s ms (%d pages)", sep, $2, ms($4), ms($5), ms($6), $8; sep = "; " }' "$BENCH_TSV")"
    done
    echo "- slow page, expected: ~${SLOW_DELAY_MS} ms when the 10 includes are fetched in parallel, ~$((SLOW_DELAY_MS * 10)) ms one after the other"
    for c in ${SLOW_SWEEP//,/ }; do
      awk -F'\t' -v c="$c" '$2 == c && $1 == "shellac-slow" { s = $4 } $2 == c && $1 == "varnish-slow" { v = $4 }
        END { if (s > 0 && v > 0) printf "- slow page at c=%s: p50 shellac %.1f ms vs varnish %.1f ms: shellac **%.1fx** faster\n", c, s / 1000, v / 1000, v / s }' "$BENCH_TSV"
    done
    [ -n "$REMEASURED" ] && echo "- levels measured again because other processes disturbed them: ${REMEASURED% }"
    bench_md_run_health
    echo
    esi_report_checks
    for n in 1 10 100 slow; do
      echo
      if [ "$n" = slow ]; then echo "## 10 slow includes (${SLOW_DELAY_MS} ms each, not cacheable)"; else echo "## $n include$([ "$n" = 1 ] || echo s), from cache"; fi
      echo
      if [ "$n" = slow ]; then bench_md_table_vs shellac-slow shellac-slow varnish-slow; else bench_md_table_vs "shellac-i$n" "shellac-i$n" "varnish-i$n"; fi
    done
    echo
    echo "shellac / this = shellac's req/s / this target's req/s at the same level. CPU % as in the other reports"
    echo "(a cache's row includes the origin nginx, and the slow origin for the slow page)."
    echo
    echo "Bytes per response (wrk, headers + body): $(esi_bytes_per_response)"
    echo
    echo "![throughput and p99 vs concurrency](esi.png)"
    esi_shellac_stderr
  } >"$md"
  esi_plot "$OUT/esi.png" "esi: 1/10/100 includes from cache, shellac vs varnish, $(nproc) cores" "${cached_targets[@]}"
  bench_log "wrote $md"
  cat "$md"
  [ -z "$SHELLAC_DIED" ]
}

scenario_tls() {
  esi_setup tls tls
  peer_hitch_start "$VARNISH_PORT"
  SWEEP_LIVE+=("hitch=$HITCH_PID")
  local o=https://127.0.0.1 t
  if [ -n "$SHELLAC_TLS_PORT" ]; then
    esi_add_target shellac "shellac (TLS, ESI)" "$o:$SHELLAC_TLS_PORT/page/commit.html" "$PAGES/expected/commit.html" \
      "$SHELLAC_PID" "$NGINX_PID" -- -k
  else
    esi_no_target shellac "shellac (TLS, ESI)" "${SHELLAC_NOTES[-1]}"
  fi
  esi_add_target hitch "hitch -> varnish (ESI)" "$o:$HITCH_PORT/page/commit.html" "$PAGES/expected/commit.html" \
    "$HITCH_PID" "$VARNISH_PID" "$NGINX_PID" -- -k
  PEERS=(hitch) EXTRA_PEERS=()
  quiet_wait || true
  sweep
  # new connections: full handshakes and resumed sessions, one after the other (openssl s_time)
  local hs_secs=$DURATION mode port r
  declare -A HS=()
  for t in "${TARGETS[@]}"; do
    case $t in shellac) port=$SHELLAC_TLS_PORT ;; hitch) port=$HITCH_PORT ;; esac
    [ -n "$port" ] || continue
    for mode in new reuse; do
      r=$(bench_handshakes "127.0.0.1:$port" "$hs_secs" "$mode")
      HS[$t-$mode]=${r:-failed}
      bench_log "handshakes $t $mode: ${r:-failed}"
    done
  done
  esi_stop
  local md=$OUT/tls.md
  {
    report_head "tls: a cached ESI commit page over HTTPS" \
      "The cached scenario's page (frame + one stored fragment, gzip) over HTTPS with keep-alive, wrk on" \
      "loopback: shellac's own TLS listener vs hitch (TLS) in front of Varnish 7 (ESI), same run, same" \
      "certificate kind (self-signed P-256, made by the openssl CLI at run time). Then the rate of new TLS" \
      "connections with and without session resumption. Target: shellac >= 3x hitch+Varnish on cached pages."
    esi_report_setup
    echo "- shellac TLS: \`listen-tls=127.0.0.1:PORT cert=FILE key=FILE\`; hitch 1.7: workers=2, TLSv1.2 + TLSv1.3, ALPN http/1.1, backend = that Varnish"
    echo "- new connections: \`openssl s_time -connect 127.0.0.1:PORT -new -time ${hs_secs}\` (full TLS 1.3 handshakes) and"
    echo "  \`-reuse -tls1_2\` (session resumption; s_time cannot resume TLS 1.3), one connection after the other, no"
    echo "  request; connections / wall time of the run; the client's CPU is on the same cores"
    echo
    echo "## Summary"
    echo
    for t in "${TARGETS[@]}"; do esi_report_peak "$t"; done
    esi_report_ratio shellac hitch 3
    for t in "${TARGETS[@]}"; do
      [ -n "${HS[$t-new]:-}" ] || continue
      echo "- ${BENCH_LABEL[$t]}: new connections/s: full handshake (TLS 1.3) ${HS[$t-new]%% *}, with resumption (TLS 1.2) ${HS[$t-reuse]%% *}"
    done
    [ -n "$REMEASURED" ] && echo "- levels measured again because other processes disturbed them: ${REMEASURED% }"
    bench_md_run_health
    echo
    esi_report_checks
    echo
    echo "## Per level (cached page, keep-alive)"
    echo
    bench_md_table_vs shellac "${TARGETS[@]}"
    echo
    echo "Bytes per response (wrk, headers + body): $(esi_bytes_per_response)"
    echo
    echo "## New connections (openssl s_time, ${hs_secs} s each)"
    echo
    echo '| target | full handshakes/s (TLS 1.3, -new) | connections | with resumption/s (TLS 1.2, -reuse) | connections | of them resumed |'
    echo '|---|---:|---:|---:|---:|---:|'
    local a b c d e
    for t in "${TARGETS[@]}"; do
      [ -n "${HS[$t-new]:-}" ] || { echo "| ${BENCH_LABEL[$t]} | n/a | | n/a | | |"; continue; }
      read -r a b _ <<<"${HS[$t-new]}"; read -r c d e <<<"${HS[$t-reuse]}"
      echo "| ${BENCH_LABEL[$t]} | $a | ${b:-} | $c | ${d:-} | ${e:-} |"
    done
    echo
    echo "![throughput and p99 vs concurrency](tls.png)"
    esi_shellac_stderr
  } >"$md"
  esi_plot "$OUT/tls.png" "tls: cached ESI page over HTTPS, shellac vs hitch+varnish, $(nproc) cores" "${TARGETS[@]}"
  bench_log "wrote $md"
  cat "$md"
  [ -z "$SHELLAC_DIED" ]
}

# ---------------------------------------------------------------------------------------------
# render: the resident renderer against cgit, one page at a time (bench/wrk/render.py)

RENDER_FRAME_FORKS=10   # frame-only pages go to the first N forks in turn (each opened before timing)
RENDER_TIMEOUT=10       # seconds a page may take (cgit needs ~0.5 s for the generated corpus' 95k-line import)

scenario_render() {
  begin render
  peers_need
  corpus_prepare
  corpus_big
  shellac_binary
  peer_cgit_start "$CGITRC"
  SHELLAC_RENDER=1
  render_lines
  local extra=()
  [ -z "${SHELLAC_CONF:-}" ] || read -r -a extra <<<"$SHELLAC_CONF"
  PEER_SHELLAC_ADMIN=1 peer_shellac_start "$SHELLAC" "$CGIT_PORT" "${RENDER_LINES[@]}" "${extra[@]}"
  declare -gA TARGET_URL=([cgit]="http://127.0.0.1:$CGIT_PORT" [shellac]="http://127.0.0.1:$SHELLAC_PORT")
  SHELLAC_DIED=""
  local facts=$BENCH_TMP/facts.tsv bigfacts=$BENCH_TMP/big-facts.tsv plan=$BENCH_TMP/render-plan.tsv
  # a sampled commit that is also a 10k+ line diff is measured with the big diffs only (cold once)
  commit_facts <(grep -vxF -f "$BIG_FILE" "$COMMITS_FILE") >"$facts"
  commit_facts "$BIG_FILE" >"$bigfacts"
  RENDER_OVERLAP=$(grep -cxF -f "$BIG_FILE" "$COMMITS_FILE" || true)
  local repos=() frames=() base head r i=0 sha line
  mapfile -t repos < <(sed -n 's/^repo\.url=//p' "$CGITRC")
  base=${repos[0]}
  for r in "${repos[@]:1:$RENDER_FRAME_FORKS}"; do frames+=("/$r/commit/?id="); done
  # no fork: the frame-only page is the base's page with h= (another URL, the same fragment)
  [ ${#frames[@]} -gt 0 ] || frames=("/$base/commit/?h=$HEAD_BRANCH&id=")
  # checks on HEAD (not in the sample; it also opens the base repository in both servers)
  head=$(git -C "$BASE_REPO" rev-parse HEAD)
  check_target cgit "/$base/commit/?id=$head"
  check_target shellac "/$base/commit/?id=$head"
  {
    # untimed: each frame-only repository opened once (its HEAD's page: the fragment is stored now)
    line=$(commit_facts <(echo "$head"))
    for r in "${frames[@]}"; do plan_line open shellac "$r$head" "$line"; done
    while IFS= read -r line; do
      sha=${line%%$'\t'*}
      plan_line cold shellac "/$base/commit/?id=$sha" "$line"
      plan_line frame shellac "${frames[i % ${#frames[@]}]}$sha" "$line"
      # the stored fragment alone (no frame, no ESI): what HTTP + loopback + the client cost
      plan_line hit shellac "/$base/esi-diff/?id=$sha&context=3&ignorews=0&dt=0" "$(cut -f1-3 <<<"$line")"
      plan_line cgit cgit "/$base/commit/?id=$sha" "$line"
      i=$((i + 1))
    done <"$facts"
    while IFS= read -r line; do
      sha=${line%%$'\t'*}
      plan_line bigcold shellac "/$base/commit/?id=$sha" "$line"
      plan_line bigframe shellac "${frames[i % ${#frames[@]}]}$sha" "$line"
      plan_line bigcgit cgit "/$base/commit/?id=$sha" "$line"
      i=$((i + 1))
    done <"$bigfacts"
  } >"$plan"
  local hdr=() attempt best_other=0 best_cpu="" out=$BENCH_TMP/render.out samples=$BENCH_TMP/render-samples.tsv
  [ "$IDENTITY" = 1 ] && hdr=(--identity)
  quiet_wait || true
  REMEASURED=""
  for ((attempt = 0; ; attempt++)); do
    bench_log "render: $(grep -c . "$plan") pages, one at a time ($(wc -l <"$facts") sampled commits x 4, $(wc -l <"$bigfacts") big diffs x 3)"
    bench_watch render "$SHELLAC_PID" "$CGIT_PID"
    : >"$BENCH_TSV"
    bench_cpu_begin render
    python3 "$BENCH_DIR/wrk/render.py" --plan "$plan" --port "shellac=$SHELLAC_PORT" --port "cgit=$CGIT_PORT" \
      --admin "$SHELLAC_ADMIN_PORT" --samples "$samples" --timeout "$RENDER_TIMEOUT" "${hdr[@]}" >"$out" || bench_die "render.py failed"
    bench_cpu_end render
    # one row, so that the run-health line of the report says whether others disturbed the run
    printf 'render\t1\t-\t-\t-\t-\t-\t%s\t-\t-\t-\t-\t%s\n' "$(grep -c . "$plan")" "$BENCH_CPU" >>"$BENCH_TSV"
    bench_log "render: cpu $BENCH_CPU"
    # of several attempts the report keeps the least disturbed one
    if [ "$attempt" = 0 ] || [ "$(bench_other_cpu render 1)" -lt "$best_other" ]; then
      best_other=$(bench_other_cpu render 1)
      cp "$out" "$out.best"; cp "$samples" "$samples.best"; cp "$BENCH_TSV" "$BENCH_TSV.best"
      best_cpu=$BENCH_CPU
    fi
    bench_alive "$SHELLAC_PID" || { SHELLAC_DIED="shellac (pid $SHELLAC_PID) exited during the run"; break; }
    [ "$(bench_other_cpu render 1)" -gt 20 ] && [ "$attempt" -lt "$RETRIES" ] || break
    quiet_wait || break   # no budget left: keep the disturbed run (the report says so)
    # cold pages need an empty store: a new shellac (its repositories opened again by the plan)
    bench_log "render: disturbed by other processes (other $(bench_other_cpu render 1)% of a core); measuring again with a new shellac"
    REMEASURED+="${REMEASURED:+, }the whole run (other $(bench_other_cpu render 1)% of a core)"
    bench_stop "$SHELLAC_PID" 35
    PEER_SHELLAC_ADMIN=1 peer_shellac_start "$SHELLAC" "$CGIT_PORT" "${RENDER_LINES[@]}" "${extra[@]}"
    TARGET_URL[shellac]="http://127.0.0.1:$SHELLAC_PORT"
    check_target shellac "/$base/commit/?id=$head"
  done
  if [ "$attempt" -gt 0 ]; then
    mv "$out.best" "$out"; mv "$samples.best" "$samples"; mv "$BENCH_TSV.best" "$BENCH_TSV"
    BENCH_CPU=$best_cpu
    REMEASURED+="; the report shows the least disturbed attempt (other $best_other% of a core)"
  fi
  local busy
  busy=$(awk -F, '{ for (i = 1; i <= NF; i++) { split($i, kv, ":"); t += kv[2] } } END { print t + 0 }' <<<"$BENCH_CPU")
  local rej
  rej=$({ curl -sS --max-time 10 "http://127.0.0.1:$SHELLAC_ADMIN_PORT/metrics" || true; } | awk '$1 == "shellac_render_rejected_total" { print $2 }')
  [ -z "$SHELLAC_DIED" ] && bench_stop "$SHELLAC_PID" 35
  bench_stop "$CGIT_PID" 15
  render_report "$out" "$samples" "$bigfacts" "$busy" "${rej:-unknown}"
  [ -z "$SHELLAC_DIED" ]
}

render_report() {  # RENDER.PY-OUTPUT SAMPLES BIG-FACTS MACHINE-BUSY-% REJECTED
  local out=$1 samples=$2 bigfacts=$3 busy=$4 rej=$5 md=$OUT/${REPORT:-render}.md
  # rv PHASE TARGET FIELD -> a field of a BENCH_RENDER line; rk PHASE KIND FIELD -> of a BENCH_RENDER_KIND line
  rv() { awk -v l="BENCH_RENDER phase=$1 target=$2" -v f="$3" '$1 " " $2 " " $3 == l { for (i = 4; i <= NF; i++) if (index($i, f "=") == 1) print substr($i, length(f) + 2) }' "$out"; }
  rk() { awk -v l="BENCH_RENDER_KIND phase=$1 kind=$2" -v f="$3" '$1 " " $2 " " $3 == l { for (i = 4; i <= NF; i++) if (index($i, f "=") == 1) print substr($i, length(f) + 2) }' "$out"; }
  ms() { [ -n "$1" ] && bench_ms "$1" || echo "n/a"; }
  ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a > 0 && b > 0) printf "%.0f", a / b; else printf "n/a" }'; }
  met() { awk -v x="$1" -v lim="$2" 'BEGIN { if (x == "") print "not measured"; else if (x <= lim) print "**met**"; else print "**not met**" }'; }
  {
    report_head "render: commit pages rendered by shellac vs stock cgit, one at a time" \
      "The same sampled commits through shellac's resident renderer (gitfrag, the corpus' cgitrc imported)" \
      "and through stock cgit (CGI under lighttpd), same run, one request at a time (concurrency 1). For" \
      "each commit, in this order: shellac's commit page, the first request for that commit (cold: the" \
      "frame and the diff fragment are rendered); the same commit's page in another fork (frame only: the" \
      "fragment is now in the store, shared by every fork); cgit's commit page. Then the same three pages" \
      "for every commit with a 10k+ line diff (sample-commits.sh --big). Targets (issue 6, a benchmark, not" \
      "a test): frame <= 0.1 ms median, cold page <= 1 ms median, 16k-line diff <= 30 ms."
    echo "- client: bench/wrk/render.py (python3 http.client), one keep-alive connection per server, one request"
    echo "  at a time; latency = request written -> whole answer read (gzip on the wire$([ "$IDENTITY" = 1 ] && echo ": no, --identity")); it includes the"
    echo "  client's own Python overhead (tens of µs) and loopback. Each answer is then checked outside the timing:"
    echo "  200, and its text (gunzipped, entities decoded) holds the commit's subject and a \`diff --git\` line"
    echo "- render time as shellac counts it: \`shellac_renders_total\` / \`shellac_render_seconds_total\` by kind, read from"
    echo "  its /metrics before and after every shellac request (outside the timing): the render work alone, without"
    echo "  HTTP, queueing, ESI assembly, store or loopback"
    echo "- shellac: threads=2, access-log=off, admin-listen=127.0.0.1:PORT, backend=the lighttpd below (pages it does"
    echo "  not render), ${RENDER_LINES[*]}${SHELLAC_CONF:+, $SHELLAC_CONF}, everything else default (render-threads = cores,"
    echo "  cache-size 256M); frame-only pages go to the first $RENDER_FRAME_FORKS forks in turn, each opened before the timed"
    echo "  requests (its HEAD's page)"
    echo "- cgit: /usr/lib/cgit/cgit.cgi as CGI under lighttpd (one process per request), the corpus' cgitrc (cache-size=0)"
    echo "- CPU during the timed requests, % of one core: ${BENCH_CPU//,/, } (wrk = the client, render.py), ${busy}% in all"
    echo
    echo "## Summary"
    echo
    local c50 c90 f50 f90 g50 g90
    c50=$(rv cold shellac p50_us) c90=$(rv cold shellac p90_us) f50=$(rv frame shellac p50_us) f90=$(rv frame shellac p90_us)
    g50=$(rv cgit cgit p50_us) g90=$(rv cgit cgit p90_us)
    echo "- cold commit page (frame + fragment), $(rv cold shellac n) commits: shellac median **$(ms "$c50") ms**, p90 $(ms "$c90") ms, p99 $(ms "$(rv cold shellac p99_us)") ms; cgit median **$(ms "$g50") ms**, p90 $(ms "$g90") ms, p99 $(ms "$(rv cgit cgit p99_us)") ms: cgit / shellac **$(ratio "$g50" "$c50")x** at the median, $(ratio "$g90" "$c90")x at p90. Target <= 1 ms median: $(met "$c50" 1000)"
    echo "- frame only (the page again in another fork, fragment stored): shellac median **$(ms "$f50") ms**, p90 $(ms "$f90") ms, p99 $(ms "$(rv frame shellac p99_us)") ms; cgit / shellac $(ratio "$g50" "$f50")x at the median. Target <= 0.1 ms median: $(met "$f50" 100) (client-side latency)"
    echo "- render time alone (shellac's count): frame $(ms "$(rk frame commit p50_us)") ms median, $(ms "$(rk frame commit p90_us)") ms p90 (target <= 0.1 ms: $(met "$(rk frame commit p50_us)" 100)); cold page: frame $(ms "$(rk cold commit p50_us)") ms + diff fragment $(ms "$(rk cold diff-fragment p50_us)") ms median (p90 $(ms "$(rk cold commit p90_us)") + $(ms "$(rk cold diff-fragment p90_us)") ms); so loopback + HTTP + ESI + store + client cost ~$(awk -v a="$f50" -v b="$(rk frame commit p50_us)" 'BEGIN { printf "%.2f", (a - b) / 1000 }') ms a page (frame-only median latency - its median render time); the stored fragment alone, no frame, no ESI (its esi-diff URL): median $(ms "$(rv hit shellac p50_us)") ms, p90 $(ms "$(rv hit shellac p90_us)") ms: the floor of this client, loopback and shellac's HTTP path"
    echo "- diff fragments rendered during the frame-only pages: $(rk frame diff-fragment renders | grep . || echo 0) (0 = every fork's page used the stored fragment); during the cold pages: $(rk cold diff-fragment renders | grep . || echo 0) of $(rv cold shellac n)"
    local nb
    nb=$(wc -l <"$bigfacts")
    if [ "$nb" -gt 0 ]; then
      echo "- 10k+ line diffs ($nb commits, $(awk -F'\t' '{ printf "%s%d", sep, $2; sep = ", " }' "$bigfacts") changed lines), cold commit page: shellac median **$(ms "$(rv bigcold shellac p50_us)") ms**, max $(ms "$(rv bigcold shellac max_us)") ms; cgit median **$(ms "$(rv bigcgit cgit p50_us)") ms**, max $(ms "$(rv bigcgit cgit max_us)") ms: cgit / shellac $(ratio "$(rv bigcgit cgit p50_us)" "$(rv bigcold shellac p50_us)")x at the median. Target (16k-line diff <= 30 ms): $(awk -F'\t' 'NR == FNR { l[$1] = $2; next } $1 == "bigcold" { match($3, /id=[0-9a-f]+/); s = substr($3, RSTART + 3, RLENGTH - 3); if (l[s] <= 16500) { n++; if ($5 <= 30000) ok++ } } END { if (n) printf "%d of the %d with <= 16.5k lines within 30 ms", ok, n; else printf "no commit of <= 16.5k lines" }' "$bigfacts" "$samples") (per commit below)"
    else
      echo "- 10k+ line diffs: **none in this repository** (sample-commits.sh --big listed no commit): not measured"
    fi
    [ -n "$BIG_NOTE" ] && echo "- 10k+ line diffs: $BIG_NOTE"
    [ "${RENDER_OVERLAP:-0}" -gt 0 ] && echo "- $RENDER_OVERLAP sampled commit(s) are also 10k+ line diffs: measured with those only (a page is cold once)"
    echo "- failed checks: $(awk '/^BENCH_RENDER / { for (i = 2; i <= NF; i++) if ($i ~ /^bad=/) b += substr($i, 5) } END { print b + 0 }' "$out") of $(awk '/^BENCH_RENDER / { for (i = 2; i <= NF; i++) if ($i ~ /^n=/) b += substr($i, 3) } END { print b + 0 }' "$out") pages$(grep '^BENCH_RENDER_BAD' "$out" | head -n3 | sed 's/^BENCH_RENDER_BAD /; e.g. /' | tr -d '\n'); renders refused (queue full): $rej"
    [ -n "$SHELLAC_DIED" ] && echo "- **$SHELLAC_DIED**"
    [ -n "$REMEASURED" ] && echo "- measured again because other processes disturbed it: ${REMEASURED% }"
    bench_md_run_health
    echo
    echo "## Latency per phase (client side)"
    echo
    echo '| phase | server | pages | failed checks | p50 ms | p90 ms | p99 ms | max ms | mean ms | mean bytes (wire) |'
    echo '|---|---|---:|---:|---:|---:|---:|---:|---:|---:|'
    sed -n 's/^BENCH_RENDER phase=//p' "$out" | sed 's/[a-z0-9_]*=//g' |
      awk 'function ms(u) { return u >= 10000 ? sprintf("%.1f", u / 1000) : sprintf("%.3f", u / 1000) }
        BEGIN { d["open"] = "fork opened (untimed)"; d["cold"] = "cold commit page"; d["frame"] = "frame only (another fork)"; d["cgit"] = "commit page"
                d["hit"] = "stored fragment alone (esi-diff URL)"
                d["bigcold"] = "10k+ diff, cold"; d["bigframe"] = "10k+ diff, frame only"; d["bigcgit"] = "10k+ diff" }
        { printf "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", d[$1], $2, $3, $4, ms($5), ms($6), ms($7), ms($8), ms($9), $10 }'
    echo
    echo "## Render time (shellac's own count, per request that rendered it)"
    echo
    echo '| phase | kind | renders | p50 ms | p90 ms | max ms | total s |'
    echo '|---|---|---:|---:|---:|---:|---:|'
    sed -n 's/^BENCH_RENDER_KIND phase=//p' "$out" | sed 's/[a-z0-9_]*=//g' |
      awk 'function ms(u) { return u >= 10000 ? sprintf("%.1f", u / 1000) : sprintf("%.3f", u / 1000) }
        { printf "| %s | %s | %s | %s | %s | %s | %.3f |\n", $1, $2, $3, ms($5), ms($6), ms($7), $4 / 1e6 }'
    if [ "$nb" -gt 0 ]; then
      echo
      echo "## 10k+ line diffs, per commit"
      echo
      echo "changed lines = added + deleted against the first parent (git --numstat -M). fragment render = shellac's"
      echo "diff-fragment render time for that page (its /metrics); frame-only = the page in another fork afterwards;"
      echo "no complete answer = the answer was not complete after ${RENDER_TIMEOUT} s (render.py's timeout): left out of the latencies."
      echo
      echo '| commit | subject | changed lines | files | shellac cold ms | of it fragment render ms | shellac frame only ms | cgit ms | cgit / shellac cold | wire bytes shellac / cgit |'
      echo '|---|---|---:|---:|---:|---:|---:|---:|---:|---:|'
      awk -F'\t' 'function ms(u) { return u >= 10000 ? sprintf("%.1f", u / 1000) : sprintf("%.2f", u / 1000) }
        function fr(r,   a, i, p) { n = split(r, a, ","); for (i = 1; i <= n; i++) { split(a[i], p, ":"); if (p[1] == "diff-fragment") return ms(p[3]) } return "-" }
        NR == FNR { sha[NR] = $1; lines[$1] = $2; files[$1] = $3; subj[$1] = $4; n0 = NR; next }
        { match($3, /id=[0-9a-f]+/); s = substr($3, RSTART + 3, RLENGTH - 3) }
        function t(st, u) { return st == 0 ? "**no complete answer**" : ms(u) }
        $1 == "bigcold" { cold[s] = $5; st[s] = $4; frag[s] = fr($8); cb[s] = $6 }
        $1 == "bigframe" { frame[s] = t($4, $5) }
        $1 == "bigcgit" { cg[s] = $5; gst[s] = $4; gb[s] = $6 }
        END { for (i = 1; i <= n0; i++) { s = sha[i]
          printf "| %s | %s | %d | %d | %s | %s | %s | %s | %s | %d / %d |\n", substr(s, 1, 12), subj[s], lines[s], files[s],
            t(st[s], cold[s]), frag[s], frame[s], t(gst[s], cg[s]),
            (st[s] != 0 && gst[s] != 0 && cold[s] > 0 ? sprintf("%.1fx", cg[s] / cold[s]) : "-"), cb[s], gb[s] } }' "$bigfacts" "$samples"
    fi
    if [ -s "$SHELLAC_DIR/stderr.log" ]; then
      echo; echo "## shellac stderr (last 20 lines)"; echo; echo '```'; tail -n 20 "$SHELLAC_DIR/stderr.log"; echo '```'
    fi
  } >"$md"
  rm -f "$OUT/render.png"
  bench_log "wrote $md"
  cat "$md"
}

# ---------------------------------------------------------------------------------------------
# flood: a crawler flood and one person (issue 15)

FLOOD_CONNS=400

flood_metric() {  # NAME [LABEL-MATCH]  the sum of a metric's samples at shellac's /metrics (0 when none)
  { curl -sS --max-time 10 "http://127.0.0.1:$SHELLAC_ADMIN_PORT/metrics" 2>/dev/null || true; } |
    awk -v n="$1" -v l="${2:-}" '$1 == n || (index($1, n "{") == 1 && index($1, l) > 0) { t += $2 } END { printf "%.6f\n", t + 0 }'
}

flood_phase() {  # TARGET PHASE(quiet|flood) PERSON-URLS  -> $BENCH_TMP/flood-TARGET-PHASE.{person,wrk,facts}
  local t=$1 phase=$2 urls=$3 port=${FLOOD_PORT[$1]} f=$BENCH_TMP/flood-$1-$2 wpid="" secs
  local hdr=()
  [ "$IDENTITY" = 1 ] || hdr=(--gzip)
  local shellac=0
  [ "$t" = shellac ] || [ "$t" = baseline ] && shellac=1
  [ "$shellac" = 1 ] || peer_origin_idle 180 || bench_log "flood: cgit still busy after 180 s"
  local r0=0 f0=0 full0=0 to0=0 busy0=0
  if [ "$shellac" = 1 ]; then
    r0=$(flood_metric shellac_renders_total 'kind="diff-fragment"')
    f0=$(flood_metric shellac_renders_total 'kind="commit"')
    full0=$(flood_metric shellac_render_refused_total 'reason="full"')
    to0=$(flood_metric shellac_render_refused_total 'reason="timeout"')
    busy0=$(flood_metric shellac_esi_includes_busy_total)
  fi
  echo "load_before=$(cut -d' ' -f1 /proc/loadavg)" >"$f.facts"
  if [ "$phase" = flood ]; then
    secs=$FLOOD_SECS
    # wrk stops itself after -d; under cgit's flood it can be starved of CPU for long past it (wrk
    # ignores SIGINT), so timeout(1) ends it 60 s later, and the row says it has no report
    CRAWL_URLS=$BENCH_TMP/flood-crawler.txt CRAWL_START=0 CRAWL_LANES=2 WRK_HEADERS=${FLOOD_HEADERS:-} \
      timeout -k 10 $((secs + 60)) wrk -t2 -c"$FLOOD_CONNS" -d"${secs}s" --timeout 60s \
      -s "$BENCH_DIR/wrk/flood.lua" "http://127.0.0.1:$port" >"$f.wrk" 2>&1 &
    wpid=$!
    sleep 2   # the crawler's connections are open and its queue is full when the person starts
    secs=$((FLOOD_SECS - 3))
  else
    secs=$PERSON_SECS
  fi
  python3 "$BENCH_DIR/wrk/person.py" --port "$port" --source 127.0.0.3 --urls "$urls" --interval 0.2 \
    --duration "$secs" --timeout 60 "${hdr[@]}" >"$f.person" 2>&1 || bench_log "person.py failed: $(tail -n1 "$f.person")"
  [ -z "$wpid" ] || wait "$wpid" || bench_log "flood: wrk against $t ended with status $?"
  echo "load_after=$(cut -d' ' -f1 /proc/loadavg)" >>"$f.facts"
  if [ "$shellac" = 1 ]; then
    {
      echo "fragments=$(awk -v a="$r0" -v b="$(flood_metric shellac_renders_total 'kind="diff-fragment"')" 'BEGIN { print b - a }')"
      echo "frames=$(awk -v a="$f0" -v b="$(flood_metric shellac_renders_total 'kind="commit"')" 'BEGIN { print b - a }')"
      echo "refused_full=$(awk -v a="$full0" -v b="$(flood_metric shellac_render_refused_total 'reason="full"')" 'BEGIN { print b - a }')"
      echo "refused_timeout=$(awk -v a="$to0" -v b="$(flood_metric shellac_render_refused_total 'reason="timeout"')" 'BEGIN { print b - a }')"
      echo "includes_busy=$(awk -v a="$busy0" -v b="$(flood_metric shellac_esi_includes_busy_total)" 'BEGIN { print b - a }')"
    } >>"$f.facts"
  fi
  bench_log "flood: $t $phase: $(grep '^PERSON' "$f.person" || echo 'no person line')${wpid:+; crawler $({ grep -o 'rps=[0-9.]*' "$f.wrk" || true; } | head -n1) $(grep '^BENCH_STATUS' "$f.wrk" || true)}"
}

flood_row() {  # TARGET PHASE  one row of the report's table
  local t=$1 phase=$2 f=$BENCH_TMP/flood-$1-$2 person pages ok st p50 p99 max
  person=$(grep '^PERSON' "$f.person" || echo "PERSON pages=0 ok=0 statuses=- p50_ms=- p99_ms=- max_ms=-")
  pages=$(sed -n 's/.* pages=\([0-9]*\).*/\1/p' <<<"$person")
  ok=$(sed -n 's/.* ok=\([0-9]*\).*/\1/p' <<<"$person")
  st=$(sed -n 's/.* statuses=\([^ ]*\).*/\1/p' <<<"$person" | tr ',' ' ')
  p50=$(sed -n 's/.* p50_ms=\([^ ]*\).*/\1/p' <<<"$person")
  p99=$(sed -n 's/.* p99_ms=\([^ ]*\).*/\1/p' <<<"$person")
  max=$(sed -n 's/.* max_ms=\([^ ]*\).*/\1/p' <<<"$person")
  local crawl="-" cst="-" c200="-" renders="-" refused="-"
  if [ -f "$f.wrk" ] && ! grep -q '^BENCH ' "$f.wrk"; then
    crawl="no report: wrk, starved of CPU, had not ended 60 s past -d and was killed"
  elif [ -f "$f.wrk" ]; then
    local rps req dur n200
    rps=$(sed -n 's/^BENCH .*rps=\([0-9.]*\).*/\1/p' "$f.wrk")
    req=$(sed -n 's/^BENCH requests=\([0-9]*\).*/\1/p' "$f.wrk")
    dur=$(sed -n 's/^BENCH .*duration_us=\([0-9]*\).*/\1/p' "$f.wrk")
    cst=$(sed -n 's/^BENCH_STATUS //p' "$f.wrk")
    n200=$({ grep -o '\b200=[0-9]*' <<<"$cst" || true; } | cut -d= -f2)
    crawl="${rps:-?} ($(sed -n 's/^BENCH .*err_timeout=\([0-9]*\).*/\1/p' "$f.wrk") timeouts, $(sed -n 's/^BENCH .*err_connect=\([0-9]*\) err_read=\([0-9]*\).*/\1+\2/p' "$f.wrk") connect+read errors)"
    c200=$(awk -v n="${n200:-0}" -v d="${dur:-0}" 'BEGIN { if (d > 0) printf "%.1f", n / (d / 1e6); else print "-" }')
    cst=${cst:--}
  fi
  if grep -q '^fragments=' "$f.facts"; then
    local fr secs
    fr=$(sed -n 's/^fragments=//p' "$f.facts")
    secs=$([ "$phase" = flood ] && echo "$FLOOD_SECS" || echo "$PERSON_SECS")
    renders="$(awk -v n="$fr" -v s="$secs" 'BEGIN { printf "%.1f", n / s }') ($(sed -n 's/^frames=//p' "$f.facts") frames)"
    refused="full $(sed -n 's/^refused_full=//p' "$f.facts"), timeout $(sed -n 's/^refused_timeout=//p' "$f.facts"), includes with a notice $(sed -n 's/^includes_busy=//p' "$f.facts")"
  fi
  echo "| ${BENCH_LABEL[$t]} | $phase | $pages | $st | $p50 | $p99 | $max | $crawl | $cst | $c200 | $renders | $refused | $(sed -n 's/^load_before=//p' "$f.facts") / $(sed -n 's/^load_after=//p' "$f.facts") |"
}

scenario_flood() {
  begin flood
  peers_need
  corpus_prepare
  shellac_binary
  : "${FLOOD_SECS:=$([ "$SMALL" = 1 ] && echo 8 || echo 20)}" "${PERSON_SECS:=$([ "$SMALL" = 1 ] && echo 4 || echo 10)}"
  peer_cgit_start "$CGITRC"
  SHELLAC_RENDER=1
  render_lines
  local extra=()
  [ -z "${SHELLAC_CONF:-}" ] || read -r -a extra <<<"$SHELLAC_CONF"
  PEER_SHELLAC_ADMIN=1 peer_shellac_start "$SHELLAC" "$CGIT_PORT" "${RENDER_LINES[@]}" "${extra[@]}"
  peer_varnish_start "$CGIT_PORT"
  BENCH_LABEL[cgit]="cgit direct" BENCH_LABEL[shellac]="shellac (renders)" BENCH_LABEL[varnish]="varnish -> cgit"
  declare -gA FLOOD_PORT=([cgit]=$CGIT_PORT [shellac]=$SHELLAC_PORT [varnish]=$VARNISH_PORT)
  SHELLAC_DIED=""
  # Cold commit pages of the base repository, seeded order: the person's pages (two lists: alone and
  # under the flood) and the crawler's are disjoint; every target gets the same lists (each server
  # is cold for them: shellac's and Varnish's stores are their own).
  local base
  base=$(sed -n 's/^repo\.url=//p' "$CGITRC" | head -n1)
  git -C "$BASE_REPO" rev-list --all | awk -v seed="$SEED" 'BEGIN { srand(seed) } { print rand() "\t" $0 }' |
    sort -k1,1 | cut -f2 | sed "s|^|/$base/commit/?id=|" >"$BENCH_TMP/flood-all.txt"
  head -n 400 "$BENCH_TMP/flood-all.txt" >"$BENCH_TMP/flood-person-quiet.txt"
  sed -n '401,800p' "$BENCH_TMP/flood-all.txt" >"$BENCH_TMP/flood-person-flood.txt"
  tail -n +801 "$BENCH_TMP/flood-all.txt" >"$BENCH_TMP/flood-crawler.txt"
  [ -s "$BENCH_TMP/flood-crawler.txt" ] || bench_die "flood: the base repository has too few commits"
  FLOOD_HEADERS=""
  if [ "$IDENTITY" != 1 ]; then FLOOD_HEADERS=$BENCH_TMP/flood-headers.txt; echo "Accept-Encoding: gzip" >"$FLOOD_HEADERS"; fi
  local head t
  head=$(git -C "$BASE_REPO" rev-parse HEAD)
  declare -gA TARGET_URL=()
  for t in cgit shellac varnish; do
    TARGET_URL[$t]="http://127.0.0.1:${FLOOD_PORT[$t]}"
    check_target "$t" "/$base/commit/?id=$head"
  done
  quiet_wait || true
  local targets=(shellac cgit varnish) metrics=$BENCH_TMP/flood-metrics.txt
  for t in "${targets[@]}"; do
    flood_phase "$t" quiet "$BENCH_TMP/flood-person-quiet.txt"
    flood_phase "$t" flood "$BENCH_TMP/flood-person-flood.txt"
    if [ "$t" = shellac ]; then
      bench_alive "$SHELLAC_PID" || SHELLAC_DIED="shellac (pid $SHELLAC_PID) exited during the run"
      curl -sS --max-time 10 "http://127.0.0.1:$SHELLAC_ADMIN_PORT/metrics" 2>/dev/null |
        grep -E '^shellac_render_(queue|refused|clients|largest|threads)' >"$metrics" || true
      [ -z "$SHELLAC_DIED" ] && bench_stop "$SHELLAC_PID" 35
    fi
  done
  # The same two phases with another shellac binary (FLOOD_BASELINE_BIN: e.g. a build from before the
  # render queue), for the throughput it had; its own port, after the others.
  if [ -n "${FLOOD_BASELINE_BIN:-}" ]; then
    PEER_SHELLAC_ADMIN=1 peer_shellac_start "$FLOOD_BASELINE_BIN" "$CGIT_PORT" "${RENDER_LINES[@]}" "${extra[@]}"
    FLOOD_PORT[baseline]=$SHELLAC_PORT
    BENCH_LABEL[baseline]="shellac baseline ($("$FLOOD_BASELINE_BIN" --version 2>&1 | head -n1), FLOOD_BASELINE_BIN)"
    TARGET_URL[baseline]="http://127.0.0.1:$SHELLAC_PORT"
    flood_phase baseline quiet "$BENCH_TMP/flood-person-quiet.txt"
    flood_phase baseline flood "$BENCH_TMP/flood-person-flood.txt"
    bench_stop "$SHELLAC_PID" 35
    targets+=(baseline)
  fi
  bench_stop "$VARNISH_PID" 15
  peer_origin_idle 180 || true
  bench_stop "$CGIT_PID" 15
  local md=$OUT/${REPORT:-flood}.md sp sf
  sp=$(grep '^PERSON' "$BENCH_TMP/flood-shellac-flood.person" || true)
  {
    report_head "flood: a crawler flood and one person" \
      "$FLOOD_CONNS crawler connections (wrk from 127.0.0.1) ask for cold commit pages of the base repository while" \
      "one person (bench/wrk/person.py, bound to 127.0.0.3) opens a new cold commit page every 200 ms; the same person" \
      "alone first (quiet). Each target in turn: shellac rendering, cgit direct, Varnish -> cgit."
    echo "- crawler: wrk -t2 -c$FLOOD_CONNS -d${FLOOD_SECS}s --timeout 60s (ended 60 s past -d if it is starved of CPU: then it has no report), bench/wrk/flood.lua (crawler.lua's walk + statuses), $(wc -l <"$BENCH_TMP/flood-crawler.txt") URLs \`/$base/commit/?id=SHA\` in a seeded order$([ "$IDENTITY" = 1 ] || echo ", Accept-Encoding: gzip")"
    echo "- person: one page at a time on a new connection, the next 200 ms after the previous started (or when it ended); ${PERSON_SECS}s alone, then from 2 s into the flood for $((FLOOD_SECS - 3)) s; 400 URLs per phase, disjoint from the crawler's"
    echo "- shellac: threads=2, ${RENDER_LINES[*]}${SHELLAC_CONF:+, $SHELLAC_CONF}, everything else default (render-threads = cores, render-queue=1024, render-queue-timeout=30s); backend = that lighttpd"
    echo "- cgit: cgit.cgi as CGI under lighttpd (one process per request); Varnish 7 in front of the same lighttpd, default VCL"
    echo "- the machine is shared with other work (the load columns are the 1-minute load average before and after each phase)"
    echo
    echo "## Summary"
    echo
    echo "- the person under the flood, shellac: ${sp:-not measured}"
    local fr
    fr=$(sed -n 's/^fragments=//p' "$BENCH_TMP/flood-shellac-flood.facts" 2>/dev/null || echo 0)
    echo "- targets (issue 15): person 100% 200: $(grep -q ' ok=\([0-9]*\) ' <<<"$sp" && awk -v s="$sp" 'BEGIN { match(s, /pages=[0-9]+/); p = substr(s, RSTART + 6, RLENGTH - 6); match(s, /ok=[0-9]+/); o = substr(s, RSTART + 3, RLENGTH - 3); print (p > 0 && p == o ? "**met**" : "**not met**") " (" o " of " p ")" }'); person p99 <= 50 ms: $(awk -v s="$sp" 'BEGIN { match(s, /p99_ms=[0-9.]+/); v = substr(s, RSTART + 7, RLENGTH - 7); print (v != "" && v + 0 <= 50 ? "**met**" : "**not met**") " (" v " ms)" }'); crawler's renders/s >= 230 (git/git): $(awk -v n="$fr" -v s="$FLOOD_SECS" 'BEGIN { printf "%.1f/s", n / s }'); no 503 before render-queue-timeout: $(awk -v v="$(sed -n 's/^refused_full=//p' "$BENCH_TMP/flood-shellac-flood.facts")" 'BEGIN { print (v + 0 == 0 ? "**met**" : "**not met**") " (" v + 0 " refused for a full queue)" }')"
    if [ -f "$BENCH_TMP/flood-baseline-flood.facts" ]; then
      local bf
      bf=$(sed -n 's/^fragments=//p' "$BENCH_TMP/flood-baseline-flood.facts")
      echo "- against the baseline binary in the same run (${BENCH_LABEL[baseline]}): diff renders under the flood $fr vs $bf ($(awk -v a="$fr" -v b="$bf" 'BEGIN { if (b > 0) printf "%.2fx", a / b; else print "-" }')); the baseline's person: $(grep '^PERSON' "$BENCH_TMP/flood-baseline-flood.person" || echo -)"
    fi
    echo
    echo "## Results"
    echo
    echo "| target | phase | person pages | person statuses | person p50 ms | p99 ms | max ms | crawler req/s | crawler statuses | crawler 200/s | shellac diff renders/s | shellac refusals | load |"
    echo "|---|---|---:|---|---:|---:|---:|---|---|---:|---|---|---|"
    for t in "${targets[@]}"; do
      flood_row "$t" quiet
      flood_row "$t" flood
    done
    echo
    echo "shellac's render queue at the end (its /metrics):"
    echo
    echo '```'
    cat "$metrics"
    echo '```'
    [ -z "$SHELLAC_DIED" ] || { echo; echo "**$SHELLAC_DIED**"; }
  } >"$md"
  bench_log "wrote $md"
  cat "$md"
  [ -z "$SHELLAC_DIED" ]
}

ALL=(crawler cold hot fork-spread burst passthrough cached esi render tls flood)

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
        grep -m1 -e 'skipped' -e 'Not measured yet' "$OUT/$name.md" || echo "(no summary: see $name.md)"
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
  crawler | cold | hot | burst | passthrough | cached | esi | render | tls | flood | all | corpus) "scenario_$SCENARIO" ;;
  fork-spread) scenario_fork_spread ;;
  *) echo "run.sh: unknown scenario: $SCENARIO" >&2; usage 2 ;;
esac
