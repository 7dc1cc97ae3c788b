#!/usr/bin/env bash
# bench/scenarios/history.sh: history pages one at a time (issue 14's history table): blame and
# path-limited log pages at commits a crawler would ask for (bench/wrk/pages_urls.py's blame and
# log-path lists: a file the commit touched, at that commit), each measured by git's own command
# without and with the repository's commit-graph, by cgit and by shellac (store empty at the
# start), one request at a time (bench/wrk/history.py); and the same path logs with follow=1
# (log-follow: git log --follow; the cgitrc gets enable-follow-links=1, which cgit needs for it).
# Target: each page no slower through shellac than git's own command with a commit-graph. Run through bench/run.sh history [--from REPO]
# [--commit-graph] [--report NAME]; HISTORY_PAGES (default 25) pages of each kind. Raw results ->
# OUT/raw/NAME/ (history.out: history.py's summary, history-samples.tsv: a line per page).
set -euo pipefail
source "$(dirname "$0")/../lib.sh"
HISTORY_PAGES=${HISTORY_PAGES:-25}
HISTORY_TIMEOUT=120   # seconds a page or a command may take (git blame of a long-lived file without a graph: ~6 s)

begin history "${REPORT:-history}"
peers_need
corpus_prepare
# enable-follow-links=1 (global, before the repositories: the corpus's line turned on, or one
# added first): cgit and shellac answer follow=1.
follow_rc=$BENCH_TMP/cgitrc-follow
if grep -q '^enable-follow-links=' "$CGITRC"; then
  sed 's/^enable-follow-links=.*/enable-follow-links=1/' "$CGITRC" >"$follow_rc"
else
  { echo "enable-follow-links=1"; cat "$CGITRC"; } >"$follow_rc"
fi
CGITRC=$follow_rc
shellac_binary
peer_cgit_start "$CGITRC"
SHELLAC_RENDER=1
render_lines
render_shellac_start "blame-timeout=${HISTORY_TIMEOUT}s"
bench_watch history "$SHELLAC_PID" "$CGIT_PID"
lists=$BENCH_TMP/lists plan=$BENCH_TMP/history-plan.tsv
python3 "$BENCH_DIR/wrk/pages_urls.py" --cgitrc "$CGITRC" --repo "$BASE_REPO" --branch "$HEAD_BRANCH" \
  --out "$lists" --seed "$SEED" --skip "$COMMITS_FILE" || bench_die "pages_urls.py failed"
# KIND SHA PATH URL: the first HISTORY_PAGES distinct (commit, path) pairs of each list, in its order
for k in blame log-path log-follow; do
  list=$k
  [ "$k" = log-follow ] && list=log-path
  sed -n 's|^\(/[^/]*/[a-z]*/\)\(.*\)?id=\([0-9a-f]\{40\}\)$|\3\t\2\t&|p' "$lists/$list.txt" |
    awk -F'\t' -v k="$k" -v n="$HISTORY_PAGES" -v q="$([ "$k" = log-follow ] && echo '&follow=1')" \
      'c < n && !seen[$1 FS $2]++ { print k "\t" $0 q; c++ }'
done >"$plan"
for k in blame log-path log-follow; do
  [ "$(grep -c "^$k	" "$plan")" -eq "$HISTORY_PAGES" ] || bench_die "fewer than $HISTORY_PAGES $k pages in $lists/$k.txt"
done
graph=none
if [ -e "$BASE_REPO/objects/info/commit-graph" ] || [ -e "$BASE_REPO/objects/info/commit-graphs" ]; then
  graph=plain
  [ "${COMMIT_GRAPH:-0}" = 1 ] && graph=changed-paths
fi
bench_meta graph "$graph"
bench_meta log_counts "$(grep -E '^enable-log-(file|line)count=1' "$CGITRC" | tr '\n' ' ')"
bench_meta pages "$HISTORY_PAGES"
bench_meta timeout "$HISTORY_TIMEOUT"
# git's log command lists as many commits as a path log page shows rows (cgit's default 50).
log_rows=$(sed -n 's/^max-commit-count=\([0-9]*\)$/\1/p' "$CGITRC" | tail -n 1)
log_rows=${log_rows:-50}
bench_meta log_rows "$log_rows"
# Untimed: every repository opened once by shellac (its ref index), with a page no plan line asks for.
while IFS= read -r r; do
  curl -sS -o /dev/null --max-time 60 "http://127.0.0.1:$SHELLAC_PORT/$r/log/" || bench_die "shellac: GET /$r/log/ failed"
done < <(sed -n 's/^repo\.url=//p' "$CGITRC")
quiet_wait || true
bench_log "history: $(grep -c . "$plan") pages, one at a time, each by git (no graph), git, cgit and shellac"
: >"$BENCH_TSV"
bench_cpu_begin history
python3 "$BENCH_DIR/wrk/history.py" --plan "$plan" --repo "$BASE_REPO" --port "shellac=$SHELLAC_PORT" \
  --port "cgit=$CGIT_PORT" --admin "$SHELLAC_ADMIN_PORT" --rows "$log_rows" --timeout "$HISTORY_TIMEOUT" \
  --samples "$RAW/history-samples.tsv" >"$RAW/history.out" || bench_die "history.py failed"
bench_cpu_end history
# one row, so that the run-health line of the report says whether others disturbed the run
printf 'history\t1\t-\t-\t-\t-\t-\t%s\t-\t-\t-\t-\t%s\n' "$(grep -c . "$plan")" "$BENCH_CPU" >>"$BENCH_TSV"
bench_alive "$SHELLAC_PID" || SHELLAC_DIED="shellac (pid $SHELLAC_PID) exited during the run"
[ -z "$SHELLAC_DIED" ] && bench_stop "$SHELLAC_PID" 35
bench_stop "$CGIT_PID" 15
bench_report
[ -z "$SHELLAC_DIED" ]
