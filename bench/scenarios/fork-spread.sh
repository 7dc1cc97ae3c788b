#!/usr/bin/env bash
# bench/scenarios/fork-spread.sh: ten commits through every fork and diff option, never the same URL
# twice: cgit direct vs shellac rendering (the corpus' cgitrc imported: a frame per request, the
# diff fragment rendered once per commit and option and shared by every fork; everything else ->
# cgit) vs Varnish -> cgit. shellac's store starts empty: its sweep renders the ten commits' fragments
# itself. Run through bench/run.sh fork-spread.
set -euo pipefail
source "$(dirname "$0")/../lib.sh"
SHELLAC_RENDER=1

forge_before_sweep() {  # no warm pass: the fragments are rendered during the sweep, once each
  :
}

forge_run fork-spread forkspread forkspread.lua
