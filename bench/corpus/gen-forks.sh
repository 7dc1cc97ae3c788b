#!/usr/bin/env bash
# bench/corpus/gen-forks.sh: a git.kernel.org-like fork farm around a base repository.
#
#   gen-forks.sh --base REPO --out DIR [--forks F] [--seed S] [--force]
#
# Writes DIR/forks/fork-NNNN.git (F bare repositories that borrow every object from REPO through
# objects/info/alternates: no object is copied) and DIR/cgitrc (a cgit configuration listing REPO
# and every fork). Each fork has its own few branches, pointing at commits of REPO drawn with the
# seeded PRNG, and a copy of REPO's tags in its packed-refs (peeled lines included). The forks are
# written as plain files by py/forks.py; git runs a fixed number of times, not once per fork or tag.
# shellcheck disable=SC2015  # "A && B || die" chains of tests are meant
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
export PYTHONDONTWRITEBYTECODE=1   # no __pycache__ in the source tree

usage() {
	sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//'
	cat <<EOT

Options:
  --base REPO   the base repository (bare, or a work tree: its git dir is used); never modified
  --out DIR     where forks/ and cgitrc go (DIR/forks must not exist, see --force)
  --forks F     number of forks (default 100)
  --seed S      PRNG seed (default 1)
  --force       remove DIR/forks and DIR/cgitrc first
EOT
	exit "${1:-2}"
}

die() { echo "gen-forks.sh: $*" >&2; exit 1; }

BASE="" OUT="" FORKS=100 SEED=1 FORCE=0
while [ $# -gt 0 ]; do
	case "$1" in
	--base) BASE=${2:?}; shift 2 ;;
	--out) OUT=${2:?}; shift 2 ;;
	--forks) FORKS=${2:?}; shift 2 ;;
	--seed) SEED=${2:?}; shift 2 ;;
	--force) FORCE=1; shift ;;
	-h|--help) usage 0 ;;
	*) echo "gen-forks.sh: unknown argument: $1" >&2; usage ;;
	esac
done
[ -n "$BASE" ] && [ -n "$OUT" ] || usage
[[ $FORKS =~ ^[0-9]+$ ]] && [ "$FORKS" -ge 1 ] && [ "$FORKS" -le 9999 ] || die "--forks wants 1..9999"
[[ $SEED =~ ^[0-9]+$ ]] || die "--seed wants a non-negative integer"
git -C "$BASE" rev-parse --git-dir >/dev/null 2>&1 || die "$BASE is not a git repository"
GD=$(git -C "$BASE" rev-parse --absolute-git-dir)
GD=$(realpath "$GD")

mkdir -p "$OUT"
OUT=$(realpath "$OUT")
case "$OUT/" in "$GD"/*) die "--out must not be inside the base repository" ;; esac
if [ -e "$OUT/forks" ] || [ -e "$OUT/cgitrc" ]; then
	[ "$FORCE" = 1 ] || die "$OUT/forks or $OUT/cgitrc exists (use --force to replace them)"
	# --force only ever removes what this script made
	if [ -e "$OUT/forks" ]; then
		[ -d "$OUT/forks" ] && [ -z "$(find "$OUT/forks" -mindepth 1 -maxdepth 1 ! -name 'fork-[0-9][0-9][0-9][0-9].git')" ] ||
			die "$OUT/forks holds something else than fork-NNNN.git; remove it by hand"
	fi
	if [ -e "$OUT/cgitrc" ]; then
		grep -q '^# cgitrc for the shellac benchmark fork farm' "$OUT/cgitrc" ||
			die "$OUT/cgitrc was not written by gen-forks.sh; remove it by hand"
	fi
	rm -rf -- "$OUT/forks" "$OUT/cgitrc"
fi

t0=$(date +%s%N)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# The base's HEAD and its commits (sorted, so the draw does not depend on traversal order).
HEADREF=$(git -C "$GD" symbolic-ref -q HEAD || echo refs/heads/main)
HEADSHA=$(git -C "$GD" rev-parse --verify "HEAD^{commit}") || die "$BASE has no HEAD commit"
git -C "$GD" rev-list --all | LC_ALL=C sort >"$tmp/commits"

# The base's tags in packed-refs form. Copied from its packed-refs when every tag is packed and the
# file has peeled lines; otherwise one for-each-ref call writes the same lines.
loose_tags=0
[ -d "$GD/refs/tags" ] && loose_tags=$(find "$GD/refs/tags" -type f | wc -l)
if [ -f "$GD/packed-refs" ] && [ "$loose_tags" = 0 ] && head -1 "$GD/packed-refs" | grep -q ' fully-peeled'; then
	LC_ALL=C awk '
		/^#/ { next }
		/^\^/ { if (keep) print; next }
		{ keep = ($2 ~ /^refs\/tags\//); if (keep) print }' "$GD/packed-refs" >"$tmp/tags"
	tagsrc="copied from $GD/packed-refs"
else
	# %(*objectname) peels one level only (a tag on a tag would get a tag): peel with ^{} instead,
	# all annotated tags in one cat-file batch
	git -C "$GD" for-each-ref --format='%(objectname) %(refname) %(objecttype)' refs/tags >"$tmp/fer"
	awk '$3 == "tag" { print $1 "^{}" }' "$tmp/fer" |
		git -C "$GD" cat-file --batch-check='%(objectname)' >"$tmp/peeled"
	awk 'NR == FNR { p[FNR] = $1; next }
		{ print $1 " " $2; if ($3 == "tag") print "^" p[++k] }' "$tmp/peeled" "$tmp/fer" >"$tmp/tags"
	tagsrc="from git for-each-ref (the base has loose tags or no fully-peeled packed-refs)"
fi
# packed-refs must be sorted by refname (bytewise); check rather than trust
grep -v '^\^' "$tmp/tags" | cut -d' ' -f2 | LC_ALL=C sort -c 2>/dev/null ||
	die "the base's tag lines are not sorted by refname"

base_url=$(basename "$GD")
[ "$base_url" = .git ] && base_url="$(basename "$(dirname "$GD")").git"

python3 "$HERE/py/forks.py" --base "$GD" --base-url "$base_url" --out "$OUT" --forks "$FORKS" --seed "$SEED" \
	--commits "$tmp/commits" --tags "$tmp/tags" --head "$HEADREF" --head-commit "$HEADSHA" 2>"$tmp/stats"
t1=$(date +%s%N)

ntags=$(grep -vc '^\^' "$tmp/tags" || true)
npeeled=$(grep -c '^\^' "$tmp/tags" || true)
echo "base:         $GD (url $base_url, HEAD $HEADREF)"
echo "forks:        $FORKS in $OUT/forks ($(tr '\n' ' ' <"$tmp/stats"))"
echo "tags:         $ntags per fork, $npeeled peeled, $tagsrc"
echo "cgitrc:       $OUT/cgitrc ($(grep -c '^repo.url=' "$OUT/cgitrc") repositories)"
echo "size:         $(du -sh "$OUT/forks" | cut -f1) for the forks ($(find "$OUT/forks" -path '*/objects/*' -type f ! -name alternates | wc -l) object files)"
awk -v a="$t0" -v b="$t1" 'BEGIN { printf "time:         %.1f s\n", (b - a) / 1e9 }'
