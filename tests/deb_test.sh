#!/bin/sh
# Checks a built shellac .deb: what it installs, its conffile, its maintainer scripts, and that
# systemd-analyze verify accepts its unit. Usage: tests/deb_test.sh build-deb/shellac_*.deb
# (`make deb-test` builds the package and runs this).
set -eu
deb=${1:?usage: deb_test.sh PACKAGE.deb}
fail=0
check() {  # check DESCRIPTION COMMAND...
  what=$1; shift
  if "$@" >/dev/null 2>&1; then echo "ok   $what"; else echo "FAIL $what"; fail=1; fi
}
contents=$(dpkg-deb -c "$deb")
for path in ./usr/sbin/shellac ./usr/share/man/man8/shellac.8.gz ./usr/share/man/man5/shellac.conf.5.gz \
            ./etc/shellac/shellac.conf ./lib/systemd/system/shellac.service \
            ./usr/lib/sysusers.d/shellac.conf ./etc/logrotate.d/shellac; do
  check "contains $path" sh -c "printf '%s\n' \"\$1\" | grep -q \" \$2\$\"" - "$contents" "$path"
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
dpkg-deb -e "$deb" "$tmp/DEBIAN"
dpkg-deb -x "$deb" "$tmp/root"
check "shellac.conf is a conffile" grep -qx /etc/shellac/shellac.conf "$tmp/DEBIAN/conffiles"
check "every key in shellac.conf is commented out" sh -c "! grep -v -e '^#' -e '^\$' '$tmp/root/etc/shellac/shellac.conf'"
check "postinst creates the user (sysusers)" grep -q 'systemd-sysusers' "$tmp/DEBIAN/postinst"
check "postinst enables and starts the unit" grep -q 'deb-systemd-helper' "$tmp/DEBIAN/postinst"
check "the binary runs and is the right version" sh -c "'$tmp/root/usr/sbin/shellac' --version | grep -q '^shellac '"
check "the packaged configuration is valid" "$tmp/root/usr/sbin/shellac" -c "$tmp/root/etc/shellac/shellac.conf" --check
check "logrotate sends SIGUSR1" grep -q 'signal=SIGUSR1' "$tmp/root/etc/logrotate.d/shellac"
unit="$tmp/root/lib/systemd/system/shellac.service"
check "Type=notify" grep -qx 'Type=notify' "$unit"
check "CAP_NET_BIND_SERVICE" grep -qx 'AmbientCapabilities=CAP_NET_BIND_SERVICE' "$unit"
check "ProtectSystem=strict" grep -qx 'ProtectSystem=strict' "$unit"
check "User=shellac" grep -qx 'User=shellac' "$unit"
# verify checks that ExecStart='s binary exists and that Documentation='s man pages open: both are
# pointed at the package's own files.
mkdir "$tmp/unit"
sed "s|/usr/sbin/shellac|$tmp/root/usr/sbin/shellac|g" "$unit" >"$tmp/unit/shellac.service"
if MANPATH="$tmp/root/usr/share/man" systemd-analyze verify "$tmp/unit/shellac.service" \
     >"$tmp/verify.log" 2>&1; then
  echo "ok   systemd-analyze verify"
else
  echo "FAIL systemd-analyze verify"; cat "$tmp/verify.log"; fail=1
fi
exit $fail
