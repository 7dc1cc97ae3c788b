#!/usr/bin/env bash
# bench/scenarios/crawler.sh: every request a commit page URL never asked for before (repository x
# sampled commit x diff option), cgit direct vs shellac rendering (its fragment store filled first)
# vs Varnish -> cgit. Run through bench/run.sh crawler; raw results -> OUT/raw/crawler/.
set -euo pipefail
source "$(dirname "$0")/../lib.sh"
SHELLAC_RENDER=1
forge_run crawler crawler crawler.lua
