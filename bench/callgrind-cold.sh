#!/bin/bash
# Instructions (callgrind) per cold commit page: shellac under valgrind --tool=callgrind with one
# worker and one render thread, every page a commit it has not rendered before (frame + diff
# fragment, the fragment stored and never asked for again), whole process counted. Two runs of
# the same binary: the warm-up pages only (start, the repository opened, its ref index and
# abbreviation length), then the warm-up pages and N more; per page = the difference / N.
# Instruction counts do not depend on the machine's load, so this measures on a shared machine.
#
# Usage: [PAGE=commit|patch|rawdiff] bench/callgrind-cold.sh BIN CGITRC REPO_URL REPO_PATH N [WARMUP] [STEP]
#   the commits: every STEP-th (default 499) non-merge commit of REPO_PATH's HEAD, newest first;
#   the first WARMUP (default 5) are the warm-up pages, the next N the measured ones. PAGE: the
#   page kind asked for (default commit; patch and rawdiff are plain text, checked for a diff).
#   COMMITS=FILE: the commits (one id a line, WARMUP + N of them) instead of every STEP-th.
#   GZIP=1: every request sends Accept-Encoding (curl --compressed), as crawlers do, so the page
#   is a gzip stitched from the stored parts instead of inflated for an identity client.
#   FLOOR=1: also git's floor of issue 12 in instructions, `git log --no-walk --stdin -p --stat
#   --minimal` under callgrind over the same commits (the warm-up commits, then all of them; per
#   commit = the difference / N), and shellac's page / git's commit.
# Prints one line: BIN, Ir of both runs, Ir per page (and with FLOOR=1 git's, and the ratio); keeps
# the callgrind files in $OUT (a temp folder unless given).
set -euo pipefail
bin=$1 cgitrc=$2 url=$3 repo=$4 n=$5 warmup=${6:-5} step=${7:-499} page=${PAGE:-commit}
case $page in
  commit) want="class='diffstat-summary'" ;;
  patch | rawdiff) want="diff --git" ;;
  *) echo "PAGE: commit, patch or rawdiff" >&2; exit 2 ;;
esac
out=${OUT:-$(mktemp -d /tmp/shellac-callgrind.XXXXXX)}
mkdir -p "$out"
# (head ends the pipe early: git's SIGPIPE is not a failure; the count is checked below)
if [ -n "${COMMITS:-}" ]; then
  head -n $((warmup + n)) "$COMMITS" >"$out/commits.txt"
else
  git -C "$repo" rev-list --no-merges HEAD | awk -v s="$step" 'NR % s == 1' |
    head -n $((warmup + n)) >"$out/commits.txt" || true
fi
[ "$(wc -l <"$out/commits.txt")" -eq $((warmup + n)) ] || { echo "not enough commits" >&2; exit 1; }

# shellcheck source=bench/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

ask() {  # PAGES  the first PAGES commits' pages, each checked
  local pages=$1 i=0 id code enc=()
  [ "${GZIP:-0}" = 1 ] && enc=(--compressed)
  while read -r id; do
    [ "$i" -lt "$pages" ] || break
    i=$((i + 1))
    code=$(curl -sS "${enc[@]}" -o "$out/page.html" -w '%{http_code}' --max-time 600 \
      "http://127.0.0.1:$CALLGRIND_PORT/$url/$page/?id=$id")
    [ "$code" = 200 ] && grep -q "$want" "$out/page.html" ||
      { echo "$page $id: HTTP $code without \"$want\"" >&2; return 1; }
  done <"$out/commits.txt"
}

run() {  # PAGES  -> total Ir of a run asking for the first PAGES commits
  callgrind_shellac "$bin" "$out" "$1" "$cgitrc" "" ask "$1"
}

base=$(run "$warmup")
all=$(run $((warmup + n)))
line="$bin page=$page gzip=${GZIP:-0} warmup=$warmup n=$n base_ir=$base all_ir=$all per_page=$(((all - base) / n))"

git_run() {  # COMMITS -> git's total Ir over the first COMMITS commits
  head -n "$1" "$out/commits.txt" >"$out/git-$1.txt"
  valgrind --tool=callgrind --callgrind-out-file="$out/callgrind-git-$1.out" \
    git -C "$repo" log --no-walk --stdin -p --stat --minimal <"$out/git-$1.txt" >/dev/null \
    2>"$out/run-git-$1.log"
  awk '/^(summary|totals):/ {print $2; exit}' "$out/callgrind-git-$1.out"
}

if [ "${FLOOR:-0}" = 1 ]; then
  git_base=$(git_run "$warmup")
  git_all=$(git_run $((warmup + n)))
  line+=" git_base_ir=$git_base git_all_ir=$git_all git_per_commit=$(((git_all - git_base) / n))"
  line+=" page/git=$(awk -v a=$((all - base)) -v g=$((git_all - git_base)) 'BEGIN {printf "%.3f", a / g}')"
fi
echo "$line out=$out"
