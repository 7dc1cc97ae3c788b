#!/bin/bash
# Instructions (callgrind) per cold page of any kind: shellac under valgrind --tool=callgrind with
# one worker and one render thread, asked for the URLs of a list (one path a line, as
# bench/wrk/pages_urls.py writes them: every URL distinct), through one keep-alive connection with
# Accept-Encoding: gzip (or none: ENCODING=identity), the whole process counted. Two runs of the
# same binary: the first WARMUP URLs only (start, every repository opened once, its ref index),
# then the same and N more; per page = the difference / N. Every answer is checked: 200.
# Instruction counts do not depend on the machine's load, so this measures on a shared machine.
#
# Usage: [EXTRA_CONF=LINES] [ENCODING=identity] bench/callgrind-pages.sh BIN CGITRC URLS N [WARMUP]
#   ENCODING: gzip (default: Accept-Encoding: gzip) or identity (no Accept-Encoding).
#   EXTRA_CONF: shellac.conf lines added to the run's configuration (e.g. blame-timeout=600s: a
#   blame runs ~50x slower under callgrind than its blame-timeout was chosen for).
#   URLS: a list of paths; the first WARMUP (default 20) warm up, the next N are measured. Every
#   repository of CGITRC is opened in the warm-up run (its top folder's tree page) before the list.
# Prints one line: BIN, the list, Ir of both runs, Ir per page, bytes per page; keeps the callgrind
# files in $OUT (a temp folder unless given): callgrind_annotate "$OUT/callgrind-all.out" shows
# where the instructions go (minus the warm-up's, in callgrind-warm.out).
# MAX_OPEN_REPOS sets max-open-repos (default: every repository of CGITRC stays open), to count
# what reopening repositories costs when a forge has more forks than that.
set -euo pipefail
bin=$1 cgitrc=$2 urls=$3 n=$4 warmup=${5:-20} encoding=${ENCODING:-gzip}
case $encoding in gzip | identity) ;; *) echo "ENCODING: gzip or identity" >&2; exit 2 ;; esac
out=${OUT:-$(mktemp -d /tmp/shellac-callgrind.XXXXXX)}
mkdir -p "$out"
repos=$(grep -c '^repo.url=' "$cgitrc")
{ sed -n "s/^repo\\.url=\\(.*\\)$/\\/\\1\\/tree\\//p" "$cgitrc"; head -n "$warmup" "$urls"; } >"$out/warm.txt"
sed -n "$((warmup + 1)),$((warmup + n))p" "$urls" >"$out/pages.txt"
[ "$(wc -l <"$out/pages.txt")" -eq "$n" ] || { echo "$urls: fewer than $((warmup + n)) URLs" >&2; exit 1; }

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
cat >"$out/shellac.conf" <<CONF
listen=127.0.0.1:$port
admin-listen=off
backend=127.0.0.1:1
threads=1
render-threads=1
access-log=off
cgitrc=$cgitrc
max-open-repos=${MAX_OPEN_REPOS:-$((repos + 8))}
${EXTRA_CONF:-}
CONF

ask() {  # LIST -> the bytes of the answers' bodies (as sent), on stdout
  python3 - "$port" "$1" "$encoding" <<'PY'
import http.client, sys
port, path, encoding = int(sys.argv[1]), sys.argv[2], sys.argv[3]
c = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
headers = {"Accept-Encoding": "gzip"} if encoding == "gzip" else {}
total = 0
for url in open(path):
    c.request("GET", url.strip(), headers=headers)
    r = c.getresponse()
    total += len(r.read())
    if r.status != 200:
        sys.exit("%s: HTTP %d" % (url.strip(), r.status))
print(total)
PY
}

run() {  # NAME LISTS...  -> total Ir of a run asking for the pages of LISTS in turn
  local name=$1 log="$out/run-$1.log" cg="$out/callgrind-$1.out" pid list
  shift
  valgrind --tool=callgrind --callgrind-out-file="$cg" "$bin" -c "$out/shellac.conf" 2>"$log" &
  pid=$!
  for _ in $(seq 1 600); do
    grep -q '^shellac: ready' "$log" 2>/dev/null && break
    kill -0 "$pid" 2>/dev/null || { echo "shellac died: $log" >&2; exit 1; }
    sleep 0.2
  done
  for list in "$@"; do
    ask "$list" >"$out/bytes-$name-$(basename "$list" .txt)" || { kill "$pid"; exit 1; }
  done
  kill -TERM "$pid"
  wait "$pid" || true
  awk '/^(summary|totals):/ {print $2; exit}' "$cg"
}

base=$(run warm "$out/warm.txt")
all=$(run all "$out/warm.txt" "$out/pages.txt")
bytes=$(cat "$out/bytes-all-pages")
echo "$bin urls=$(basename "$urls") encoding=$encoding warmup=$warmup n=$n base_ir=$base all_ir=$all per_page=$(((all - base) / n)) bytes_per_page=$((bytes / n)) out=$out"
