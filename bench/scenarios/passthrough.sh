#!/usr/bin/env bash
# bench/scenarios/passthrough.sh: what shellac costs in front of an origin when it caches nothing.
#
# nginx (Debian's nginx-light) serves one 6,600-byte commit-page-like HTML file on loopback. wrk
# loads it directly ("nginx direct") and through shellac (threads=2, backend=that nginx), same
# settings, back to back at every concurrency level of the sweep, in one run. Writes the raw results
# to OUT/raw/passthrough/ and, from them (bench/report.py), OUT/passthrough.md (+ .png). Target:
# shellac >= 0.7x nginx-direct req/s. Runs alone or as `bench/run.sh passthrough`.
#
# Usage: bench/scenarios/passthrough.sh [--sweep 1,2,4,...] [--duration SECONDS] [--warmup SECONDS]
#                             [--only nginx|shellac|both] [--reference-proxy] [--wait-quiet SECONDS]
#                             [--retries N] [--out DIR] [--keep-tmp]
#   --only nginx    measure nginx alone (no shellac build), for debugging the rig
#   --reference-proxy  also measure a second nginx as a keep-alive reverse proxy in front of the
#                   first (2 workers, upstream keepalive 256): what a mature proxy gets on this machine
#   --wait-quiet S  before loading, wait up to S seconds for the machine to be idle (< 15% of a core)
#   --retries N     measure a level again (after waiting for quiet within what is left of
#                   --wait-quiet) when another process used more than 20% of a core during one of
#                   its points; N times at most
#   --out DIR       where passthrough.md/.png go; default bench/results for a full run (both
#                   targets), bench/tmp for --only runs (so a debugging run never replaces the
#                   committed results)
#   SHELLAC_BIN=PATH  use this binary instead of `make -C REPO release` -> build-release/proxy/shellac
set -euo pipefail
source "$(dirname "$0")/../lib.sh"

ARGS=("$@")
SWEEP=1,2,4,8,16,32,64,128,256
ONLY=both
OUT=""
TARGET_RATIO=0.7
REFERENCE_PROXY=0
WAIT_QUIET=0
RETRIES=0
usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit "${1:-2}"; }
while [ $# -gt 0 ]; do
  case $1 in
    --sweep) SWEEP=${2:?--sweep needs a list}; shift 2 ;;
    --duration) BENCH_DURATION=${2:?--duration needs seconds}; shift 2 ;;
    --warmup) BENCH_WARMUP=${2:?--warmup needs seconds}; shift 2 ;;
    --only) ONLY=${2:?--only needs nginx, shellac or both}; shift 2 ;;
    --out) OUT=${2:?--out needs a folder}; shift 2 ;;
    --keep-tmp) BENCH_KEEP_TMP=1; shift ;;
    --reference-proxy) REFERENCE_PROXY=1; shift ;;
    --wait-quiet) WAIT_QUIET=${2:?--wait-quiet needs seconds}; shift 2 ;;
    --retries) RETRIES=${2:?--retries needs a count}; shift 2 ;;
    -h | --help) usage 0 ;;
    *) echo "passthrough.sh: unknown argument: $1" >&2; usage 2 ;;
  esac
done
[[ $SWEEP =~ ^[1-9][0-9]*(,[1-9][0-9]*)*$ ]] || bench_die "--sweep: expected a list like 1,2,4,8"
[[ $BENCH_DURATION =~ ^[1-9][0-9]*$ ]] || bench_die "--duration: expected whole seconds"
[[ $BENCH_WARMUP =~ ^[0-9]+$ ]] || bench_die "--warmup: expected whole seconds"
[[ $WAIT_QUIET =~ ^[0-9]+$ ]] || bench_die "--wait-quiet: expected whole seconds"
[[ $RETRIES =~ ^[0-9]+$ ]] || bench_die "--retries: expected a count"
case $ONLY in nginx | shellac | both) ;; *) bench_die "--only: nginx, shellac or both" ;; esac
if [ -z "$OUT" ]; then
  if [ "$ONLY" = both ]; then OUT=$BENCH_REPO/bench/results; else OUT=$BENCH_REPO/bench/tmp; fi
fi
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)

# bench/run.sh passthrough passes the command as typed; alone, this script's own
: "${BENCH_COMMAND:=$(bench_cmdline "${ARGS[@]}")}"
DURATION=$BENCH_DURATION
begin passthrough
bench_meta options.target_ratio "$TARGET_RATIO"
bench_need wrk:wrk curl:curl gnuplot:gnuplot-nox /usr/sbin/nginx:nginx-light
export PATH=$PATH:/usr/sbin
SHELLAC=""
[ "$ONLY" = nginx ] || SHELLAC=$(bench_build_shellac)
quiet_wait || true
SHELLAC_GIT_REV=$(bench_git_rev "$BENCH_REPO")   # what was just built (the tree may move during the run)

# ---------------------------------------------------------------------------------------------
# The page: deterministic, 6,600 bytes, shaped like a cgit commit page (header, tabs, commit info,
# message, diffstat table). Nothing in it depends on the time or the machine.
make_page() {  # FILE
  local f=$1 i sha files=(
    drivers/net/ethernet/intel/ice/ice_main.c
    mm/page_alloc.c net/ipv4/tcp_input.c tools/testing/selftests/net/tcp_rcv_space.sh)
  sha() { printf '%08x%08x%08x%08x%08x' $(($1 * 2654435761 % 4294967296)) $(($1 * 40503 % 4294967296)) \
    $(($1 * 2246822519 % 4294967296)) $(($1 * 3266489917 % 4294967296)) $(($1 * 668265263 % 4294967296)); }
  {
    cat <<'EOF'
<!DOCTYPE html>
<html lang='en'>
<head>
<title>linux.git - Linux kernel source tree</title>
<meta name='generator' content='cgit v1.2.3'/>
<meta name='robots' content='index, nofollow'/>
<link rel='stylesheet' type='text/css' href='/cgit.css'/>
<link rel='shortcut icon' href='/favicon.ico'/>
<link rel='alternate' title='Atom feed' href='/linux.git/atom/?h=master' type='application/atom+xml'/>
</head>
<body>
<div id='cgit'><table id='header'>
<tr><td class='logo' rowspan='2'><a href='/'><img src='/cgit.png' alt='cgit logo'/></a></td>
<td class='main'><a href='/'>index</a> : <a href='/linux.git/'>linux.git</a></td><td class='form'><form method='get'>
<input type='hidden' name='id' value='0f3c4b1b3c9f2a7de61b7d41c6a3d2b9e8f01234'/><select name='h' onchange='this.form.submit();'>
<option value='for-next'>for-next</option><option value='master' selected='selected'>master</option>
<option value='stable'>stable</option></select> <input type='submit' value='switch'/></form></td></tr>
<tr><td class='sub'>Linux kernel source tree</td><td class='sub right'>Linus Torvalds</td></tr></table>
<table class='tabs'><tr><td>
<a href='/linux.git/about/'>about</a><a href='/linux.git/'>summary</a><a href='/linux.git/refs/'>refs</a><a href='/linux.git/log/'>log</a><a href='/linux.git/tree/'>tree</a><a class='active' href='/linux.git/commit/'>commit</a><a href='/linux.git/diff/'>diff</a><a href='/linux.git/stats/'>stats</a></td><td class='form'><form class='right' method='get' action='/linux.git/log/'>
<select name='qt'><option value='grep'>log msg</option><option value='author'>author</option><option value='committer'>committer</option><option value='range'>range</option></select>
<input class='txt' type='search' size='10' name='q' value=''/><input type='submit' value='search'/>
</form></td></tr></table>
<div class='content'>
<table summary='commit info' class='commit-info'>
<tr><th>author</th><td>Jane Developer &lt;jane@example.org&gt;</td><td class='right'>2026-11-02 14:07:31 +0100</td></tr>
<tr><th>committer</th><td>Linus Torvalds &lt;torvalds@linux-foundation.org&gt;</td><td class='right'>2026-11-03 09:12:05 -0800</td></tr>
<tr><th>commit</th><td colspan='2' class='sha1'><a href='/linux.git/commit/?id=0f3c4b1b3c9f2a7de61b7d41c6a3d2b9e8f01234'>0f3c4b1b3c9f2a7de61b7d41c6a3d2b9e8f01234</a> (<a href='/linux.git/patch/?id=0f3c4b1b3c9f2a7de61b7d41c6a3d2b9e8f01234'>patch</a>)</td></tr>
<tr><th>tree</th><td colspan='2' class='sha1'><a href='/linux.git/tree/?id=0f3c4b1b3c9f2a7de61b7d41c6a3d2b9e8f01234'>7a1e0c9d55b2e4f3a8c61d0b9e7f2a3c4d5e6f70</a></td></tr>
EOF
    for i in 1 2; do
      sha=$(sha $i)
      printf "<tr><th>parent</th><td colspan='2' class='sha1'><a href='/linux.git/commit/?id=%s'>%s</a></td></tr>\n" "$sha" "$sha"
    done
    cat <<'EOF'
</table>
<div class='commit-subject'>Merge tag 'net-6.19-rc4' of git://git.kernel.org/pub/scm/linux/kernel/git/netdev/net <span class='decoration'><a class='tag-deco' href='/linux.git/tag/?h=v6.19-rc4'>v6.19-rc4</a></span></div>
<div class='commit-msg'>Pull networking fixes from Jakub Kicinski:
 "Including fixes from bluetooth, netfilter and wireless. Current release - regressions:
  - tcp: fix the receive window update when the scaling factor changes
  - ice: do not leak the page pool on a failed reset
 Previous releases - always broken:
  - mm: keep the per-cpu page lists bounded under memory pressure"

* tag 'net-6.19-rc4' of git://git.kernel.org/pub/scm/linux/kernel/git/netdev/net: (42 commits)
</div>
<div class='diffstat-header'><a href='/linux.git/diff/?id=0f3c4b1b3c9f2a7de61b7d41c6a3d2b9e8f01234'>Diffstat</a></div>
<table summary='diffstat' class='diffstat'>
EOF
    for i in "${!files[@]}"; do
      printf "<tr><td class='mode'>-rw-r--r--</td><td class='upd'><a href='/linux.git/diff/%s?id=0f3c4b1b3c9f2a7de61b7d41c6a3d2b9e8f01234'>%s</a></td><td class='right'>%d</td><td class='graph'><table summary='file diffstat' width='%d%%'><tr><td class='add' style='width: %d.0%%;'/><td class='rem' style='width: %d.0%%;'/><td class='none' style='width: %d.0%%;'/></tr></table></td></tr>\n" \
        "${files[i]}" "${files[i]}" $((i * 7 + 3)) $((i * 9 + 10)) $((i * 5 + 20)) $((i * 3 + 5)) $((75 - i * 8))
    done
    cat <<'EOF'
</table><div class='diffstat-summary'>4 files changed, 131 insertions, 37 deletions</div>
<table summary='diff' class='diff'><tr><td><div class='head'>diff --git a/net/ipv4/tcp_input.c b/net/ipv4/tcp_input.c</div><div class='hunk'>@@ -5123,7 +5123,8 @@ static void tcp_rcv_space_adjust(struct sock *sk)</div><div class='ctx'> 	u32 copied;</div><div class='del'>-	int time;</div><div class='add'>+	u64 time;</div></td></tr></table>
</div> <!-- class=content -->
<div class='footer'>generated by <a href='https://git.zx2c4.com/cgit/about/'>cgit v1.2.3</a> (<a href='https://git-scm.com/'>git 2.47.3</a>) at 2026-11-03 17:20:44 +0000</div>
</div> <!-- id=cgit -->
EOF
  } >"$f.head"
  local size pad
  size=$(wc -c <"$f.head")
  pad=$((6600 - size - 16))   # 16: "</body>\n</html>\n"
  [ "$pad" -ge 11 ] || bench_die "page is already $size bytes, too close to 6600"
  {
    cat "$f.head"
    printf '<!-- '; head -c $((pad - 10)) /dev/zero | tr '\0' '.'; printf ' -->\n'
    printf '</body>\n</html>\n'
  } >"$f"
  rm -f "$f.head"
  [ "$(wc -c <"$f")" = 6600 ] || bench_die "page is $(wc -c <"$f") bytes, not 6600"
}

# ---------------------------------------------------------------------------------------------
# nginx: the origin and the peer (bench/peers.sh: config, pid, logs and temp folders in the temp dir)
WWW=$BENCH_TMP/www
mkdir -p "$WWW"
chmod 755 "$BENCH_TMP" "$WWW"   # nginx workers run as www-data/nobody when the master is root
make_page "$WWW/index.html"
peer_nginx_static_start "$WWW" -
NGINX_URL=http://127.0.0.1:$NGINX_PORT/index.html
bench_check_get "$NGINX_URL" "$WWW/index.html" || bench_die "nginx does not serve the page"
bench_watch nginx "$NGINX_PID"
BENCH_LABEL[nginx]="nginx direct"
declare -A TARGET_URL=([nginx]=$NGINX_URL)
TARGETS=()
[ "$ONLY" = shellac ] || TARGETS+=(nginx)

# ---------------------------------------------------------------------------------------------
# Optional reference: nginx as a reverse proxy in front of the same nginx (what shellac replaces).
if [ "$REFERENCE_PROXY" = 1 ]; then
  RP=$BENCH_TMP/nginx-proxy
  mkdir -p "$RP"
  RP_PORT=$(bench_free_port)
  sed -e "s#$BENCH_TMP/nginx/#$RP/#g" -e '/^  server {/,$d' "$BENCH_TMP/nginx/nginx.conf" >"$RP/nginx.conf"
  cat >>"$RP/nginx.conf" <<CONF
  upstream origin { server 127.0.0.1:$NGINX_PORT; keepalive 256; }
  server {
    listen 127.0.0.1:$RP_PORT;
    location / {
      proxy_pass http://origin;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      add_header Via "1.1 nginx-proxy";
    }
  }
}
CONF
  bench_start nginx-proxy "$RP/stderr.log" nginx -p "$RP/" -e "$RP/error.log" -c "$RP/nginx.conf" -g 'daemon off;'
  RP_PID=$BENCH_LAST_PID
  bench_wait_listen "$RP_PORT" 10 "$RP_PID" || { cat "$RP/stderr.log" "$RP/error.log" >&2; bench_die "nginx-proxy did not start"; }
  RP_URL=http://127.0.0.1:$RP_PORT/index.html
  TARGET_URL[nginx-proxy]=$RP_URL
  bench_check_get "$RP_URL" "$WWW/index.html" '^via:.*nginx-proxy' || bench_die "nginx-proxy does not pass the page through"
  bench_watch nginx-proxy "$RP_PID" "$NGINX_PID"
  BENCH_LABEL[nginx-proxy]="nginx proxy -> nginx (reference)"
  TARGETS+=(nginx-proxy)
fi

# ---------------------------------------------------------------------------------------------
# shellac in front of that nginx (cache=off: passthrough measures the proxy path, not the store)
SHELLAC_PID=""
if [ "$ONLY" != nginx ]; then
  peer_shellac_start "$SHELLAC" "$NGINX_PORT" cache=off
  TARGET_URL[shellac]=http://127.0.0.1:$SHELLAC_PORT/index.html
  bench_check_get "${TARGET_URL[shellac]}" "$WWW/index.html" '^via:.*shellac' '^x-cache: *pass' ||
    { cat "$SHELLAC_DIR/stderr.log" >&2; bench_die "shellac does not pass the page through"; }
  bench_watch shellac "$SHELLAC_PID" "$NGINX_PID"
  BENCH_LABEL[shellac]="shellac -> nginx"
  TARGETS+=(shellac)
fi

# ---------------------------------------------------------------------------------------------
# The sweep (lib.sh): at each level, every target back to back (warm-up, then the measured run);
# with --retries N, a level where some point had more than 20% of a core busy outside the
# benchmark is measured again (all targets), N times at most.
NOT_PASSED=""
passthrough_point() {  # TARGET C
  bench_point "$1" "${TARGET_URL[$1]}" "$2" || true
  # Through a proxy nginx must work too; if it idles, the proxy answered by itself (a cache).
  if [ "$1" != nginx ] && [ "$(bench_row_cpu "$1" "$2" nginx)" -lt 5 ]; then
    bench_log "$1 c=$2: nginx was idle: the proxy did not pass the requests through"
    NOT_PASSED+="$1 c=$2, "
  fi
}
POINT_FN=passthrough_point
SWEEP_LIVE=("nginx=$NGINX_PID")
sweep

# ---------------------------------------------------------------------------------------------
# Stop the servers (by pid) so that their exit is part of the report.
if [ -n "$SHELLAC_PID" ] && [ -z "$SHELLAC_DIED" ]; then
  bench_stop "$SHELLAC_PID" 35
  SHELLAC_EXIT="exit status $BENCH_STOP_RC after SIGTERM"
  grep -q '^shellac: stopped' "$SHELLAC_DIR/stderr.log" && SHELLAC_EXIT+=", printed \"shellac: stopped\""
fi
[ "$REFERENCE_PROXY" = 1 ] && bench_stop "$RP_PID" 10
bench_stop "$NGINX_PID" 10

# ---------------------------------------------------------------------------------------------
# The raw results' metadata, then the report (bench/report.py)
[ -n "$SHELLAC" ] && SHELLAC_VERSION=$("$SHELLAC" --version 2>&1 | head -n1)
bench_meta versions.nginx "$(bench_version_nginx)"
bench_meta not_passed "${NOT_PASSED%, }"
for t in "${TARGETS[@]}"; do bench_meta "targets[]" "$t"; done
bench_report
[ -z "$SHELLAC_DIED" ]
