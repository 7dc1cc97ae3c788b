#!/bin/sh
# bench/warm.sh: does `shellac warm` slow down the people using the forge while it runs?
#
# One shellac renders a repository (default: git/git at /work/corpus/git.git) with 2 render threads.
# A person (bench/wrk/person.py, from 127.0.0.3) opens a cold commit page every 100 ms, commits
# from the middle of the history that warm never reaches; p50/p99 of those pages are measured
# twice in the same run: alone, and while `shellac warm` renders the newest commits through the
# admin listener (background class), in --rounds alternating pairs (alone, with warm, alone, ...)
# so that a shared machine's load falls on both. The ratio with/alone over all pages is the result.
#
#   flock /tmp/shellac-bench.lock bench/warm.sh [--repo GIT_DIR] [--duration S] [--rounds N]
#                                               [--bin SHELLAC]
set -eu
here=$(cd "$(dirname "$0")" && pwd)
repo=/work/corpus/git.git
duration=30
rounds=2
bin="$here/../build/proxy/shellac"
while [ $# -gt 0 ]; do
  case $1 in
    --repo) repo=$2; shift 2 ;;
    --duration) duration=$2; shift 2 ;;
    --bin) bin=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    *) echo "usage: bench/warm.sh [--repo GIT_DIR] [--duration S] [--rounds N] [--bin SHELLAC]" >&2; exit 2 ;;
  esac
done
tmp=$(mktemp -d)
pid=
cleanup() { [ -n "$pid" ] && kill "$pid" 2>/dev/null; wait 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT INT TERM

# Two disjoint sets of person pages (never repeated: each is a cold render), far below the newest
# commits warm walks.
git -C "$repo" rev-list --no-merges HEAD | sed -n '20001,24000p' | sed 's|^|/git/commit/?id=|' >"$tmp/urls"

cat >"$tmp/shellac.conf" <<CONF
listen=127.0.0.1:0
admin-listen=127.0.0.1:0
access-log=off
threads=2
render-threads=2
cache-size=2G
repo.url=git
repo.path=$repo
CONF
"$bin" -c "$tmp/shellac.conf" 2>"$tmp/shellac.err" &
pid=$!
until grep -q 'shellac: ready' "$tmp/shellac.err"; do
  kill -0 "$pid" || { cat "$tmp/shellac.err"; exit 1; }
  sleep 0.1
done
port=$(sed -n 's/^shellac: listening on 127.0.0.1:\([0-9]*\)$/\1/p' "$tmp/shellac.err" | head -1)
admin=$(sed -n 's/^shellac: admin on \(127.0.0.1:[0-9]*\)$/\1/p' "$tmp/shellac.err")
renders() { curl -s "http://$admin/metrics" | awk '/^shellac_renders_total\{kind="diff-fragment"\}/ {print $2}'; }

# Open the repository and its pack indexes once, outside the measurement.
curl -s -o /dev/null "http://127.0.0.1:$port/git/log/"

# Each phase takes the next 400 URLs of the list: no page is asked for twice.
phase=0
person() {  # person OUTFILE
  sed -n "$((phase * 400 + 1)),$((phase * 400 + 400))p" "$tmp/urls" >"$tmp/phase.urls"
  phase=$((phase + 1))
  python3 "$here/wrk/person.py" --port "$port" --interval 0.1 --duration "$duration" \
    --urls "$tmp/phase.urls" >>"$1"
}
: >"$tmp/alone.out"; : >"$tmp/with.out"
round=0
while [ "$round" -lt "$rounds" ]; do
  person "$tmp/alone.out"
  before=$(renders)
  "$bin" warm --admin "$admin" --limit 20000 git >>"$tmp/warm.out" 2>&1 &
  warm=$!
  until [ "$(renders)" -gt "$before" ]; do sleep 0.1; done   # warm is rendering
  person "$tmp/with.out"
  kill -INT "$warm"; wait "$warm" || true
  round=$((round + 1))
done

summary() {  # the PAGE lines of a phase file: pages, statuses, p50, p99, max
  python3 - "$1" <<'PY'
import sys
ms, st = [], {}
for line in open(sys.argv[1]):
    f = line.split()
    if f and f[0] == "PAGE":
        st[f[1]] = st.get(f[1], 0) + 1
        ms.append(float(f[2]))
ms.sort()
q = lambda p: ms[max(0, min(len(ms) - 1, int(round(p * len(ms) + 0.5)) - 1))]
print("pages=%d statuses=%s p50_ms=%.1f p99_ms=%.1f max_ms=%.1f" % (
    len(ms), ",".join("%s:%d" % kv for kv in sorted(st.items())), q(0.5), q(0.99), ms[-1]))
PY
}
alone=$(summary "$tmp/alone.out")
with=$(summary "$tmp/with.out")
get() { printf '%s\n' "$1" | tr ' ' '\n' | sed -n "s/^$2=//p"; }
echo "# bench/warm.sh --duration $duration --rounds $rounds, $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores, $(uname -srm), load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# repository $repo, render-threads=2; a person opens a cold commit page every 100 ms"
echo "person alone:      $alone"
echo "person with warm:  $with"
echo "warm's runs (one per round, each stopped with SIGINT):"
grep '^warm: stopped\|^warm: done' "$tmp/warm.out" | sed 's/^/  /'
echo "ratio with/alone:  p50 $(awk -v a="$(get "$alone" p50_ms)" -v b="$(get "$with" p50_ms)" 'BEGIN{printf "%.2f", b/a}')" \
     " p99 $(awk -v a="$(get "$alone" p99_ms)" -v b="$(get "$with" p99_ms)" 'BEGIN{printf "%.2f", b/a}')"
