#!/usr/bin/env bash
# bench/scenarios/cold.sh: a crawler's first pass: every request the commit page of a commit no
# target saw (shellac's store starts empty), cgit direct vs shellac rendering vs Varnish -> cgit;
# shellac's render time per level (its /metrics) and git's own diff work on the same commits (the
# floor). Run through bench/run.sh cold [--report NAME]; raw results -> OUT/raw/NAME/.
set -euo pipefail
source "$(dirname "$0")/../lib.sh"
SHELLAC_RENDER=1

forge_after_sweep() {  # git's floor: git log -p --stat --minimal over the first commits of the measured list
  local n t0 t1
  n=$((NEXT < 2000 ? NEXT : 2000))
  [ "$n" -ge 100 ] || n=$(wc -l <"$BENCH_TMP/lists/cold.txt")
  [ "$n" -le 2000 ] || n=2000
  head -n "$n" "$BENCH_TMP/lists/cold.txt" | sed 's/.*id=//' >"$BENCH_TMP/floor-commits.txt"
  # one core, as a render thread: the same commits, the same diff work (cgit's minimal diff, stat)
  git -C "$BASE_REPO" log --no-walk --stdin -p --stat --minimal <"$BENCH_TMP/floor-commits.txt" >/dev/null  # page cache
  t0=$(date +%s%N)
  git -C "$BASE_REPO" log --no-walk --stdin -p --stat --minimal <"$BENCH_TMP/floor-commits.txt" >/dev/null
  t1=$(date +%s%N)
  bench_meta floor.commits "$n"
  bench_meta floor.us "$(((t1 - t0) / 1000))"
}

forge_run cold cold crawler.lua "${REPORT:-cold}"
