# shellcheck shell=bash
# bench/peers.sh: start and stop shellac's peers for the benchmarks. Source it after lib.sh (it uses
# bench_start/bench_stop/bench_free_port/$BENCH_TMP); don't run it.
#
#   peers_need                         installs lighttpd, cgit, varnish, hitch, nginx-light, openssl,
#                                      wrk, curl, gnuplot-nox when missing (apt-get, via bench_need)
#   peer_cgit_start CGITRC             cgit 1.2.3 (/usr/lib/cgit/cgit.cgi) as CGI under lighttpd, with
#                                      CGIT_CONFIG=CGITRC (its cache-size=0 and virtual-root=/ apply)
#                                      -> CGIT_PORT CGIT_PID CGIT_DIR CGIT_ACCESS_LOG
#   peer_varnish_start BACKEND_PORT [NAME]  Varnish 7 (malloc,256m; ESI for Surrogate-Control content=
#                                      "ESI/1.0"; gzip for text/*) -> VARNISH_PORT VARNISH_PID VARNISH_DIR
#                                      (NAME: its dir under $BENCH_TMP and its name, default varnish;
#                                      another NAME starts one more instance)
#   peer_nginx_static_start DOCROOT [gzip_static|-] [SERVER-LINES]  nginx (nginx-light) serving
#                                      DOCROOT as static files (with gzip_static: FILE.gz to clients
#                                      that accept gzip; SERVER-LINES: more nginx lines for the server
#                                      block, e.g. locations that add headers)
#                                      -> NGINX_PORT NGINX_PID
#   peer_hitch_start BACKEND_PORT      hitch (TLS) with a self-signed certificate made now by the
#                                      openssl CLI -> HITCH_PORT HITCH_PID HITCH_DIR (cert: HITCH_DIR/cert.pem)
#   peer_shellac_start BIN BACKEND_PORT [KEY=VALUE...]  shellac (listen, admin-listen=off (or a port
#                                      with PEER_SHELLAC_ADMIN=1), backend,
#                                      threads=2, access-log=off, then the extra lines) -> SHELLAC_PORT
#                                      SHELLAC_PID SHELLAC_DIR
#   peer_tls_cert DIR                  a self-signed certificate (openssl CLI) -> DIR/cert.pem DIR/key.pem
#   peer_shellac_accepts BIN LINE...   0 when this shellac build's --check takes these config lines
#   peer_shellac_metric NAME           one value from shellac's /metrics (PEER_SHELLAC_ADMIN=1 before
#                                      peer_shellac_start gives it admin-listen -> SHELLAC_ADMIN_PORT)
#   peer_slow_origin_start ROOT MS     bench/wrk/slow_origin.py: ROOT's files, each after MS ms,
#                                      Cache-Control: no-store -> SLOW_PORT SLOW_PID
#   peer_varnish_stat FIELD...         "MAIN.n_object=N ..." from varnishstat of the running Varnish
#   peer_stop PID                      stop one of them by pid (the EXIT trap of lib.sh stops the rest)
#   peer_origin_requests               lines in lighttpd's access log so far (requests cgit's server saw;
#                                      waits for lighttpd to flush its log)
#   peer_origin_idle SECONDS           waits until lighttpd has no CGI child left (returns 1 on timeout)
#   peer_versions                      one line: lighttpd, cgit, varnish, nginx, hitch, git versions
#
# Every config, pid file, log, certificate and work dir lives under $BENCH_TMP/<peer>/; every daemon
# runs in the foreground of a pid tracked by bench_start; nothing global is started or changed (Debian's
# service units for these packages are never used).

PEERS_CGI=${PEERS_CGI:-/usr/lib/cgit/cgit.cgi}

peers_need() {
  bench_need wrk:wrk curl:curl gnuplot:gnuplot-nox openssl:openssl python3:python3 \
    /usr/sbin/lighttpd:lighttpd "$PEERS_CGI":cgit /usr/sbin/varnishd:varnish \
    /usr/sbin/hitch:hitch /usr/sbin/nginx:nginx-light
  case ":$PATH:" in *:/usr/sbin:*) ;; *) export PATH=$PATH:/usr/sbin ;; esac
}

peer_dir() {  # NAME -> creates and prints $BENCH_TMP/NAME (world-readable: daemons drop privileges)
  local d=$BENCH_TMP/$1
  mkdir -p "$d"
  chmod 755 "$BENCH_TMP" "$d"
  printf '%s\n' "$d"
}

peer_fail() {  # NAME LOG...  prints the logs and dies
  local name=$1 f
  shift
  for f in "$@"; do
    [ -s "$f" ] && { echo "--- $f" >&2; tail -n 30 "$f" >&2; }
  done
  bench_die "$name did not start"
}

# ---------------------------------------------------------------------------------------------
# cgit under lighttpd (the origin)

peer_cgit_start() {  # CGITRC
  local cgitrc=$1 d
  [ -r "$cgitrc" ] || bench_die "no cgitrc at $cgitrc"
  d=$(peer_dir lighttpd)
  CGIT_DIR=$d
  CGIT_PORT=$(bench_free_port)
  CGIT_ACCESS_LOG=$d/access.log
  mkdir -p "$d/www/cgit-css"
  chmod 755 "$d/www" "$d/www/cgit-css"
  ln -sf "$PEERS_CGI" "$d/www/cgit.cgi"
  local f
  for f in cgit.css cgit.png favicon.ico robots.txt; do
    [ -e "/usr/share/cgit/$f" ] && ln -sf "/usr/share/cgit/$f" "$d/www/cgit-css/$f"
  done
  [ -e /usr/share/cgit/favicon.ico ] && ln -sf /usr/share/cgit/favicon.ico "$d/www/favicon.ico"
  : >"$CGIT_ACCESS_LOG"
  chmod 666 "$CGIT_ACCESS_LOG"
  cat >"$d/lighttpd.conf" <<CONF
# generated by bench/peers.sh: cgit as CGI, every path that is not a file goes to cgit.cgi?url=PATH
server.modules = ( "mod_rewrite", "mod_setenv", "mod_cgi", "mod_accesslog" )
server.document-root = "$d/www"
server.bind = "127.0.0.1"
server.port = $CGIT_PORT
server.errorlog = "$d/error.log"
server.max-fds = 16384
server.max-connections = 8192
server.listen-backlog = 4096
server.max-keep-alive-requests = 1000000
server.max-keep-alive-idle = 60
server.max-read-idle = 120
server.max-write-idle = 120
server.follow-symlink = "enable"
index-file.names = ( )
accesslog.filename = "$CGIT_ACCESS_LOG"
setenv.add-environment = ( "CGIT_CONFIG" => "$cgitrc" )
cgi.assign = ( ".cgi" => "" )
url.rewrite-if-not-file = ( "^/([^?]*)(?:\\?(.*))?\$" => "/cgit.cgi?url=\$1&\$2" )
mimetype.assign = ( ".css" => "text/css", ".png" => "image/png", ".ico" => "image/x-icon",
                    ".txt" => "text/plain" )
CONF
  lighttpd -tt -f "$d/lighttpd.conf" >"$d/check.log" 2>&1 || peer_fail "lighttpd (config check)" "$d/check.log"
  bench_start lighttpd "$d/stderr.log" lighttpd -D -f "$d/lighttpd.conf"
  CGIT_PID=$BENCH_LAST_PID
  bench_wait_listen "$CGIT_PORT" 10 "$CGIT_PID" || peer_fail lighttpd "$d/stderr.log" "$d/error.log"
  local code
  code=$(curl -sS --max-time 30 -o "$d/index.html" -w '%{http_code}' "http://127.0.0.1:$CGIT_PORT/") || code=fail
  [ "$code" = 200 ] && grep -q "generator' content='cgit" "$d/index.html" ||
    { bench_log "cgit index: status $code"; peer_fail "lighttpd+cgit" "$d/index.html" "$d/error.log"; }
}

# Lines in lighttpd's access log: one per request that reached the origin. lighttpd writes its log
# through a buffer it flushes about once a second, so this waits until the count stops changing.
peer_origin_requests() {
  local a b i
  a=$(wc -l <"$CGIT_ACCESS_LOG")
  for ((i = 0; i < 10; i++)); do
    sleep 1.2
    b=$(wc -l <"$CGIT_ACCESS_LOG")
    [ "$a" = "$b" ] && break
    a=$b
  done
  echo "$a"
}

peer_origin_idle() {  # SECONDS  until lighttpd has no CGI child running
  local secs=$1 i
  for ((i = 0; i < secs * 10; i++)); do
    [ -z "$(bench_children "$CGIT_PID")" ] && return 0
    sleep 0.1
  done
  return 1
}

# ---------------------------------------------------------------------------------------------
# Varnish in front of an origin

peer_varnish_start() {  # BACKEND_PORT [NAME]
  local backend=$1 name=${2:-varnish} d
  d=$(peer_dir "$name")
  VARNISH_DIR=$d
  VARNISH_PORT=$(bench_free_port)
  cat >"$d/bench.vcl" <<VCL
vcl 4.1;
# generated by bench/peers.sh: the caching peer. ESI for responses that ask for it, gzip for text.
backend origin {
    .host = "127.0.0.1";
    .port = "$backend";
    .connect_timeout = 5s;
    .first_byte_timeout = 180s;
    .between_bytes_timeout = 60s;
}

sub vcl_backend_response {
    if (beresp.http.Surrogate-Control ~ {"content="ESI/1\.0""}) {
        unset beresp.http.Surrogate-Control;
        set beresp.do_esi = true;
    }
    if (beresp.http.Content-Type ~ "^text/") {
        set beresp.do_gzip = true;
    }
}
VCL
  mkdir -p "$d/work"
  chmod 755 "$d/work"
  bench_start "${name/varnish/varnishd}" "$d/stderr.log" varnishd -F -n "$d/work" -a "127.0.0.1:$VARNISH_PORT" \
    -T none -f "$d/bench.vcl" -s malloc,256m -p thread_pool_min=100 -p listen_depth=4096
  VARNISH_PID=$BENCH_LAST_PID
  bench_wait_listen "$VARNISH_PORT" 30 "$VARNISH_PID" || peer_fail varnishd "$d/stderr.log"
}

# ---------------------------------------------------------------------------------------------
# nginx serving static files (ceilings)

peer_nginx_static_start() {  # DOCROOT [gzip_static|-] [SERVER-LINES]
  local root=$1 gz=${2:-} extra=${3:-} d m
  d=$(peer_dir nginx)
  NGINX_PORT=$(bench_free_port)
  {
    cat <<CONF
# generated by bench/peers.sh: static files, the ceiling for a page served from memory
worker_processes 2;
pid $d/nginx.pid;
error_log $d/error.log warn;
events { worker_connections 8192; }
http {
  access_log off;
  default_type text/html;
  sendfile on;
  tcp_nopush on;
  keepalive_timeout 65s;
  keepalive_requests 1000000;
  client_body_temp_path $d/body;
CONF
    for m in proxy fastcgi uwsgi scgi; do
      nginx -V 2>&1 | grep -q -- "--without-http_${m}_module" || echo "  ${m}_temp_path $d/$m;"
    done
    cat <<CONF
  server {
    listen 127.0.0.1:$NGINX_PORT;
    root $root;$([ "$gz" != gzip_static ] || printf '\n    gzip_static on;')$([ -z "$extra" ] || printf '\n%s' "$extra")
  }
}
CONF
  } >"$d/nginx.conf"
  nginx -t -q -p "$d/" -e "$d/error.log" -c "$d/nginx.conf" >"$d/check.log" 2>&1 ||
    peer_fail "nginx (config check)" "$d/check.log"
  bench_start nginx "$d/stderr.log" nginx -p "$d/" -e "$d/error.log" -c "$d/nginx.conf" -g 'daemon off;'
  NGINX_PID=$BENCH_LAST_PID
  bench_wait_listen "$NGINX_PORT" 10 "$NGINX_PID" || peer_fail nginx "$d/stderr.log" "$d/error.log"
}

# ---------------------------------------------------------------------------------------------
# hitch: TLS in front of a backend (Varnish), with a throw-away self-signed certificate

peer_tls_cert() {  # DIR  a throw-away self-signed P-256 certificate for 127.0.0.1/localhost -> DIR/cert.pem DIR/key.pem
  local d=$1
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -sha256 -days 2 -subj /CN=localhost \
    -addext 'subjectAltName=DNS:localhost,IP:127.0.0.1' \
    -keyout "$d/key.pem" -out "$d/cert.pem" >"$d/openssl.log" 2>&1 || peer_fail "openssl req" "$d/openssl.log"
  chmod 644 "$d/key.pem" "$d/cert.pem"
}

peer_hitch_start() {  # BACKEND_PORT
  local backend=$1 d
  d=$(peer_dir hitch)
  HITCH_DIR=$d
  HITCH_PORT=$(bench_free_port)
  peer_tls_cert "$d"
  cat "$d/key.pem" "$d/cert.pem" >"$d/hitch.pem"
  chmod 644 "$d/hitch.pem"
  # hitch refuses to run its workers as root: they drop to the package's user (else nobody)
  local huser="" hgroup=""
  if [ "$(id -u)" = 0 ]; then
    if getent passwd _hitch >/dev/null; then huser=_hitch hgroup=$(id -gn _hitch); else huser=nobody hgroup=nogroup; fi
  fi
  cat >"$d/hitch.conf" <<CONF
# generated by bench/peers.sh
frontend = "[127.0.0.1]:$HITCH_PORT"
backend = "[127.0.0.1]:$backend"
pem-file = "$d/hitch.pem"$([ -z "$huser" ] || printf '\nuser = "%s"\ngroup = "%s"' "$huser" "$hgroup")
workers = 2
daemon = off
syslog = off
log-level = 1
tls-protos = TLSv1.2 TLSv1.3
alpn-protos = "http/1.1"
CONF
  hitch --test --config="$d/hitch.conf" >"$d/check.log" 2>&1 || peer_fail "hitch (config check)" "$d/check.log"
  bench_start hitch "$d/stderr.log" hitch --config="$d/hitch.conf"
  HITCH_PID=$BENCH_LAST_PID
  bench_wait_listen "$HITCH_PORT" 10 "$HITCH_PID" || peer_fail hitch "$d/stderr.log"
}

# ---------------------------------------------------------------------------------------------
# shellac in front of an origin

peer_shellac_start() {  # BIN BACKEND_PORT [KEY=VALUE...]  (extra config lines, e.g. cache=off)
  local bin=$1 backend=$2 d
  shift 2
  d=$(peer_dir shellac)
  SHELLAC_DIR=$d
  SHELLAC_PORT=$(bench_free_port)
  SHELLAC_ADMIN_PORT=""
  [ "${PEER_SHELLAC_ADMIN:-0}" = 1 ] && SHELLAC_ADMIN_PORT=$(bench_free_port)
  cat >"$d/shellac.conf" <<CONF
# generated by bench/peers.sh
listen=127.0.0.1:$SHELLAC_PORT
admin-listen=${SHELLAC_ADMIN_PORT:+127.0.0.1:}${SHELLAC_ADMIN_PORT:-off}
backend=127.0.0.1:$backend
threads=2
access-log=off
CONF
  [ $# = 0 ] || printf '%s\n' "$@" >>"$d/shellac.conf"
  "$bin" -c "$d/shellac.conf" --check >"$d/check.log" 2>&1 || peer_fail "shellac --check" "$d/check.log"
  bench_start shellac "$d/stderr.log" "$bin" -c "$d/shellac.conf"
  SHELLAC_PID=$BENCH_LAST_PID
  bench_wait_log "$d/stderr.log" '^shellac: ready' 10 "$SHELLAC_PID" &&
    bench_wait_listen "$SHELLAC_PORT" 5 "$SHELLAC_PID" || peer_fail shellac "$d/stderr.log"
}

# Whether this shellac build takes these config lines (its --check on a minimal config plus them):
# lets a scenario run against a build that predates a feature and report it instead of dying.
peer_shellac_accepts() {  # BIN LINE...
  local bin=$1 d
  shift
  d=$(peer_dir shellac-probe)
  { echo "listen=127.0.0.1:1"; echo "admin-listen=off"; echo "backend=127.0.0.1:1"; printf '%s\n' "$@"; } >"$d/probe.conf"
  "$bin" -c "$d/probe.conf" --check >"$d/probe.log" 2>&1
}

peer_shellac_metric() {  # NAME  the value of one unlabelled metric at shellac's admin /metrics, or nothing
  [ -n "${SHELLAC_ADMIN_PORT:-}" ] || return 0
  { curl -sS --max-time 10 "http://127.0.0.1:$SHELLAC_ADMIN_PORT/metrics" 2>/dev/null || true; } |
    awk -v n="$1" '$1 == n { print $2; exit }'
}

# ---------------------------------------------------------------------------------------------
# A slow origin (bench/wrk/slow_origin.py): files of ROOT, each answer after DELAY ms, no-store

peer_slow_origin_start() {  # ROOT DELAY-MS -> SLOW_PORT SLOW_PID
  local root=$1 delay=$2 d
  d=$(peer_dir slow-origin)
  SLOW_PORT=$(bench_free_port)
  bench_start slow-origin "$d/stderr.log" python3 "$BENCH_DIR/wrk/slow_origin.py" --port "$SLOW_PORT" \
    --root "$root" --delay-ms "$delay"
  SLOW_PID=$BENCH_LAST_PID
  bench_wait_listen "$SLOW_PORT" 10 "$SLOW_PID" || peer_fail slow-origin "$d/stderr.log"
}

peer_varnish_stat() {  # FIELD...  "FIELD=VALUE ..." from varnishstat of the running Varnish
  local f a=()
  for f in "$@"; do a+=(-f "$f"); done
  { varnishstat -n "$VARNISH_DIR/work" -1 "${a[@]}" 2>/dev/null || true; } | awk '{ printf "%s=%s ", $1, $2 }'
}

peer_stop() { bench_stop "$1" "${2:-15}"; }

# ---------------------------------------------------------------------------------------------

peer_versions() {
  local v=() x
  x=$(lighttpd -v 2>&1 | head -n1 | awk '{ print $1 }') && v+=("$x")
  x=$(dpkg-query -W -f='${Version}' cgit 2>/dev/null) && v+=("cgit (Debian package $x)")
  x=$(varnishd -V 2>&1 | head -n1 | sed 's/^varnishd (\(varnish-[^ ]*\).*/\1/') && v+=("$x")
  x=$(nginx -v 2>&1 | sed 's/^nginx version: //') && v+=("$x")
  x=$(hitch --version 2>&1 | head -n1) && v+=("$x")
  v+=("$(git --version)")
  local IFS=';'
  echo "${v[*]}" | sed 's/;/; /g'
}
