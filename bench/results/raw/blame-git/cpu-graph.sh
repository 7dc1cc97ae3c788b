#!/usr/bin/env bash
# CPU seconds (user + sys, /usr/bin/time) of one run each, back to back per file: git blame
# --porcelain and shellac's full blame (blame_bench --ignore-memo), each on the repository without
# a commit-graph (PLAIN) and on a mirror with `git commit-graph write --reachable --changed-paths`
# (GRAPH).
# Usage: cpu-graph.sh PLAIN GRAPH BLAME_BENCH FILE...
set -u
plain=$1 graph=$2 bench=$3
shift 3
cpu() { /usr/bin/time -f '%U %S' "$@" 2>&1 >/dev/null | tail -1 | awk '{ printf "%.2f", $1 + $2 }'; }
printf 'file\tgit_cpu\tshellac_cpu\tgit_graph_cpu\tshellac_graph_cpu\n'
for f in "$@"; do
  printf '%s\t%s\t%s\t%s\t%s\n' "$f" "$(cpu git -C "$plain" blame --porcelain master -- "$f")" \
    "$(cpu "$bench" --ignore-memo "$plain" "$f" master)" \
    "$(cpu git -C "$graph" blame --porcelain master -- "$f")" \
    "$(cpu "$bench" --ignore-memo "$graph" "$f" master)"
done
