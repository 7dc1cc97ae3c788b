#!/usr/bin/env bash
# Runs each libFuzzer target built in BUILD_DIR for SECONDS on a copy of its seed corpus
# (fuzz/corpus/NAME/ is never written to). Fails if any target finds a crash, a leak, a timeout or
# a broken invariant; the input that did it is kept in BUILD_DIR/fuzz/findings/.
#   fuzz/run.sh BUILD_DIR SECONDS [NAME...]    (default: every target in fuzz/corpus/)
# FUZZ_SEED (default 1) fixes libFuzzer's random seed, so a run is reproducible and CI does not fail
# one day in many on a finding that was always there; FUZZ_SEED=0 lets libFuzzer pick one (longer
# local runs: a new seed explores new inputs).
set -uo pipefail
cd "$(dirname "$0")/.."
build=${1:?usage: fuzz/run.sh BUILD_DIR SECONDS [NAME...]}
seconds=${2:?usage: fuzz/run.sh BUILD_DIR SECONDS [NAME...]}
shift 2
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  for d in fuzz/corpus/*/; do targets+=("$(basename "$d")"); done
fi
findings="$build/fuzz/findings"
mkdir -p "$findings"
work=$(mktemp -d /tmp/shellac-fuzz-XXXXXX)
trap 'rm -rf "$work"' EXIT
failed=()
for name in "${targets[@]}"; do
  binary="$build/fuzz/fuzz_$name"
  if [ ! -x "$binary" ] || [ ! -d "fuzz/corpus/$name" ]; then
    echo "fuzz: $name: no target $binary or no seeds fuzz/corpus/$name" >&2
    failed+=("$name")
    continue
  fi
  mkdir -p "$work/$name"
  cp fuzz/corpus/"$name"/* "$work/$name"/
  log="$findings/$name.log"
  # -timeout: one input taking 10 s is a hang; -rss_limit_mb: a runaway allocation is a finding.
  "$binary" -seed="${FUZZ_SEED:-1}" -max_total_time="$seconds" -max_len=4096 -timeout=10 -rss_limit_mb=2048 \
    -print_final_stats=1 -artifact_prefix="$findings/$name-" "$work/$name" >"$log" 2>&1
  rc=$?
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
  if [ $rc -eq 0 ]; then
    echo "fuzz: $name: ok, ${runs:-?} inputs in ${seconds}s, corpus $(ls "$work/$name" | wc -l) files"
  else
    failed+=("$name")
    echo "fuzz: $name: FAILED (exit $rc); log $log:"
    grep -E 'ERROR|invariant broken|runtime error|SUMMARY|Test unit written' "$log" | head -20
  fi
done
if [ ${#failed[@]} -gt 0 ]; then
  echo "fuzz: failed: ${failed[*]} (reproduce: $build/fuzz/fuzz_NAME FILE; see fuzz/README.md)"
  exit 1
fi
