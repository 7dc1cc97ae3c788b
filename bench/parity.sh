#!/usr/bin/env bash
# parity: gitfrag's pages against Debian's cgit 1.2.3 on random non-merge commits of a real
# repository. For each commit: the commit, diff and log pages, the tree at the commit, and of a file
# the commit added or changed its folder, its file view and its history (`log/FILE`) (visible text:
# tags stripped, entities decoded, whitespace collapsed, the generator footer left out); the patch,
# rawdiff and the file's plain bytes (bytes, apart from the signature line naming the program).
# The log's Files and Lines columns (enable-log-filecount/-linecount) are on for both.
# Once: the summary, refs, atom and stats pages and five random tags. Rendered by gitfrag
# in-process and by cgit run as a CGI with the same settings (max-stats=month) (tests/
# gitfrag_parity_test.cc, SampleOfRepository).
#
# Usage: bench/parity.sh [--from REPO] [--n N] [--seed S] [--report NAME]
#   --from    the repository (default /work/corpus/git.git; read only)
#   --n       commits sampled (default 20), --seed the sample's seed (default 1)
#   --report  writes bench/results/NAME.md (default parity-git)
# Builds tests/gitfrag_parity_test in ./build when missing. Exit status: 0 when every page of
# every sampled commit is equal.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

from=/work/corpus/git.git n=20 seed=1 report=parity-git
cmdline=$(bench_cmdline "$@")
while [ $# -gt 0 ]; do
  case "$1" in
    --from) from=$2; shift 2 ;;
    --n) n=$2; shift 2 ;;
    --seed) seed=$2; shift 2 ;;
    --report) report=$2; shift 2 ;;
    *) echo "parity.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
[ -d "$from" ] || { echo "parity.sh: no repository at $from" >&2; exit 2; }
[ -x /usr/lib/cgit/cgit.cgi ] || { echo "parity.sh: cgit is not installed (apt-get install cgit)" >&2; exit 2; }

test_bin="$BENCH_REPO/build/tests/gitfrag_parity_test"
[ -f "$BENCH_REPO/build/build.ninja" ] || meson setup "$BENCH_REPO/build" "$BENCH_REPO" >/dev/null
ninja -C "$BENCH_REPO/build" tests/gitfrag_parity_test >/dev/null

summary=$(mktemp) log=$(mktemp)
trap 'rm -f "$summary" "$log"' EXIT
start=$(date -u '+%Y-%m-%d %H:%M:%S UTC') t0=$(date +%s)
status=0
SHELLAC_PARITY_REPO=$from SHELLAC_PARITY_N=$n SHELLAC_PARITY_SEED=$seed SHELLAC_PARITY_OUT=$summary \
  "$test_bin" --gtest_filter='GitfragParity.SampleOfRepository' >"$log" 2>&1 || status=$?
[ -s "$summary" ] || { cat "$log" >&2; exit 1; }
secs=$(( $(date +%s) - t0 ))

objects=$(git -C "$from" count-objects -v | awk '/^in-pack:/ { print $2 }')
out="$BENCH_DIR/results/$report.md"
{
  echo "# parity: gitfrag's pages vs cgit 1.2.3 on $(basename "$from")"
  echo
  echo "Random non-merge commits of a real repository; for each, the commit, diff and log pages, the"
  echo "tree at the commit, and for a file the commit added or changed: its folder, its file view and its"
  echo "history (visible text), and the patch, rawdiff and the file's plain bytes (bytes, signature line"
  echo "aside); once: the summary, refs, atom and stats pages and five random tags. Rendered by shellac's"
  echo "gitfrag in-process and by Debian's cgit run as a CGI with the same settings (max-stats=month)."
  echo
  echo "- command: \`$cmdline\`"
  echo "- date: $start (run took ${secs} s)"
  echo "- machine: $(bench_machine_line); load average at start: $(cut -d' ' -f1-3 /proc/loadavg) (shared)"
  echo "- versions: cgit (Debian package $(dpkg-query -W -f='${Version}' cgit 2>/dev/null)); $(git --version); libgit2 (Debian package $(dpkg-query -W -f='${Version}' libgit2-1.5 2>/dev/null || echo '?')); shellac built from git $(bench_git_rev)"
  echo "- repository: $from, $objects packed objects (git abbreviates to $(git -C "$from" rev-parse --short HEAD | tr -d '\n' | wc -c) hex digits), HEAD $(git -C "$from" rev-parse --short HEAD)"
  echo
  echo "## Result"
  echo
  cat "$summary"
} >"$out"
echo "parity: $(head -n1 "$summary") -> $out"
exit "$status"
