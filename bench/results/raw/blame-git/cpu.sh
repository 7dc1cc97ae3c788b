#!/usr/bin/env bash
# CPU seconds (user + sys, /usr/bin/time) of one run each: git blame --porcelain (no commit-graph)
# and shellac's full blame (blame_bench --ignore-memo), back to back per file.
# Usage: cpu.sh REPO BLAME_BENCH FILE...
set -u
repo=$1 bench=$2
shift 2
cpu() { /usr/bin/time -f '%U %S' "$@" 2>&1 >/dev/null | tail -1 | awk '{ printf "%.2f", $1 + $2 }'; }
printf 'file\tgit_cpu\tshellac_cpu\n'
for f in "$@"; do
  printf '%s\t%s\t%s\n' "$f" "$(cpu git -C "$repo" blame --porcelain master -- "$f")" \
    "$(cpu "$bench" --ignore-memo "$repo" "$f" master)"
done
