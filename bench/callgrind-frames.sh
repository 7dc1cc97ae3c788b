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

# shellcheck source=bench/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

ask() {  # LIST -> the bytes of the answers' bodies (as sent), on stdout
  python3 - "$CALLGRIND_PORT" "$1" "$encoding" <<'PY'
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

ask_lists() {  # NAME LISTS...  each list's body bytes into $out/bytes-NAME-LIST
  local name=$1 list
  shift
  for list in "$@"; do ask "$list" >"$out/bytes-$name-$(basename "$list" .txt)" || return 1; done
}

run() {  # NAME LISTS...  -> total Ir of a run asking for the pages of LISTS in turn
  callgrind_shellac "$bin" "$out" "$1" "$corpus/cgitrc" "max-open-repos=$((repos + 8))" ask_lists "$@"
}

base=$(run warm "$out/warm.txt")
all=$(run all "$out/warm.txt" "$out/pages.txt")
bytes=$(cat "$out/bytes-all-pages")
echo "$bin encoding=$encoding n=$n k=$k base_ir=$base all_ir=$all per_page=$(((all - base) / n)) bytes_per_page=$((bytes / n)) out=$out"
