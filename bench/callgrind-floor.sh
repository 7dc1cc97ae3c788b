#!/bin/bash
# Instructions (callgrind) a history page costs cgit 1.2.3 and git's own command, per URL: the
# floor that issue 14's targets are measured against. For each URL of a list (lines WARMUP+1 ..
# WARMUP+N, as bench/callgrind-pages.sh measures shellac on the same lines), cgit.cgi runs once as
# a CGI (one process, as lighttpd runs it) and git's command once, both under callgrind; prints
# "URL<TAB>cgit Ir<TAB>git Ir". git's command for each kind:
#   log       git log -N --numstat --diff-merges=first-parent --format=%H SHA   (cgit's Files/Lines
#             columns diff a merge against its first parent; N = the cgitrc's max-commit-count)
#   log-path  the same with -- PATH
#   blame     git blame --porcelain SHA -- PATH
# Usage: bench/callgrind-floor.sh KIND CGITRC URLS N [WARMUP]   (KIND: log, log-path or blame;
# URLS as bench/wrk/pages_urls.py writes them: /REPO/log/?id=SHA, /REPO/log/PATH?id=SHA,
# /REPO/blame/PATH?id=SHA, REPO a repo.url of CGITRC).
set -euo pipefail
kind=$1 cgitrc=$2 urls=$3 n=$4 warmup=${5:-20}
case $kind in log | log-path | blame) ;; *) echo "KIND: log, log-path or blame" >&2; exit 2 ;; esac
cgit=${CGIT_CGI:-/usr/lib/cgit/cgit.cgi}
rows=$(sed -n 's/^max-commit-count=//p' "$cgitrc" | tail -n1)
rows=${rows:-50}
collected() { sed -n 's/.*Collected : \([0-9]*\).*/\1/p'; }
count() { valgrind --tool=callgrind --callgrind-out-file=/dev/null "$@" 2>&1 >/dev/null | collected; }
sed -n "$((warmup + 1)),$((warmup + n))p" "$urls" | while IFS= read -r url; do
  path=${url%%\?*} query=${url#*\?}
  id=${query#id=}
  # the longest repo.url that starts the path names the repository (cgit's own rule)
  repo="" dir=""
  while IFS='=' read -r u p; do
    if [[ $path == /$u/* && ${#u} -gt ${#repo} ]]; then repo=$u; fi
  done < <(sed -n 's/^repo\.url=//p' "$cgitrc" | sed 's/$/=/')
  [ -n "$repo" ] || { echo "$url: no repository of $cgitrc" >&2; exit 1; }
  dir=$(awk -v u="repo.url=$repo" '$0 == u {f = 1; next} f && /^repo\.path=/ {sub(/^repo\.path=/, ""); print; exit}' "$cgitrc")
  rest=${path#/$repo/}
  file=${rest#*/}
  cg=$(env -i CGIT_CONFIG="$cgitrc" PATH_INFO="$path" QUERY_STRING="$query" REQUEST_METHOD=GET \
    SCRIPT_NAME=/ HTTP_HOST=localhost SERVER_NAME=localhost \
    valgrind --tool=callgrind --callgrind-out-file=/dev/null "$cgit" 2>&1 >/dev/null | collected)
  case $kind in
    log) g=$(count git -C "$dir" log -"$rows" --numstat --diff-merges=first-parent --format=%H "$id") ;;
    log-path) g=$(count git -C "$dir" log -"$rows" --numstat --diff-merges=first-parent --format=%H "$id" -- "$file") ;;
    blame) g=$(count git -C "$dir" blame --porcelain "$id" -- "$file") ;;
  esac
  printf '%s\t%s\t%s\n' "$url" "$cg" "$g"
done
