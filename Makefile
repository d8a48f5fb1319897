# token-sidecar — build, run and test.
#   make demo   install missing system packages, build release, run the self-contained demo
#               (demo OAuth issuer + protected backend + proxy, all on loopback)
#   make run    install missing system packages, build release, run with config/token-sidecar.yaml
#   make test   install missing system packages, run every test (plain, then under ThreadSanitizer)
#   make bench-peers  build release, then token-sidecar vs nginx and HAProxy side by side (~10 min;
#               table in Benchmarks/results/peers-latest.md, chart docs/bench/peers.png)
#   make fuzz   libFuzzer + AddressSanitizer on the request head parser, the response head parser
#               and the chunked decoder, FUZZ_SECONDS (default 60) each; fails on any crash
#   make bench-metrics  what per-request metrics cost: worker-local counters vs swift-metrics +
#               swift-prometheus (a separate package under Benchmarks/metrics-cost)
SWIFT   ?= swift
CONFIG  ?= config/token-sidecar.yaml
BIN     := .build/release/token-sidecar
# System packages: libevent + OpenSSL to build; nginx, python3 (with cryptography, for the verifying
# authorization server), openssl (test keys) and curl for the integration tests.
DEB_PACKAGES := libevent-dev libssl-dev pkg-config nginx-light python3 python3-cryptography openssl curl
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: deps build release demo run test test-plain test-tsan fuzz bigbody bench bench-peers bench-metrics docker-check clean

deps:
	@missing=""; for p in $(DEB_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  echo "installing system packages:$$missing"; \
	  $(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq $$missing; \
	fi

build: deps
	$(SWIFT) build

release: deps
	$(SWIFT) build -c release --static-swift-stdlib --product token-sidecar

demo: release
	$(BIN) demo

run: release
	$(BIN) run --config $(CONFIG)

test: deps test-plain test-tsan

test-plain:
	$(SWIFT) build --build-tests
	$(SWIFT) test

# Objects passed through C callbacks are invisible to Swift's race checker: TSan sees them.
test-tsan:
	$(SWIFT) test --sanitize=thread --scratch-path .build-tsan

fuzz: deps
	Fuzz/run.sh

bigbody: release
	Benchmarks/bigbody.sh

bench: release
	Benchmarks/bench.sh

bench-peers: release
	Benchmarks/peers.sh

docker-check: release
	scripts/check-docker-deps.sh $(BIN)

clean:
	rm -rf .build .build-tsan

bench-metrics:
	cd Benchmarks/metrics-cost && $(SWIFT) run -c release MetricsCost
