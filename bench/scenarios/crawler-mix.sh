#!/usr/bin/env bash
# bench/scenarios/crawler-mix.sh: what crawlers walk on a forge (issue 14): every page kind shellac
# renders, weighted as crawlers ask for them (bench/wrk/pages_urls.py's MIX_WEIGHTS: commit, diff,
# patch, rawdiff, tree of a folder and of a file, plain, blame, path log, log pages, tags,
# snapshots), every URL asked once, shellac's store empty at the start; cgit direct vs shellac
# rendering vs Varnish -> cgit over a concurrency sweep; shellac's renders and render time by kind
# (its /metrics). Run through bench/run.sh crawler-mix [--from REPO --report NAME]; raw results ->
# OUT/raw/NAME/ (kinds.tsv: the kinds' lists, cold-renders.tsv: shellac's counts per level).
set -euo pipefail
source "$(dirname "$0")/../lib.sh"
SHELLAC_RENDER=1

forge_run crawler-mix crawler-mix crawler.lua "${REPORT:-crawler-mix}"
