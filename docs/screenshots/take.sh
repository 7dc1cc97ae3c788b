#!/usr/bin/env bash
# docs/screenshots/take.sh [SHELLAC-BINARY]: one screenshot per page kind of shellac's embedded
# default (its own stylesheet and logo, no forge behind it), taken with headless Chromium from a
# bare clone of this repository in a temp folder. Writes docs/screenshots/*.png.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
shellac=${1:-$root/build/proxy/shellac}
command -v chromium >/dev/null || { echo "chromium is missing (apt-get install chromium)" >&2; exit 1; }
tmp=$(mktemp -d)
pid=""
cleanup() { [ -n "$pid" ] && kill "$pid" 2>/dev/null; wait 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT
git clone -q --bare "$root" "$tmp/shellac.git"
git -C "$tmp/shellac.git" -c user.name='A Maintainer' -c user.email=m@example.org \
  tag -a v0.1 -m 'first tagged cut' -m 'Commit, diff and tree pages rendered resident.' HEAD~30
git -C "$tmp/shellac.git" tag v0.2-light HEAD~10
cat > "$tmp/cgitrc" <<RC
virtual-root=/
root-title=shellac forge
root-desc=cgit-style pages rendered by shellac
readme=:README.md
about-filter=/usr/lib/cgit/filters/html-converters/txt2html
clone-prefix=https://git.example.org
repo.url=shellac
repo.path=$tmp/shellac.git
repo.desc=a caching ESI reverse proxy and resident git renderer
repo.owner=shellac developers
RC
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"$shellac" --cgitrc "$tmp/cgitrc" --listen "127.0.0.1:$port" --admin-listen off --access-log off \
  >"$tmp/shellac.log" 2>&1 &
pid=$!
for _ in $(seq 1 100); do curl -sf "http://127.0.0.1:$port/" >/dev/null && break; sleep 0.1; done
head=$(git -C "$tmp/shellac.git" rev-parse HEAD)
file=$(git -C "$tmp/shellac.git" ls-tree --name-only HEAD gitfrag/ | grep 'ui_refs.cc\|ui_tree.cc' | head -1)
shoot() {  # NAME PATH
  chromium --headless --no-sandbox --disable-gpu --hide-scrollbars --window-size=1280,900 \
    --screenshot="$here/$1.png" "http://127.0.0.1:$port$2" >/dev/null 2>&1
}
shoot index /
shoot summary /shellac/
shoot refs /shellac/refs/
shoot tag '/shellac/tag/?h=v0.1'
shoot about /shellac/about/
shoot log /shellac/log/
shoot tree /shellac/tree/gitfrag
shoot file "/shellac/tree/$file"
shoot commit "/shellac/commit/?id=$head"
ls -l "$here"/*.png
