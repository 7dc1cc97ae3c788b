#!/usr/bin/env bash
# bench/scenarios/all.sh: every scenario, one after the other, each in its own process (bench/run.sh
# SCENARIO with the same options), with one shellac build, one corpus and one --wait-quiet budget;
# raw results -> OUT/raw/all/ (status.tsv: scenario, exit status, seconds), report OUT/all.md (each
# scenario's exit status, time and summary). Run through bench/run.sh all.
set -euo pipefail
source "$(dirname "$0")/../lib.sh"
ALL=(crawler cold hot fork-spread burst passthrough cached esi render tls flood)

begin all
# one build and one corpus for every scenario
if [ -z "${SHELLAC_BIN:-}" ]; then
  SHELLAC_BIN=$(bench_build_shellac)
  SHELLAC_GIT_REV="$(bench_git_rev "$BENCH_REPO") (built $(date -u '+%H:%M:%S UTC') for every scenario of this run)"
  export SHELLAC_BIN SHELLAC_GIT_REV
fi
peers_need
corpus_prepare
qa=()
if [ "$WAIT_QUIET" -gt 0 ]; then
  export BENCH_QUIET_FILE=$BENCH_TMP/quiet-budget
  echo "$WAIT_QUIET" >"$BENCH_QUIET_FILE"
  qa=(--wait-quiet "$WAIT_QUIET")
  bench_meta wait_quiet "$WAIT_QUIET"
fi
eval "pass=($BENCH_PASS_ARGS)"
bad=0
for s in "${ALL[@]}"; do
  ts=$(date +%s)
  bench_log "=== $s"
  "$BENCH_DIR/run.sh" "$s" "${pass[@]}" "${qa[@]}" && rc=0 || rc=$?
  [ "$rc" = 0 ] || bad=1
  printf '%s\t%s\t%s\n' "$s" "$rc" "$(($(date +%s) - ts))" >>"$RAW/status.tsv"
done
[ "$WAIT_QUIET" -gt 0 ] && bench_meta wait_quiet_left "$(cat "$BENCH_QUIET_FILE")"
rm -f "$BENCH_TSV"
bench_report
exit $bad
