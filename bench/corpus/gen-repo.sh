#!/usr/bin/env bash
# bench/corpus/gen-repo.sh: a deterministic synthetic forge repository (bare), or stats of a real one.
#
#   gen-repo.sh --out DIR [--commits N] [--tags T] [--branches B] [--seed S] [--force]
#   gen-repo.sh --from PATH            # use an existing repository: check it and print its stats
#
# The history is written by py/stream.py as a git fast-import stream (seeded PRNG, explicit dates):
# the same arguments give the same objects, the same SHAs and the same packed-refs. See README.md.
# shellcheck disable=SC2015  # "A && B || die" chains of tests are meant
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
export PYTHONDONTWRITEBYTECODE=1   # no __pycache__ in the source tree

usage() {
	sed -n '2,8p' "$0" | sed 's/^# \{0,1\}//'
	cat <<EOF

Options:
  --out DIR        where to create the bare repository (must not exist or be empty; see --force)
  --commits N      number of commits, merges included (default 20000, minimum 60)
  --tags T         annotated release tags (default 1000); a few lightweight tags and two tags on
                   tags come on top
  --branches B     branches, main included (default 20)
  --seed S         PRNG seed (default 1)
  --force          remove DIR first if it exists
  --from PATH      do not generate: verify PATH is a git repository and print its stats
  --threads N      pack-objects threads for the final repack (default 1: the pack file itself is
                   then byte-identical between runs; 0 = git default, faster, same objects)
EOF
	exit "${1:-2}"
}

die() { echo "gen-repo.sh: $*" >&2; exit 1; }

OUT="" COMMITS=20000 TAGS=1000 BRANCHES=20 SEED=1 FROM="" FORCE=0 THREADS=1
while [ $# -gt 0 ]; do
	case "$1" in
	--out) OUT=${2:?}; shift 2 ;;
	--commits) COMMITS=${2:?}; shift 2 ;;
	--tags) TAGS=${2:?}; shift 2 ;;
	--branches) BRANCHES=${2:?}; shift 2 ;;
	--seed) SEED=${2:?}; shift 2 ;;
	--from) FROM=${2:?}; shift 2 ;;
	--threads) THREADS=${2:?}; shift 2 ;;
	--force) FORCE=1; shift ;;
	-h|--help) usage 0 ;;
	*) echo "gen-repo.sh: unknown argument: $1" >&2; usage ;;
	esac
done
for v in COMMITS TAGS BRANCHES SEED; do
	[[ ${!v} =~ ^[0-9]+$ ]] || die "--${v,,} wants a non-negative integer, got '${!v}'"
done
[ -z "$THREADS" ] || [[ $THREADS =~ ^[0-9]+$ ]] || die "--threads wants an integer"

human() { numfmt --to=iec-i --suffix=B "$1" 2>/dev/null || echo "$1 bytes"; }

# Stats of any repository (ours or a real one), on stdout.
print_stats() {
	local repo=$1 gd
	gd=$(git -C "$repo" rev-parse --absolute-git-dir)
	local commits merges heads tags annotated peeled packs size_pack size_all
	commits=$(git -C "$gd" rev-list --all --count)
	merges=$(git -C "$gd" rev-list --all --merges --count)
	heads=$(git -C "$gd" for-each-ref --format=x refs/heads | wc -l)
	tags=$(git -C "$gd" for-each-ref --format=x refs/tags | wc -l)
	annotated=$(git -C "$gd" for-each-ref --format='%(objecttype)' refs/tags | grep -c '^tag$' || true)
	peeled=0
	[ -f "$gd/packed-refs" ] && peeled=$(grep -c '^\^' "$gd/packed-refs" || true)
	packs=$(find "$gd/objects/pack" -name '*.pack' 2>/dev/null | wc -l)
	size_pack=$(find "$gd/objects" -type f -printf '%s\n' 2>/dev/null | awk '{s+=$1} END {print s+0}')
	size_all=$(du -sb "$gd" | cut -f1)
	echo "repository:   $gd"
	echo "HEAD:         $(git -C "$gd" symbolic-ref -q HEAD || echo detached) $(git -C "$gd" rev-parse -q --verify HEAD || echo none)"
	echo "commits:      $commits ($merges merges)"
	echo "branches:     $heads"
	echo "tags:         $tags ($annotated annotated, $peeled peeled lines in packed-refs)"
	echo "objects:      $(git -C "$gd" count-objects -v | awk '/^count:/ {l=$2} /^in-pack:/ {p=$2} END {print p+0 " packed, " l+0 " loose"}') in $packs pack(s)"
	echo "size:         $(human "$size_all") on disk ($(human "$size_pack") of objects)"
}

if [ -n "$FROM" ]; then
	[ -z "$OUT" ] || die "--from and --out exclude each other"
	git -C "$FROM" rev-parse --git-dir >/dev/null 2>&1 || die "$FROM is not a git repository"
	gd=$(git -C "$FROM" rev-parse --absolute-git-dir)
	[ "$(git -C "$gd" rev-parse --is-bare-repository)" = true ] ||
		echo "note: $FROM is not bare; cgit wants repo.path=$gd (gen-forks.sh --base accepts either)" >&2
	git -C "$gd" rev-parse -q --verify HEAD >/dev/null || die "$FROM has no HEAD commit"
	[ -f "$gd/packed-refs" ] && grep -q '^\^' "$gd/packed-refs" ||
		echo "note: no peeled lines in $gd/packed-refs; 'git -C $gd pack-refs --all' adds them" >&2
	print_stats "$gd"
	exit 0
fi

[ -n "$OUT" ] || usage
[ "$COMMITS" -ge 60 ] || die "--commits must be >= 60"
[ "$BRANCHES" -ge 1 ] || die "--branches must be >= 1"
if [ -e "$OUT" ] && [ -n "$(ls -A "$OUT" 2>/dev/null)" ]; then
	[ "$FORCE" = 1 ] || die "$OUT exists and is not empty (use --force to replace it)"
	# --force only ever removes a repository this script made
	[ "$(git -C "$OUT" rev-parse --absolute-git-dir 2>/dev/null)" = "$(realpath "$OUT")" ] &&
		grep -q '^shellac benchmark corpus' "$OUT/description" 2>/dev/null ||
		die "$OUT is not a corpus repository made by gen-repo.sh; remove it by hand"
	rm -rf -- "$OUT"
fi
command -v python3 >/dev/null || die "python3 is needed"

t0=$(date +%s%N)
git init -q --bare --template= -b main "$OUT"
OUT=$(cd "$OUT" && pwd)
git -C "$OUT" config core.logAllRefUpdates false
git -C "$OUT" config gc.auto 0
printf 'shellac benchmark corpus: %s commits, %s tags, seed %s\n' "$COMMITS" "$TAGS" "$SEED" >"$OUT/description"

stats=$(mktemp)
trap 'rm -f "$stats"' EXIT
# The intermediate pack is thrown away by the repack below: no deltas, no compression.
python3 "$HERE/py/stream.py" --commits "$COMMITS" --tags "$TAGS" --branches "$BRANCHES" --seed "$SEED" 2>"$stats" |
	git -C "$OUT" -c core.compression=0 -c pack.compression=0 fast-import --quiet --depth=0 --active-branches=64 ||
	{ cat "$stats" >&2; die "fast-import failed"; }
t1=$(date +%s%N)

git -C "$OUT" pack-refs --all
# -F is -f (recompute every delta) plus recompress every object: the fast-import pack is stored
# uncompressed, and -f alone would copy its non-delta objects (all commits) as they are.
git -C "$OUT" -c pack.threads="$THREADS" repack -a -d -F -q
git -C "$OUT" prune --expire=now
git -C "$OUT" commit-graph write --reachable --no-progress
t2=$(date +%s%N)

print_stats "$OUT"
echo "generator:    $(tr '\n' ' ' <"$stats")"
awk -v a="$t0" -v b="$t1" -v c="$t2" 'BEGIN {
	printf "time:         %.1f s (history %.1f s, pack-refs + repack + commit-graph %.1f s)\n", (c - a) / 1e9, (b - a) / 1e9, (c - b) / 1e9 }'
