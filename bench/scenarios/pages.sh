#!/usr/bin/env bash
# bench/scenarios/pages.sh: every page kind a crawler walks (issues 13, 14), each URL asked once: per
# kind, a list of unique URLs (bench/wrk/pages_urls.py: commit, diff, patch, rawdiff, log, log-ofs,
# tree of a folder, tree of a file, plain, blame, log-path, refs, tag, summary, about, atom, stats,
# snapshot, clone) walked by wrk (bench/wrk/crawler.lua) at one concurrency level, against cgit
# direct, shellac rendering (store empty at the start; each kind's commits its own) and Varnish ->
# cgit; then the kinds mixed in one list. Per kind: pages/s, p50/p99 and shellac / cgit. Run through
# bench/run.sh pages [--sweep C] (one level, default 8) [--duration S]; raw results ->
# OUT/raw/pages/ (points.tsv: target "KIND:TARGET", kinds.tsv: the lists).
set -euo pipefail
source "$(dirname "$0")/../lib.sh"

begin pages "${REPORT:-pages}"
peers_need
corpus_prepare
[ "$IDENTITY" = 1 ] || echo "Accept-Encoding: gzip" >"$BENCH_TMP/headers.txt"
CONNS=8
[ "$DURATION" = 5 ] && [ "$SMALL" = 0 ] && BENCH_DURATION=3   # default: 3 s a point (20 lists x 3 targets)
[ "$SWEEP_GIVEN" = 1 ] && CONNS=${SWEEP%%,*}
LISTS=$BENCH_TMP/pages
python3 "$BENCH_DIR/wrk/pages_urls.py" --cgitrc "$CGITRC" --repo "$BASE_REPO" --branch "$HEAD_BRANCH" \
  --out "$LISTS" --seed "$SEED" --skip "$COMMITS_FILE" || bench_die "pages_urls.py failed"
cp "$LISTS/kinds.tsv" "$RAW/kinds.tsv"
mapfile -t KINDS < <(cut -f1 "$LISTS/kinds.tsv")
# Each kind's list: its first 3/4 for the kind's own runs (KIND-run.txt), the last 1/4 dealt
# round-robin (one URL of each kind in turn) into the mix, so the mix asks for pages no kind's run did.
python3 - "$LISTS" "${KINDS[@]}" >"$LISTS/mix-run.txt" <<'PY'
import sys
d, kinds = sys.argv[1], sys.argv[2:]
tails = []
for k in kinds:
    urls = open("%s/%s.txt" % (d, k)).read().split()
    cut = max(1, len(urls) * 3 // 4)
    open("%s/%s-run.txt" % (d, k), "w").write("".join(u + "\n" for u in urls[:cut]))
    tails.append(urls[cut:])
for i in range(max(map(len, tails))):
    for t in tails:
        if i < len(t):
            print(t[i])
PY
SHELLAC_RENDER=1
start_targets
bench_meta conns "$CONNS"
bench_meta kinds "${KINDS[*]}"
# Checks, before anything is measured: the first URL of every kind answers 200 on every target.
for k in "${KINDS[@]}"; do
  path=$(head -n1 "$LISTS/$k-run.txt")
  for t in "${TARGETS[@]}"; do
    code=$(curl -sS -o /dev/null --max-time 60 -w '%{http_code}' "${TARGET_URL[$t]}$path") || code=fail
    [ "$code" = 200 ] || bench_die "$t: GET $path -> $code (kind $k)"
  done
done
# Untimed: shellac opens every repository (its ref index) once, with a page no list holds.
while IFS= read -r r; do
  curl -sS -o /dev/null --max-time 60 "${TARGET_URL[shellac]}/$r/log/" || bench_die "shellac: GET /$r/log/ failed"
done < <(sed -n 's/^repo\.url=//p' "$CGITRC")
# The checks above stored their kinds' first URLs' parts: every list starts at its second line.
quiet_wait || true
bench_meta renders_before "$(render_counts)"
export BENCH_WRK_SCRIPT=$BENCH_DIR/wrk/crawler.lua CRAWL_LANES=2 CRAWL_START=1
if [ "$IDENTITY" = 1 ]; then unset WRK_HEADERS; else export WRK_HEADERS=$BENCH_TMP/headers.txt; fi
# Equal time: every target walks a kind's list at least as long as the first target (cgit direct)
# did. shellac's store fills as it goes (a snapshot's blobs are kept by id: of git/git's random
# commits the first 20 archives cost 134 ms of CPU each, those after the 60th 46 ms,
# bench/results/snapwarm.md), so a point of its own 100 pages (4 s) measured the store filling
# while cgit's, 60 s, measured its steady rate.
bench_meta equal_time 1
for k in "${KINDS[@]}" mix; do
  export CRAWL_URLS=$LISTS/$k-run.txt
  POINT_MIN_US=0
  for t in "${TARGETS[@]}"; do
    BENCH_WATCH[$k:$t]=${BENCH_WATCH[$t]}
    peer_origin_idle 60 || bench_log "cgit processes still running before $t ($k)"
    before=$(render_counts)
    crawl_point "$k:$t" "${TARGET_URL[$t]}/" "$CONNS" || true
    out=$BENCH_TMP/wrk-$k:$t-c$CONNS.txt
    r=$(crawl_fields "$out")
    r=${r:-0	0	0	0}
    if [ "$t" = "${TARGETS[0]}" ]; then
      # its walk's time; none when it walked to the cap (--max-duration)
      POINT_MIN_US=$(cut -f4 <<<"$r")
      [ "${POINT_MIN_US:-0}" -gt 0 ] || POINT_MIN_US=$((MAX_DURATION * 1000000))
    fi
    # KIND TARGET REPEATS URLS BEFORE AFTER ENDED WALKED_US
    printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$k" "$t" "$(cut -f1,2 <<<"$r")" "$before" "$(render_counts)" \
      "$(cut -f3,4 <<<"$r")" >>"$RAW/crawl.tsv"
    for p in "${SWEEP_LIVE[@]}"; do bench_alive "${p#*=}" || bench_die "${p%%=*} died during $t ($k)"; done
    if ! bench_alive "$SHELLAC_PID"; then
      SHELLAC_DIED="shellac (pid $SHELLAC_PID) exited during the $t run of $k"
      bench_log "$SHELLAC_DIED"; tail -n 20 "$SHELLAC_DIR/stderr.log" >&2
      break 2
    fi
  done
done
bench_meta renders_after "$(render_counts)"
stop_targets
for t in "${TARGETS[@]}"; do bench_meta "targets[]" "$t"; done
bench_report
[ -z "$SHELLAC_DIED" ]
