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
# Prints one line: BIN, Ir of both runs, Ir per page; keeps the callgrind files in $OUT (a temp
# folder unless given).
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
  local pages=$1 i=0 id code
  while read -r id; do
    [ "$i" -lt "$pages" ] || break
    i=$((i + 1))
    code=$(curl -sS -o "$out/page.html" -w '%{http_code}' --max-time 600 \
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
echo "$bin page=$page warmup=$warmup n=$n base_ir=$base all_ir=$all per_page=$(((all - base) / n)) out=$out"
