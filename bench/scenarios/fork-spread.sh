#!/usr/bin/env bash
# bench/scenarios/fork-spread.sh: ten commits through every fork and diff option, never the same URL
# twice: cgit direct vs shellac -> cgit vs Varnish -> cgit. Run through bench/run.sh fork-spread.
set -euo pipefail
source "$(dirname "$0")/../lib.sh"
forge_run fork-spread forkspread forkspread.lua
