#!/usr/bin/env bash
# bench/run.sh: shellac against its peers on a forge-shaped corpus, side by side, in one run.
#
# Usage: bench/run.sh SCENARIO [options]
#   SCENARIO   crawler | cold | hot | fork-spread | burst | passthrough | cached | esi | render | tls | flood | cluster | pages
#              | crawler-mix | history | all | corpus
#
# run.sh parses the options and runs bench/scenarios/SCENARIO.sh, which measures, checks, writes the
# raw results to OUT/raw/NAME/ (meta.json: command, date, machine, versions, options, checks; TSV
# rows) and makes OUT/NAME.md (+ NAME.png) from them with bench/report.py (`bench/report.py
# OUT/raw/NAME` makes the report again from the raw results alone).
#
# crawler, hot and fork-spread load three targets back to back at each concurrency level of the sweep:
# cgit direct (CGI under lighttpd), shellac -> that lighttpd+cgit, Varnish 7 -> the same lighttpd+cgit
# (hot adds nginx serving the same pages as static files: the ceiling). In crawler shellac renders the
# commit pages itself (the corpus' cgitrc imported; other pages -> cgit), its fragment store filled
# first by one pass over the sampled commits x diff options. burst sends N simultaneous
# requests for one cold commit page to each target and counts what reached cgit. passthrough runs
# bench/scenarios/passthrough.sh. cached, esi and tls use synthetic cgit-like ESI pages (bench/wrk/esipages.py)
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
# Varnish -> cgit, and the person alone (bench/wrk/flood.lua counts the crawler's statuses). cluster: HAProxy
# (conf/haproxy.cfg.example) in front of 3 shellac nodes sharing fragments through 2 memcached, against
# 3 independent nodes round-robin and 3 Varnish nodes round-robin (each -> lighttpd+cgit); a node killed
# mid-walk (with the exact re-render check from the nodes' l2-trace= files); a restart from the store snapshot
# (bench/scenarios/cluster.sh; CLUSTER_COMMITS, CLUSTER_CONNS in the environment). pages: every page kind
# a crawler walks, a list of unique URLs per kind (bench/wrk/pages_urls.py), cgit direct vs shellac
# rendering vs Varnish -> cgit at one level (--sweep C, default 8; 3 s a point), then the kinds mixed. crawler-mix:
# those kinds (and blame, path logs) weighted as crawlers walk a forge, every URL once, shellac's store
# empty at the start, over the concurrency sweep (as cold), with shellac's renders by kind. history: blame and path-log
# pages one at a time (bench/wrk/history.py), each by git's own command without and with the commit-graph, by cgit
# and by shellac (HISTORY_PAGES of each kind, default 25). all runs every scenario,
# one after the other (each in its own process). Results: bench/results/SCENARIO.md (+ SCENARIO.png) and
# bench/results/raw/SCENARIO/, bench/results/all.md for `all`.
#
# Options:
#   --sweep LIST      connection counts (default 1,2,4,8,16,32; --small: 1,2,4)
#   --duration S      measured seconds per point (default 5; --small: 2)
#   --warmup S        discarded seconds of load before each point (default 1)
#   --min-pages N     crawler, cold, crawler-mix, pages: a point lasts --duration and longer, up to
#                     --max-duration, until the target answered N pages (bench/wrk/crawler.lua's
#                     CRAWL_ENOUGH), so a slow peer's rate is over enough pages that a few slow ones
#                     do not decide it (default 400 for crawler-mix, 100 for pages, else 0: every
#                     point lasts --duration)
#   --max-duration S  the cap of a point with --min-pages (default 60)
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
#   --commit-graph    give the corpus commit-graphs with changed-path Bloom filters, as a forge does
#                     (`git commit-graph write --reachable --changed-paths` in every repository with
#                     objects of its own; with --from, in a shared clone of REPO: REPO is not written);
#                     a corpus of its own (the parameters name it). Without it the generated base has
#                     the plain graph gen-repo.sh writes (no filters) and a --from base what it has
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
#   --report NAME     render, cold, crawler-mix, flood, history: write the report to OUT/NAME.md instead of OUT/SCENARIO.md
#                     (e.g. render-git, cold-git for a run --from a clone of git/git)
#   --note TEXT       a line for the report's head (e.g. "the machine was shared with ..."); kept in
#                     meta.json, so it can also be added there later and the report made again
#   --mem-objects N   cached: distinct fragment URLs loaded for the memory table (default 20000;
#                     --small: 2000)
#   SHELLAC_BIN=PATH  use this binary instead of `make -C REPO release` -> build-release/proxy/shellac
#   SHELLAC_CONF='k=v k=v'  extra lines for shellac's generated config (e.g. 'cache=off')
#   FLOOD_BASELINE_BIN=PATH flood: the same phases once more with this shellac (e.g. a build from
#                     before the render queue), as a fourth target
set -euo pipefail
BENCH_DIR=$(cd "$(dirname "$0")" && pwd)
BENCH_REPO=$(cd "$BENCH_DIR/.." && pwd)

ARGS=("$@")
usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit "${1:-2}"; }
die() { echo "run.sh: $*" >&2; exit 1; }
[ $# -ge 1 ] || usage 2
case $1 in -h | --help) usage 0 ;; esac
SCENARIO=$1
shift
case $SCENARIO in
  crawler | cold | hot | fork-spread | burst | passthrough | cached | esi | render | tls | flood | cluster | pages | crawler-mix | history \
    | all \
    | corpus) ;;
  *) echo "run.sh: unknown scenario: $SCENARIO" >&2; usage 2 ;;
esac

SWEEP="" DURATION="" MIN_PAGES="" MAX_DURATION=60 BURST="" BURST_TIMEOUT=90 SMALL=0 COMMITS="" TAGS="" FORKS="" SAMPLE="" SEED=1 COMMIT_GRAPH=0
BENCH_NOTE=${BENCH_NOTE:-} FROM="" CORPUS="" REPORT="" IDENTITY=0 WAIT_QUIET=0 RETRIES="" OUT="" MEM_OBJECTS="" SWEEP_GIVEN=0
BENCH_WARMUP=${BENCH_WARMUP:-1} BENCH_KEEP_TMP=${BENCH_KEEP_TMP:-0}
PASS_ARGS=()   # options forwarded to the scenarios of `all`
while [ $# -gt 0 ]; do
  case $1 in
    --sweep) SWEEP=${2:?--sweep needs a list}; SWEEP_GIVEN=1; PASS_ARGS+=("$1" "$2"); shift 2 ;;
    --duration) DURATION=${2:?--duration needs seconds}; PASS_ARGS+=("$1" "$2"); shift 2 ;;
    --warmup) BENCH_WARMUP=${2:?--warmup needs seconds}; PASS_ARGS+=("$1" "$2"); shift 2 ;;
    --min-pages) MIN_PAGES=${2:?--min-pages needs a count}; PASS_ARGS+=("$1" "$2"); shift 2 ;;
    --max-duration) MAX_DURATION=${2:?--max-duration needs seconds}; PASS_ARGS+=("$1" "$2"); shift 2 ;;
    --burst) BURST=${2:?--burst needs a list}; PASS_ARGS+=("$1" "$2"); shift 2 ;;
    --burst-timeout) BURST_TIMEOUT=${2:?}; PASS_ARGS+=("$1" "$2"); shift 2 ;;
    --small) SMALL=1; PASS_ARGS+=("$1"); shift ;;
    --commits) COMMITS=${2:?}; PASS_ARGS+=("$1" "$2"); shift 2 ;;
    --tags) TAGS=${2:?}; PASS_ARGS+=("$1" "$2"); shift 2 ;;
    --forks) FORKS=${2:?}; PASS_ARGS+=("$1" "$2"); shift 2 ;;
    --sample) SAMPLE=${2:?}; PASS_ARGS+=("$1" "$2"); shift 2 ;;
    --seed) SEED=${2:?}; PASS_ARGS+=("$1" "$2"); shift 2 ;;
    --from) FROM=${2:?--from needs a repository}; PASS_ARGS+=("$1" "$2"); shift 2 ;;
    --commit-graph) COMMIT_GRAPH=1; PASS_ARGS+=("$1"); shift ;;
    --corpus) CORPUS=${2:?--corpus needs a folder}; PASS_ARGS+=("$1" "$2"); shift 2 ;;
    --identity) IDENTITY=1; PASS_ARGS+=("$1"); shift ;;
    --wait-quiet) WAIT_QUIET=${2:?--wait-quiet needs seconds}; shift 2 ;;
    --retries) RETRIES=${2:?}; PASS_ARGS+=("$1" "$2"); shift 2 ;;
    --out) OUT=${2:?--out needs a folder}; PASS_ARGS+=("$1" "$2"); shift 2 ;;
    --keep-tmp) BENCH_KEEP_TMP=1; PASS_ARGS+=("$1"); shift ;;
    --report) REPORT=${2:?--report needs a name}; shift 2 ;;
    --note) BENCH_NOTE=${2:?--note needs a text}; PASS_ARGS+=("$1" "$2"); shift 2 ;;
    --mem-objects) MEM_OBJECTS=${2:?--mem-objects needs a count}; PASS_ARGS+=("$1" "$2"); shift 2 ;;
    -h | --help) usage 0 ;;
    *) echo "run.sh: unknown argument: $1" >&2; usage 2 ;;
  esac
done
if [ "$SMALL" = 1 ]; then
  : "${SWEEP:=1,2,4}" "${DURATION:=2}" "${BURST:=10,50}" "${COMMITS:=2000}" "${TAGS:=100}" "${FORKS:=10}" "${SAMPLE:=30}"
  : "${MEM_OBJECTS:=2000}"
else
  : "${SWEEP:=1,2,4,8,16,32}" "${DURATION:=5}" "${BURST:=10,100,1000}" "${COMMITS:=20000}" "${TAGS:=1000}" "${FORKS:=100}" "${SAMPLE:=150}"
  : "${MEM_OBJECTS:=20000}"
fi
case $SCENARIO in crawler-mix) : "${MIN_PAGES:=400}" ;; pages) : "${MIN_PAGES:=100}" ;; *) : "${MIN_PAGES:=0}" ;; esac
[ -n "$RETRIES" ] || { [ "$WAIT_QUIET" -gt 0 ] && RETRIES=1 || RETRIES=0; }
[[ $SWEEP =~ ^[1-9][0-9]*(,[1-9][0-9]*)*$ ]] || die "--sweep: expected a list like 1,2,4,8"
[[ $BURST =~ ^[1-9][0-9]*(,[1-9][0-9]*)*$ ]] || die "--burst: expected a list like 10,100,1000"
for v in DURATION MIN_PAGES MAX_DURATION BENCH_WARMUP BURST_TIMEOUT COMMITS TAGS FORKS SAMPLE SEED WAIT_QUIET RETRIES MEM_OBJECTS; do
  [[ ${!v} =~ ^[0-9]+$ ]] || die "${v,,}: expected a whole number, got '${!v}'"
done
[ "$DURATION" -ge 1 ] || die "--duration: at least 1 second"
[ "$MIN_PAGES" = 0 ] || [ "$MAX_DURATION" -ge "$DURATION" ] || die "--max-duration: at least --duration ($DURATION s)"
if [ -z "$OUT" ]; then
  if [ "$SMALL" = 1 ]; then OUT=$BENCH_REPO/bench/tmp; else OUT=$BENCH_REPO/bench/results; fi
fi
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true   # 1,000 burst clients and wrk need descriptors

BENCH_COMMAND=$(source "$BENCH_DIR/lib.sh" && bench_cmdline "${ARGS[@]}")   # as typed, in every report
BENCH_PASS_ARGS=$(printf '%q ' "${PASS_ARGS[@]}")
BENCH_DURATION=$DURATION
export SWEEP SWEEP_GIVEN DURATION MIN_PAGES MAX_DURATION BURST BURST_TIMEOUT SMALL COMMITS TAGS FORKS SAMPLE SEED FROM COMMIT_GRAPH CORPUS REPORT \
  IDENTITY WAIT_QUIET RETRIES OUT MEM_OBJECTS BENCH_WARMUP BENCH_DURATION BENCH_KEEP_TMP BENCH_COMMAND BENCH_PASS_ARGS BENCH_NOTE

if [ "$SCENARIO" = passthrough ]; then   # its own script and options (it also runs alone)
  a=()
  [ "$DURATION" != 5 ] && a+=(--duration "$DURATION")
  [ "$BENCH_WARMUP" != 1 ] && a+=(--warmup "$BENCH_WARMUP")
  [ "$SMALL" = 1 ] && a+=(--sweep "1,8,64")
  [ "$SWEEP_GIVEN" = 1 ] && a+=(--sweep "$SWEEP")
  [ "$OUT" != "$BENCH_REPO/bench/results" ] && a+=(--out "$OUT")
  if [ "$WAIT_QUIET" -gt 0 ]; then
    left=$WAIT_QUIET
    [ -n "${BENCH_QUIET_FILE:-}" ] && [ -s "$BENCH_QUIET_FILE" ] && left=$(cat "$BENCH_QUIET_FILE")
    [ "$left" -gt 0 ] && a+=(--wait-quiet "$left" --retries "$RETRIES")
  fi
  [ "$BENCH_KEEP_TMP" = 1 ] && a+=(--keep-tmp)
  echo "run.sh: bench/scenarios/passthrough.sh ${a[*]}" >&2
  exec "$BENCH_DIR/scenarios/passthrough.sh" "${a[@]}"
fi
exec "$BENCH_DIR/scenarios/$SCENARIO.sh"
