#!/usr/bin/env bash
# bench/corpus/test-corpus.sh: quick self-check of the corpus generators (small sizes, ~15 s).
#
#   test-corpus.sh [--keep]      # --keep: leave the temp dir (printed) for inspection
#
# Generates a 500-commit / 50-tag repository twice with the same seed and 5 forks, then asserts:
# determinism (same HEAD, same packed-refs, byte-identical repository, same commit sample),
# peeled lines in packed-refs, git fsck on base and forks, forks resolve their tags, forks have no
# objects of their own (alternates), detected renames, merges, >= 5 commits of 10k+ lines, non-UTF-8
# commit messages (with and without an encoding header), the non-ASCII and HTML-special authors,
# the branch count, and (when cgit is installed) that cgit renders the farm from the cgitrc.
# Exits non-zero on the first failed assertion.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
KEEP=0
[ "${1:-}" = --keep ] && KEEP=1

T=$(mktemp -d /tmp/shellac-corpus-test.XXXXXX)
cleanup() { if [ "$KEEP" = 1 ]; then echo "kept: $T"; else rm -rf "$T"; fi; }
trap cleanup EXIT

PASS=0
ok() { PASS=$((PASS + 1)); echo "ok $PASS - $*"; }
fail() { echo "FAIL - $*" >&2; KEEP=1; exit 1; }
check() { local what=$1; shift; if "$@"; then ok "$what"; else fail "$what"; fi; }

N=500 TAGS=50 BR=20 FORKS=5 SEED=7
echo "# generating into $T"
"$HERE/gen-repo.sh" --out "$T/a.git" --commits $N --tags $TAGS --branches $BR --seed $SEED >"$T/gen-a.log"
"$HERE/gen-repo.sh" --out "$T/b.git" --commits $N --tags $TAGS --branches $BR --seed $SEED >"$T/gen-b.log"
"$HERE/gen-repo.sh" --out "$T/c.git" --commits $N --tags $TAGS --branches $BR --seed $((SEED + 1)) >"$T/gen-c.log"
"$HERE/gen-forks.sh" --base "$T/a.git" --out "$T/farm" --forks $FORKS --seed $SEED >"$T/forks.log"
"$HERE/gen-forks.sh" --base "$T/b.git" --out "$T/farm-b" --forks $FORKS --seed $SEED >/dev/null
sed 's/^/# /' "$T/gen-a.log" "$T/forks.log"
A=$T/a.git

# --- determinism
check "same seed, same HEAD" [ "$(git -C "$A" rev-parse HEAD)" = "$(git -C "$T/b.git" rev-parse HEAD)" ]
check "same seed, same packed-refs" cmp -s "$A/packed-refs" "$T/b.git/packed-refs"
check "same seed, byte-identical repository" diff -r "$A" "$T/b.git"
check "other seed, other HEAD" [ "$(git -C "$A" rev-parse HEAD)" != "$(git -C "$T/c.git" rev-parse HEAD)" ]
check "same seed, same fork packed-refs" cmp -s "$T/farm/forks/fork-0003.git/packed-refs" "$T/farm-b/forks/fork-0003.git/packed-refs"
"$HERE/sample-commits.sh" --repo "$A" --seed 3 >"$T/s1"
"$HERE/sample-commits.sh" --repo "$T/b.git" --seed 3 >"$T/s2"
check "sample: same seed, same 150 commits" cmp -s "$T/s1" "$T/s2"
check "sample: 150 distinct commits" [ "$(sort -u "$T/s1" | wc -l)" = 150 ]
check "sample: all are commits" sh -c "sed 's/\$/^{commit}/' '$T/s1' | git -C '$A' cat-file --batch-check | grep -vc ' commit ' | grep -qx 0"

# --- shape of the base
commits=$(git -C "$A" rev-list --all --count)
check "$commits commits (want $N)" [ "$commits" = $N ]
heads=$(git -C "$A" for-each-ref --format=x refs/heads | wc -l)
check "$heads branches (want $BR)" [ "$heads" = $BR ]
annotated=$(git -C "$A" for-each-ref --format='%(objecttype)' refs/tags | grep -c '^tag$' || true)
check "$annotated annotated tags (want >= $TAGS)" [ "$annotated" -ge $TAGS ]
light=$(git -C "$A" for-each-ref --format='%(objecttype)' refs/tags | grep -c '^commit$' || true)
check "$light lightweight tags" [ "$light" -ge 1 ]
check "a tag on a tag" sh -c "git -C '$A' for-each-ref --format='%(*objecttype)' refs/tags | grep -qx tag"
check "packed-refs header says peeled fully-peeled sorted" grep -q '^# pack-refs with: peeled fully-peeled sorted' "$A/packed-refs"
peeled=$(grep -c '^\^' "$A/packed-refs" || true)
check "packed-refs: $peeled peeled lines = $annotated annotated tags" [ "$peeled" = "$annotated" ]
check "no loose refs" [ -z "$(find "$A/refs" -type f)" ]
check "one pack" [ "$(find "$A/objects/pack" -name '*.pack' | wc -l)" = 1 ]
check "git fsck (base)" git -C "$A" fsck --no-progress --strict
renames=$(git -C "$A" log --all -M --diff-filter=R --format=%H | wc -l)
check "$renames commits with renames git detects" [ "$renames" -ge 1 ]
merges=$(git -C "$A" rev-list --all --merges --count)
check "$merges merge commits" [ "$merges" -ge 1 ]
root=$(git -C "$A" rev-list --max-parents=0 HEAD)
"$HERE/sample-commits.sh" --repo "$A" --big >"$T/big"
big=$(grep -vcx "$root" "$T/big" || true)
check "$big commits of 10k+ changed lines besides the initial import (want >= 5)" [ "$big" -ge 5 ]
git -C "$A" rev-list --all | git -C "$A" cat-file --batch >"$T/all-commits"
check "non-UTF-8 commit messages, with and without an encoding header" python3 - "$T/all-commits" <<'PY'
import sys
data = open(sys.argv[1], "rb").read()
pos, with_hdr, without = 0, 0, 0
while pos < len(data):
    nl = data.index(b"\n", pos)
    sha, typ, size = data[pos:nl].split()
    body = data[nl + 1:nl + 1 + int(size)]
    pos = nl + 1 + int(size) + 1
    head, _, msg = body.partition(b"\n\n")
    try:
        msg.decode("utf-8")
    except UnicodeDecodeError:
        if b"\nencoding " in b"\n" + head:
            with_hdr += 1
        else:
            without += 1
print("#   non-UTF-8 messages: %d with an encoding header, %d without" % (with_hdr, without))
sys.exit(0 if with_hdr and without else 1)
PY
check "an author with a non-ASCII name" sh -c "git -C '$A' log --all --format=%an | grep -q 'Muñoz'"
check "an author with HTML special characters" sh -c "git -C '$A' log --all --format=%an | grep -q '&'"
check "a subject with <script>" sh -c "git -C '$A' log --all --format=%s | grep -q '<script>'"
check "binary files with NUL bytes" sh -c "git -C '$A' cat-file blob HEAD:firmware/dsp.bin | od -An -tx1 | grep -q ' 00'"
check "git sees them as binary" sh -c "git -C '$A' log --all --numstat --format= -- firmware assets | grep -q '^-'"
nfiles=$(git -C "$A" ls-tree -r HEAD | wc -l)
check "$nfiles files at HEAD" [ "$nfiles" -ge 300 ]
dates_ok=$(git -C "$A" log --first-parent --format=%ct main | awk 'NR > 1 && $1 >= prev { bad = 1 } { prev = $1 } END { print bad ? "no" : "yes" }')
check "committer dates increase along main" [ "$dates_ok" = yes ]

# --- the fork farm
ntags=$(git -C "$A" for-each-ref --format=x refs/tags | wc -l)
some_tags=$(git -C "$A" for-each-ref --format='%(refname)' refs/tags | awk 'NR % 7 == 1')
for f in "$T"/farm/forks/fork-*.git; do
	n=$(basename "$f")
	check "$n: git fsck" git -C "$f" fsck --no-progress --no-dangling
	check "$n: $ntags tags" [ "$(git -C "$f" for-each-ref --format=x refs/tags | wc -l)" = "$ntags" ]
	good=1
	for t in $some_tags; do
		[ "$(git -C "$f" rev-parse --verify -q "$t^{commit}")" = "$(git -C "$A" rev-parse --verify -q "$t^{commit}")" ] || good=0
	done
	check "$n: tags resolve to the base's commits" [ $good = 1 ]
	check "$n: show-ref -d matches packed peeled lines" [ "$(git -C "$f" show-ref --tags -d | wc -l)" = "$(grep -c 'refs/tags/\|^\^' "$f/packed-refs")" ]
	check "$n: no objects of its own" [ -z "$(find "$f/objects" -type f ! -path "$f/objects/info/alternates")" ]
	check "$n: alternates -> base" [ "$(cat "$f/objects/info/alternates")" = "$(realpath "$A")/objects" ]
	check "$n: HEAD resolves to a commit" git -C "$f" cat-file -e "HEAD^{commit}"
done
check "cgitrc lists the base and $FORKS forks" [ "$(grep -c '^repo.url=' "$T/farm/cgitrc")" = $((FORKS + 1)) ]
check "cgitrc: every repo.path exists" sh -c "grep '^repo.path=' '$T/farm/cgitrc' | cut -d= -f2- | while read -r p; do [ -d \"\$p\" ] || exit 1; done"

CGIT=/usr/lib/cgit/cgit.cgi
if [ -x "$CGIT" ]; then
	cg() { CGIT_CONFIG="$T/farm/cgitrc" GATEWAY_INTERFACE=CGI/1.1 REQUEST_METHOD=GET SCRIPT_NAME=/ PATH_INFO="$1" QUERY_STRING="${2:-}" "$CGIT"; }
	tag1=$(git -C "$A" for-each-ref --format='%(refname:short)' --count=1 'refs/tags/v*')
	check "cgit: index lists the forks" sh -c "$(declare -f cg); T='$T' CGIT='$CGIT'; cg / | grep -q 'forks/fork-0005.git'"
	check "cgit: a fork's refs page shows $tag1" sh -c "$(declare -f cg); T='$T' CGIT='$CGIT'; cg /forks/fork-0002.git/refs/ | grep -q '$tag1'"
	check "cgit: a fork renders a base commit" sh -c "$(declare -f cg); T='$T' CGIT='$CGIT'; cg /forks/fork-0002.git/commit/ 'id=$(head -1 "$T/s1")' | grep -q 'class=.diffstat'"
else
	echo "# cgit not installed ($CGIT): skipping the cgit rendering checks (apt-get install cgit)"
fi

echo "all $PASS checks passed"
