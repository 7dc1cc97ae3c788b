#!/usr/bin/env bash
# One request at a time: git log -50 -- PATH, cgit's log/PATH page, on a repository without and
# with a commit-graph (changed-path Bloom filters). Median of 3 runs, seconds.
set -u
plain=$1 graph=$2
rc() { printf 'virtual-root=/\nrepo.url=repo\nrepo.path=%s\n' "$1" > /tmp/hist-bench/cgitrc-$3; }
rc "$plain" x plain; rc "$graph" x graph
med() { sort -n | sed -n 2p; }
t() { local s e; s=$(date +%s.%N); "$@" > /dev/null 2>&1; e=$(date +%s.%N); echo "$e - $s" | bc; }
printf 'path\tgit_log\tgit_log_graph\tcgit\tcgit_graph\n'
for p in Makefile builtin/add.c t/helper README.md; do
  a=$(for i in 1 2 3; do t git -C "$plain" log -50 --format=%H HEAD -- "$p"; done | med)
  b=$(for i in 1 2 3; do t git -C "$graph" log -50 --format=%H HEAD -- "$p"; done | med)
  c=$(for i in 1 2 3; do t env -i CGIT_CONFIG=/tmp/hist-bench/cgitrc-plain REQUEST_METHOD=GET PATH_INFO=/repo/log/$p QUERY_STRING= SCRIPT_NAME=/ /usr/lib/cgit/cgit.cgi; done | med)
  d=$(for i in 1 2 3; do t env -i CGIT_CONFIG=/tmp/hist-bench/cgitrc-graph REQUEST_METHOD=GET PATH_INFO=/repo/log/$p QUERY_STRING= SCRIPT_NAME=/ /usr/lib/cgit/cgit.cgi; done | med)
  printf '%s\t%s\t%s\t%s\t%s\n' "$p" "$a" "$b" "$c" "$d"
done
