# Two commands matter: `make run` and `make test`. Both install what is missing (Debian 12 packages),
# configure build/ and compile; neither downloads anything but Debian packages. (varnish is the
# reference the ESI differential test compares against, cgit the one the gitfrag tests compare with,
# openssl the CLI the TLS tests make their certificates with; `make test` alone also installs
# TEST_DEPS: chromium, the browser the status page test loads the page in, systemd for
# systemd-analyze verify on the packaged unit, memcached and haproxy, the peers the cluster
# tests run shellac nodes with, and wrk, which the benchmarks' crawl walk is tested under.)
BUILD   ?= build
MESON   ?= meson
# CI builds with -Werror; a user's build only warns.
WERROR  := $(if $(CI),true,false)
SUDO    := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
DEPS    := meson ninja-build pkg-config g++ git libevent-dev libssl-dev zlib1g-dev libbz2-dev liblzma-dev \
           libdeflate-dev libisal-dev libgit2-dev libre2-dev libsystemd-dev libmemcached-dev libgoogle-perftools-dev libgtest-dev libgmock-dev varnish cgit openssl
TEST_DEPS := systemd chromium memcached haproxy wrk
# What `make deb` needs besides DEPS' build libraries (dpkg-buildpackage and debhelper).
DEB_DEPS := dpkg-dev debhelper meson ninja-build pkg-config g++ libevent-dev libssl-dev zlib1g-dev \
            libbz2-dev liblzma-dev libdeflate-dev libisal-dev libgit2-dev libre2-dev libsystemd-dev libmemcached-dev \
            libgoogle-perftools-dev
# `make fuzz` only: clang and its libFuzzer/sanitizer runtimes.
FUZZ_DEPS := clang-14 libclang-rt-14-dev
FUZZ_SECONDS ?= 60
ARGS    ?=

.PHONY: all deps test-deps fuzz-deps build run test asan fuzz release tidy format clean deb deb-test

all: build

# Installs the Debian packages of $(1) that are missing.
define install_missing
	@missing=$$(for p in $(1); do dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null | grep -q '^install ok installed' || echo $$p; done); \
	if [ -n "$$missing" ]; then \
	  echo "installing:" $$missing; \
	  $(SUDO) apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq --no-install-recommends $$missing; \
	fi
endef

deps:
	$(call install_missing,$(DEPS))

test-deps: deps
	$(call install_missing,$(TEST_DEPS))

fuzz-deps: deps
	$(call install_missing,$(FUZZ_DEPS))

$(BUILD)/build.ninja: | deps
	$(MESON) setup $(BUILD) -Dwerror=$(WERROR)

build: deps $(BUILD)/build.ninja
	$(MESON) configure $(BUILD) -Dwerror=$(WERROR) >/dev/null
	ninja -C $(BUILD)

# Starts shellac on its embedded default (127.0.0.1:8080) from this checkout.
run: build
	./$(BUILD)/proxy/shellac $(ARGS)

test: build test-deps
	$(MESON) test -C $(BUILD) --print-errorlogs --num-processes 2

# ASan + UBSan build of everything, then the whole suite under it. A UBSan report ends the process
# that made it, as an ASan one does (by default UBSan prints and goes on), so the test fails.
asan: test-deps
	[ -f build-asan/build.ninja ] || $(MESON) setup build-asan -Db_sanitize=address,undefined -Db_lundef=false
	ninja -C build-asan && \
	  UBSAN_OPTIONS=$${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1} \
	  $(MESON) test -C build-asan --print-errorlogs --num-processes 2

# libFuzzer targets (fuzz/) built with clang, ASan and UBSan in build-fuzz/, each run for
# FUZZ_SECONDS on a copy of its seed corpus; fails on any finding (kept in build-fuzz/fuzz/findings/).
fuzz: fuzz-deps
	[ -f build-fuzz/build.ninja ] || CXX=clang++-14 $(MESON) setup build-fuzz -Dfuzz=true -Dtests=false \
	  -Db_sanitize=address,undefined -Db_lundef=false
	$(MESON) configure build-fuzz -Dwerror=$(WERROR) >/dev/null
	ninja -C build-fuzz && fuzz/run.sh build-fuzz $(FUZZ_SECONDS)

# Optimised build (-O2, LTO) for benchmarks and packaging.
release: deps
	[ -f build-release/build.ninja ] || $(MESON) setup build-release --buildtype=release -Db_lto=true -Dtests=false
	ninja -C build-release

tidy: build
	run-clang-tidy -p $(BUILD) -quiet '(conf|proxy|cache|esi|gitfrag)/.*\.cc$$'

format:
	clang-format -i $$(git ls-files '*.cc' '*.h')

# The Debian package: build-deb/shellac_VERSION_ARCH.deb, built by dpkg-buildpackage from a copy of
# this checkout's files (tracked and new, not ignored ones), so nothing is written beside it.
deb:
	$(call install_missing,$(DEB_DEPS))
	rm -rf build-deb && mkdir -p build-deb/shellac
	git ls-files -z --cached --others --exclude-standard | xargs -0 cp --parents -t build-deb/shellac
	cd build-deb/shellac && dpkg-buildpackage -us -uc -b
	@ls build-deb/*.deb

# Builds the package and checks what it holds (slow: a full optimised build; not part of `make test`).
deb-test: deb
	tests/deb_test.sh build-deb/shellac_*.deb

clean:
	rm -rf $(BUILD) build-asan build-release build-fuzz build-deb
