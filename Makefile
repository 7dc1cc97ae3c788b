# Two commands matter: `make run` and `make test`. Both install what is missing (Debian 12 packages),
# configure build/ and compile; neither downloads anything but Debian packages. (varnish is the
# reference the ESI differential test compares against, cgit the one the gitfrag tests compare with,
# openssl the CLI the TLS tests make their certificates with.)
BUILD   ?= build
MESON   ?= meson
# CI builds with -Werror; a user's build only warns.
WERROR  := $(if $(CI),true,false)
SUDO    := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
DEPS    := meson ninja-build pkg-config g++ git libevent-dev libssl-dev zlib1g-dev libgit2-dev \
           libre2-dev libgtest-dev libgmock-dev varnish cgit openssl
ARGS    ?=

.PHONY: all deps build run test asan release tidy format clean

all: build

deps:
	@missing=$$(for p in $(DEPS); do dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null | grep -q '^install ok installed' || echo $$p; done); \
	if [ -n "$$missing" ]; then \
	  echo "installing:" $$missing; \
	  $(SUDO) apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq --no-install-recommends $$missing; \
	fi

$(BUILD)/build.ninja: | deps
	$(MESON) setup $(BUILD) -Dwerror=$(WERROR)

build: deps $(BUILD)/build.ninja
	$(MESON) configure $(BUILD) -Dwerror=$(WERROR) >/dev/null
	ninja -C $(BUILD)

# Starts shellac on its embedded default (127.0.0.1:8080) from this checkout.
run: build
	./$(BUILD)/proxy/shellac $(ARGS)

test: build
	$(MESON) test -C $(BUILD) --print-errorlogs --num-processes 2

# ASan + UBSan build of everything, then the whole suite under it.
asan: deps
	[ -f build-asan/build.ninja ] || $(MESON) setup build-asan -Db_sanitize=address,undefined -Db_lundef=false
	ninja -C build-asan && $(MESON) test -C build-asan --print-errorlogs --num-processes 2

# Optimised build (-O2, LTO) for benchmarks and packaging.
release: deps
	[ -f build-release/build.ninja ] || $(MESON) setup build-release --buildtype=release -Db_lto=true -Dtests=false
	ninja -C build-release

tidy: build
	run-clang-tidy -p $(BUILD) -quiet '(conf|proxy|cache|esi|gitfrag)/.*\.cc$$'

format:
	clang-format -i $$(git ls-files '*.cc' '*.h')

clean:
	rm -rf $(BUILD) build-asan build-release
