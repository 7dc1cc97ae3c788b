#!/usr/bin/env bash
# bench/corpus/sample-commits.sh: commit SHAs of a repository for benchmark URL lists.
#
#   sample-commits.sh --repo REPO [--count M] [--seed S] > FILE
#   sample-commits.sh --repo REPO --big [--lines L] > FILE
#
# Default: M commits (150) drawn with the seeded PRNG from `git rev-list --all`, sorted first so the
# draw depends only on the set of commits; one SHA a line, in draw order. Same repository + same
# seed -> same list.
# --big: every commit whose diff has more than L changed lines (default 10000), in `git log --all`
# order. Lines = added + deleted from `git log -M --numstat`: a rename counts its edits only, binary
# files do not count, a merge counts its diff against its first parent (what cgit shows).
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
export PYTHONDONTWRITEBYTECODE=1   # no __pycache__ in the source tree

usage() {
	sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'
	exit "${1:-2}"
}
die() { echo "sample-commits.sh: $*" >&2; exit 1; }

REPO="" COUNT=150 SEED=1 BIG=0 LINES=10000
while [ $# -gt 0 ]; do
	case "$1" in
	--repo) REPO=${2:?}; shift 2 ;;
	--count) COUNT=${2:?}; shift 2 ;;
	--seed) SEED=${2:?}; shift 2 ;;
	--big) BIG=1; shift ;;
	--lines) LINES=${2:?}; shift 2 ;;
	-h|--help) usage 0 ;;
	*) echo "sample-commits.sh: unknown argument: $1" >&2; usage ;;
	esac
done
[ -n "$REPO" ] || usage
for v in COUNT SEED LINES; do
	[[ ${!v} =~ ^[0-9]+$ ]] || die "--${v,,} wants a non-negative integer"
done
git -C "$REPO" rev-parse --git-dir >/dev/null 2>&1 || die "$REPO is not a git repository"

if [ "$BIG" = 1 ]; then
	git -C "$REPO" log --all -M --diff-merges=first-parent --numstat --format='%x01%H' |
		LC_ALL=C awk -F'\t' -v lim="$LINES" '
			/^\001/ { if (h != "" && n > lim) print h; h = substr($0, 2); n = 0; next }
			NF >= 3 && $1 ~ /^[0-9]+$/ { n += $1 + $2 }
			END { if (h != "" && n > lim) print h }'
	exit 0
fi

git -C "$REPO" rev-list --all | python3 "$HERE/py/sample.py" --count "$COUNT" --seed "$SEED"
