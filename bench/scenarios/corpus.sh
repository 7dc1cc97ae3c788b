#!/usr/bin/env bash
# bench/scenarios/corpus.sh: makes (or finds) the corpus and says what it holds; no load, no report.
# Run through bench/run.sh corpus [corpus options].
set -euo pipefail
source "$(dirname "$0")/../lib.sh"
bench_init corpus
corpus_prepare
make_lists
echo "$CORPUS_DESC"
echo "cgitrc: $CGITRC"
for k in crawler forkspread hot burst; do
  echo "$k list: $(wc -l <"$BENCH_TMP/lists/$k.txt") URLs$([ -f "$BENCH_TMP/lists/$k-warmup.txt" ] && echo " (+ $(wc -l <"$BENCH_TMP/lists/$k-warmup.txt") for warm-ups)"), e.g. $(head -n1 "$BENCH_TMP/lists/$k.txt")"
done
