#!/usr/bin/env bash
# bench/ab.sh: two shellac binaries through the same scenarios, back to back on the same machine
# (an A/B: did a change make a figure better or worse, apart from what the machine did that day).
#
#   bench/ab.sh OLD-BIN NEW-BIN OUT-DIR SCENARIO... [-- RUN.SH-OPTIONS...]
#
# For each scenario, in the order given: NEW, then OLD, each `bench/run.sh SCENARIO --out
# OUT-DIR/SCENARIO-new|old --note "A/B: ..."` under the bench lock, so only one measures at a time.
# Each run writes its own report and raw results there; compare the peer ratios of the two reports
# (both measured against the same peers in the same minutes). Example, on an idle machine:
#   bench/ab.sh /tmp/old/shellac build-release/proxy/shellac /tmp/ab crawler esi cached -- --wait-quiet 300
set -euo pipefail
[ $# -ge 4 ] || { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 2; }
old=$(realpath "$1") new=$(realpath "$2") out=$3
shift 3
scenarios=()
while [ $# -gt 0 ] && [ "$1" != -- ]; do scenarios+=("$1"); shift; done
[ "${1:-}" = -- ] && shift
[ -x "$old" ] && [ -x "$new" ] || { echo "ab.sh: both binaries must be executable" >&2; exit 2; }
mkdir -p "$out"
here=$(cd "$(dirname "$0")" && pwd)
for s in "${scenarios[@]}"; do
  for v in new old; do
    bin=$new
    [ "$v" = old ] && bin=$old
    echo "[$(date -u +%H:%M:%S)] $s: $v binary ($bin)" >&2
    SHELLAC_BIN=$bin flock /tmp/shellac-bench.lock "$here/run.sh" "$s" --out "$out/$s-$v" \
      --note "A/B: the $v binary ($bin), run back to back with the other" "$@" >"$out/$s-$v.log" 2>&1 ||
      echo "ab.sh: $s ($v) failed: see $out/$s-$v.log" >&2
  done
done
