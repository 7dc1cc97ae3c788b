#!/usr/bin/env bash
# Blame on git/git, one request at a time, per file:
#   git        git blame --porcelain master -- FILE          (repository without a commit-graph)
#   git_graph  the same on a mirror with `git commit-graph write --reachable --changed-paths`
#   cgit       cgit 1.2.3's blame page (the CGI run directly, enable-blame=1), no commit-graph
#   full       shellac's blame (gitfrag::Blame through tests/blame_bench, nothing remembered)
#   incr       shellac's blame at master after the blame at the previous commit that touched
#              FILE (git log -2 -- FILE), in one process: the second blame's time (it reaches the
#              first one's remembered blame, as a crawler's next page would)
# Median of RUNS (3) runs each, seconds; the columns of one file are measured back to back.
# Usage: measure.sh PLAIN_REPO GRAPH_REPO BLAME_BENCH FILE...
set -u
plain=$1 graph=$2 bench=$3
shift 3
runs=${RUNS:-3}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
printf 'virtual-root=/\nenable-blame=1\nrepo.url=repo\nrepo.path=%s\n' "$plain" > "$work/cgitrc"
med() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
t() { local s e; s=$(date +%s.%N); "$@" > /dev/null 2>&1; e=$(date +%s.%N); echo "$e - $s" | bc; }
# blame_bench prints "REV PATH SECONDS s, ..." per revision: the last one's seconds.
last() { "$@" | awk '/ s, / { s = $3 } END { print s }'; }
printf 'file\tlines\tgit\tgit_graph\tcgit\tfull\tincr\tprev_commit\n'
for f in "$@"; do
  lines=$(git -C "$plain" show "master:$f" | wc -l)
  prev=$(git -C "$plain" log -2 --format=%H master -- "$f" | tail -1)
  a=$(for i in $(seq "$runs"); do t git -C "$plain" blame --porcelain master -- "$f"; done | med)
  b=$(for i in $(seq "$runs"); do t git -C "$graph" blame --porcelain master -- "$f"; done | med)
  c=$(for i in $(seq "$runs"); do t env -i CGIT_CONFIG="$work/cgitrc" REQUEST_METHOD=GET \
        PATH_INFO="/repo/blame/$f" QUERY_STRING= SCRIPT_NAME=/ /usr/lib/cgit/cgit.cgi; done | med)
  d=$(for i in $(seq "$runs"); do last "$bench" --ignore-memo "$plain" "$f" master; done | med)
  e=$(for i in $(seq "$runs"); do last "$bench" "$plain" "$f" "$prev" master; done | med)
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$f" "$lines" "$a" "$b" "$c" "$d" "$e" "${prev:0:12}"
done
