#!/bin/bash
# Instructions (callgrind) per crawler page: shellac under valgrind --tool=callgrind with one worker
# and one render thread on a fork farm (bench/corpus: a cgitrc whose first repository is the base
# and the others its forks, and its commits.txt sample). WARM commit pages of the base fill the
# fragment store (the diff of each of the first K sampled commits); then N commit pages of those K
# commits, spread over the forks, each a frame rendered for the request around the stored fragment,
# all through one keep-alive connection, whole process counted. Two runs of the same binary: the
# warm-up only, then the warm-up and the N pages; per page = the difference / N. Instruction counts
# do not depend on the machine's load, so this measures on a shared machine.
#
# Usage: bench/callgrind-frames.sh BIN CORPUS_DIR [N] [K] [ENCODING]
#   N pages (default 400) of K commits (default 40); ENCODING gzip (default) or identity (no
#   Accept-Encoding). Each answer is checked: 200, a diffstat in the (gunzipped) page.
# Prints one line: BIN, Ir of both runs, Ir per page, gzip bytes per page; keeps the callgrind
# files in $OUT (a temp folder unless given).
set -euo pipefail
bin=$1 corpus=$2 n=${3:-400} k=${4:-40} encoding=${5:-gzip}
out=${OUT:-$(mktemp -d /tmp/shellac-callgrind.XXXXXX)}
mkdir -p "$out"
repos=$(grep -c '^repo.url=' "$corpus/cgitrc")
[ "$repos" -ge 2 ] || { echo "$corpus/cgitrc: a base and at least one fork expected" >&2; exit 2; }
python3 - "$corpus" "$n" "$k" "$out" <<'PY'
import sys
corpus, n, k, out = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
repos = [l.split("=", 1)[1].strip() for l in open(corpus + "/cgitrc") if l.startswith("repo.url=")]
shas = [l.strip() for l in open(corpus + "/commits.txt") if l.strip()][:k]
with open(out + "/warm.txt", "w") as f:
    for s in shas:
        f.write("/%s/commit/?id=%s\n" % (repos[0], s))
with open(out + "/pages.txt", "w") as f:
    for i in range(n):
        f.write("/%s/commit/?id=%s\n" % (repos[1 + i % (len(repos) - 1)], shas[i % len(shas)]))
PY

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
cat >"$out/shellac.conf" <<CONF
listen=127.0.0.1:$port
admin-listen=off
backend=127.0.0.1:1
threads=1
render-threads=1
access-log=off
cgitrc=$corpus/cgitrc
max-open-repos=$((repos + 8))
CONF

ask() {  # LIST -> the bytes of the answers' bodies (as sent), on stdout
  python3 - "$port" "$1" "$encoding" <<'PY'
import gzip, http.client, sys
port, path, encoding = int(sys.argv[1]), sys.argv[2], sys.argv[3]
c = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
headers = {"Accept-Encoding": "gzip"} if encoding == "gzip" else {}
total = 0
for url in open(path):
    c.request("GET", url.strip(), headers=headers)
    r = c.getresponse()
    body = r.read()
    total += len(body)
    page = gzip.decompress(body) if r.getheader("Content-Encoding") == "gzip" else body
    if r.status != 200 or b"class='diffstat-summary'" not in page:
        sys.exit("%s: HTTP %d without a diffstat" % (url.strip(), r.status))
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
echo "$bin encoding=$encoding n=$n k=$k base_ir=$base all_ir=$all per_page=$(((all - base) / n)) bytes_per_page=$((bytes / n)) out=$out"
