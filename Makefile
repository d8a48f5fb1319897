# token-sidecar — build, run and test.
#   make demo   install missing system packages, build release, run the self-contained demo
#               (demo OAuth issuer + protected backend + proxy, all on loopback)
#   make run    install missing system packages, build release, run with config/token-sidecar.yaml
#   make test   install missing system packages, check every example in config/ (`make
#               test-examples`), then run every test under AddressSanitizer and under
#               ThreadSanitizer, the two suites side by side (`make test-asan`, `make test-tsan`:
#               one of them); `make test-plain` runs them unsanitized
#   make test-examples  build release, then check each config/*.yaml with `token-sidecar check`, and
#               each Kubernetes manifest against the API schema and with check and run inside a
#               sandbox built from its pod spec (read-only root, its volumes; needs root: sudo)
#   make bench-peers  build release, then token-sidecar vs nginx and HAProxy side by side (~10 min;
#               table in Benchmarks/results/peers-latest.md, chart docs/bench/peers.png)
#   make fuzz   libFuzzer + AddressSanitizer on the request head parser, the response head parser,
#               the chunked decoder and the HTTP/2 side (frames through the codec; the head validator
#               against the old translation to HTTP/1.1), side by side for FUZZ_SECONDS (default 60); fails on any crash
#   make abuse  build release, then slowloris, slow POST, slow read, 10,000 dropped connections and
#               100 × 8 KiB headers against the proxy, with a canary every 100 ms (~3.5 min); then the
#               HTTP/2 attacks (rapid reset, CONTINUATION / PING / SETTINGS / reset / empty-frame
#               floods, MadeYouReset, header limits, no-read) against it and, for comparison, nginx
#               and HAProxy (Benchmarks/abuse/h2.sh, ~7 min); then the zero-window attack over TLS
#               and h2c with a canary beside it (Benchmarks/abuse/h2-zero-window.sh, ~45 s)
#   make soak   build release, then SOAK_SECONDS (default 600) of mixed load: RSS and descriptor
#               slopes, token fetches, unprovoked errors
#   make bench-dpop  build release, then DPoP against bearer on the same route: instructions per
#               request, the signature's share, c50 requests/s (fails below 0.5x of bearer)
#   make trace-check  build release, then the OTLP receiver down, slow (3 s) and answering 503: request
#               p50 within 1.2x tracing off + 2 ms, spans dropped and counted, RSS < 64 MiB; export
#               resumes within 10 s once the receiver is back (~10 s)
#   make bench-grpc  build release, then grpcio unary calls/s direct and through the sidecar (h2c
#               route) at concurrency 1 and 20, with the sidecar's CPU per call (~25 s)
#   make bench-metrics  what per-request metrics cost: worker-local counters vs swift-metrics +
#               swift-prometheus (a separate package under Benchmarks/metrics-cost)
SWIFT   ?= swift
CONFIG  ?= config/token-sidecar.yaml
BIN     := .build/release/token-sidecar
# System packages: libevent + OpenSSL to build; nginx, python3 (with cryptography, for the verifying
# authorization server), openssl (test keys) and curl for the integration tests.
DEB_PACKAGES := iproute2 libevent-dev libssl-dev libnghttp2-dev nghttp2-client zlib1g-dev pkg-config nginx-light python3 python3-cryptography python3-venv openssl curl wget nodejs python3-requests redis-server golang-go golang-google-grpc-dev
# h11 (from PyPI, in a test-only virtual environment) is the differential check's reference parser.
H11_VERSION := 0.16.0
# h2 (hyper-h2, from PyPI, with its hpack and hyperframe) in a test-only virtual environment
# (.build-h2attack, made by Benchmarks/abuse/h2.sh itself, which reads this line): the HTTP/2
# attackers and canary of `make abuse`.
H2_VERSION := 4.4.1
# kubernetes-validate (from PyPI, in a test-only virtual environment with the PyYAML the example
# checker reads manifests with) validates the manifests in config/ against the Kubernetes API
# schema of KUBERNETES_VERSION (the newest the package bundles), offline.
# The test peers' Python packages, from PyPI, in a test-only virtual environment (.build-peers):
# pyca/cryptography is the third verifier of the interception CA's name constraints, beside
# `openssl verify` and Python's ssl (its X.509 verifier, in Rust, is its own code, not OpenSSL's);
# websockets is the WebSocket client and server of the upgrade tests.
CRYPTOGRAPHY_VERSION := 48.0.0
WEBSOCKETS_VERSION := 17.4
# grpcio: gRPC's own implementation (C-core) as the test peers of gRPC through the sidecar.
GRPCIO_VERSION := 1.85.3
PEERS_VENV_STAMP := .build-peers/.installed-$(CRYPTOGRAPHY_VERSION)-$(WEBSOCKETS_VERSION)-$(GRPCIO_VERSION)
# opentelemetry-proto (the official OTLP schema's generated Python classes, with the protobuf
# runtime they need), from PyPI, in a test-only virtual environment (.build-otel): the trace
# receiver the trace-export tests send to decodes with it (Tests/ProxyTests/Fixtures/otlp_receiver.py).
OTEL_PROTO_VERSION := 1.45.2
PROTOBUF_VERSION := 7.36.2
OTEL_VENV_STAMP := .build-otel/.installed-$(OTEL_PROTO_VERSION)-$(PROTOBUF_VERSION)
# The vendor SDKs apps keep (from PyPI, in a test-only virtual environment, .build-sdk): the
# placement and placeholder tests run them unchanged through the sidecar (openai: Bearer and
# Azure's api-key; anthropic 1.x: x-api-key).
OPENAI_VERSION := 3.57.0
ANTHROPIC_VERSION := 1.17.0
# ...and the cloud SDKs that find credentials at well-known endpoints (credentialEndpoints:):
# google-auth (GCE metadata, with requests for its transport) and azure-identity (managed identity).
GOOGLE_AUTH_VERSION := 2.63.0
REQUESTS_VERSION := 2.34.2
AZURE_IDENTITY_VERSION := 1.27.0
SDK_VENV_STAMP := .build-sdk/.installed-$(OPENAI_VERSION)-$(ANTHROPIC_VERSION)-$(GOOGLE_AUTH_VERSION)-$(REQUESTS_VERSION)-$(AZURE_IDENTITY_VERSION)
# Django with django-oauth-toolkit (from PyPI, in a test-only virtual environment, .build-dot):
# a real OAuth server rotating refresh tokens for the refresh_token grant's tests.
DJANGO_VERSION := 5.2.8
DOT_VERSION := 3.2.0
DOT_VENV_STAMP := .build-dot/.installed-$(DJANGO_VERSION)-$(DOT_VERSION)
# moto in server mode (a real SigV4 verifier: IAM authentication on), with boto3 and the AWS CLI
# as the apps that sign with placeholder keys (from PyPI, in a test-only virtual environment,
# .build-aws): the AWS signing tests.
MOTO_VERSION := 5.2.1
BOTO3_VERSION := 1.43.11
AWSCLI_VERSION := 1.45.11
AWS_VENV_STAMP := .build-aws/.installed-$(MOTO_VERSION)-$(BOTO3_VERSION)-$(AWSCLI_VERSION)
KUBERNETES_VALIDATE_VERSION := 1.37.0
PYYAML_VERSION := 6.0.3
KUBERNETES_VERSION := 1.37.0
K8S_VENV_STAMP := .build-k8s/.installed-$(KUBERNETES_VALIDATE_VERSION)-$(PYYAML_VERSION)
# The toolchain's symbolizer, so sanitizer reports name functions and lines.
SYMBOLIZER := $(dir $(realpath $(shell command -v $(SWIFT))))llvm-symbolizer
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: deps grpc-go-peer h11-venv peers-venv otel-venv sdk-venv dot-venv aws-venv k8s-venv build release demo run test test-plain test-examples test-asan test-tsan test-sanitizers build-asan build-tsan run-asan run-tsan run-asan-then-fuzz-build fuzz abuse soak bigbody intercept-check trace-check bench-intercept bench-dpop bench-grpc bench bench-peers bench-metrics docker-check clean

deps:
	@missing=""; for p in $(DEB_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  echo "installing system packages:$$missing"; \
	  $(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq $$missing; \
	fi

build: deps
	$(SWIFT) build

# The release flags live in one place, scripts/release-build.sh, which the Dockerfile uses too.
release: deps
	SWIFT=$(SWIFT) scripts/release-build.sh

demo: release
	$(BIN) demo

run: release
	$(BIN) run --config $(CONFIG)

# The grpc-go test peer (client and server), built offline in GOPATH mode against Debian's
# golang-google-grpc-dev: no module download. Rebuilt when its source changes.
GRPC_GO_PEER := .build-grpcgo/grpc_go_peer
grpc-go-peer: $(GRPC_GO_PEER)

$(GRPC_GO_PEER): Tests/ProxyTests/Fixtures/grpc_go_peer/main.go
	mkdir -p $(dir $@)
	GO111MODULE=off GOPATH=/usr/share/gocode GOCACHE=$(CURDIR)/.build-grpcgo/cache GOFLAGS= go build -o $@ $<

h11-venv: .build-h11/bin/python3

.build-h11/bin/python3:
	python3 -m venv .build-h11
	.build-h11/bin/pip install -q h11==$(H11_VERSION)

peers-venv: $(PEERS_VENV_STAMP)

$(PEERS_VENV_STAMP):
	python3 -m venv .build-peers
	.build-peers/bin/pip install -q cryptography==$(CRYPTOGRAPHY_VERSION) websockets==$(WEBSOCKETS_VERSION) grpcio==$(GRPCIO_VERSION)
	touch $@

dot-venv: $(DOT_VENV_STAMP)

$(DOT_VENV_STAMP):
	python3 -m venv .build-dot
	.build-dot/bin/pip install -q django==$(DJANGO_VERSION) django-oauth-toolkit==$(DOT_VERSION)
	touch $@

aws-venv: $(AWS_VENV_STAMP)

$(AWS_VENV_STAMP):
	python3 -m venv .build-aws
	.build-aws/bin/pip install -q "moto[server]==$(MOTO_VERSION)" boto3==$(BOTO3_VERSION) awscli==$(AWSCLI_VERSION)
	touch $@

sdk-venv: $(SDK_VENV_STAMP)

$(SDK_VENV_STAMP):
	python3 -m venv .build-sdk
	.build-sdk/bin/pip install -q openai==$(OPENAI_VERSION) anthropic==$(ANTHROPIC_VERSION) google-auth==$(GOOGLE_AUTH_VERSION) \
	  requests==$(REQUESTS_VERSION) azure-identity==$(AZURE_IDENTITY_VERSION)
	touch $@

otel-venv: $(OTEL_VENV_STAMP)

$(OTEL_VENV_STAMP):
	python3 -m venv .build-otel
	.build-otel/bin/pip install -q opentelemetry-proto==$(OTEL_PROTO_VERSION) protobuf==$(PROTOBUF_VERSION)
	touch $@

k8s-venv: $(K8S_VENV_STAMP)

$(K8S_VENV_STAMP):
	python3 -m venv .build-k8s
	.build-k8s/bin/pip install -q kubernetes-validate==$(KUBERNETES_VALIDATE_VERSION) PyYAML==$(PYYAML_VERSION)
	touch $@

# The test peers (venvs, the grpc-go peer) install while the release build compiles (pip waits on
# the disk, the compiler on the CPU), then the examples, so the suite's summary stays the last thing
# `make test` prints. (The examples beside the ASan build instead: that phase took 226 s in one
# fresh-clone CI run against 207 s one after the other in the run before; not kept.)
test: deps
	@echo "[make test $$(date -u +%T)] release build, test peers"
	$(MAKE) --no-print-directory -j4 release h11-venv peers-venv otel-venv sdk-venv dot-venv aws-venv k8s-venv grpc-go-peer
	@echo "[make test $$(date -u +%T)] examples"
	$(MAKE) --no-print-directory test-examples
	@echo "[make test $$(date -u +%T)] sanitizer builds, then both suites"
	$(MAKE) --no-print-directory test-sanitizers
	@echo "[make test $$(date -u +%T)] done"

# Every config/*.yaml: `check` with placeholder secrets; a Kubernetes manifest also against the API
# schema, and `check` + `run` (one request, one spooled response, probes, SIGTERM) in a sandbox with
# the pod spec's read-only root and volumes. Root for the mount namespace (sudo when not root).
test-examples: release k8s-venv
	$(SUDO) .build-k8s/bin/python3 Tests/Examples/check_examples.py --binary $(BIN) \
	  --kubernetes-validate .build-k8s/bin/kubernetes-validate --kubernetes-version $(KUBERNETES_VERSION)

test-plain: h11-venv peers-venv otel-venv sdk-venv dot-venv aws-venv grpc-go-peer
	$(SWIFT) build --build-tests
	$(SWIFT) test

# Memory errors in the C interop (libevent, OpenSSL, Unmanaged): use after free, overflows,
# double frees, in the test process and in every sidecar process it starts (they inherit
# ASAN_OPTIONS). LeakSanitizer is off: Swift keeps weak-reference side tables behind tagged
# pointers LSan cannot follow, Foundation and XCTest leave allocations at exit, and the sidecar
# exits without freeing its loops (the kernel does) — reports at exit are noise, not leaks.
# Leaks while running are what matters; the soak (`make soak`) measures the RSS slope instead.
test-asan: build-asan run-asan

# Objects passed through C callbacks are invisible to Swift's race checker: TSan sees them.
test-tsan: build-tsan run-tsan

# Both builds one after the other (each takes every core), then both suites at once, each
# printed whole when it ends: the suites spend much of their time waiting (token lifetimes, cache
# outages, timeouts), so side by side they take about as long as the slower one alone (measured
# on 2 cores: 7.2 and 7.5 min together, where one after the other took about 14). Splitting each
# suite in two processes more (the classes that wait on clocks beside the rest) took them to about
# 440 s but made latency-bound tests flaky on 2 cores (four sanitized processes, and the fleet tests'
# sidecars): not done.
#
# The fuzz targets are built as the ASan suite ends (about a minute before the TSan one, on 2
# cores): they take that core for ~30 s, and `make fuzz` then only runs them. (Measured too: the
# three builds — release, ASan, TSan — side by side took 452 s where one after the other took
# 424: the release build's link leaves a core idle, but three compilers on 2 cores lose more.)
#
# CI keeps only the end of what a run prints, and the suite that fails first is printed first: so
# when either fails, the failed tests and any sanitizer report are printed again, last.
test-sanitizers: build-asan build-tsan
	@rm -f .build-asan/suite.rc .build-tsan/suite.rc .build-asan/suite.log .build-tsan/suite.log; rc=0; \
	$(MAKE) --no-print-directory -j2 --output-sync=target run-asan-then-fuzz-build run-tsan || rc=$$?; \
	for s in asan tsan; do \
	  [ "$$(cat .build-$$s/suite.rc 2>/dev/null)" = 0 ] && continue; \
	  echo "[make test] the $$s suite failed (exit $$(cat .build-$$s/suite.rc 2>/dev/null || echo '?')):"; \
	  pattern='error: |failed \(|ERROR: (Address|Thread)Sanitizer|WARNING: ThreadSanitizer|Fatal error|SUMMARY: |signal code'; \
	  if grep -q -E "$$pattern" .build-$$s/suite.log 2>/dev/null; then \
	    grep -E -A3 "$$pattern" .build-$$s/suite.log | head -80; \
	  else tail -20 .build-$$s/suite.log 2>/dev/null; fi; \
	done; exit $$rc

run-asan-then-fuzz-build: run-asan
	bash Fuzz/build.sh 2>&1 | grep -v "Cannot export local symbol" || true

build-asan: h11-venv peers-venv otel-venv sdk-venv dot-venv aws-venv grpc-go-peer
	$(SWIFT) build --build-tests --sanitize=address --scratch-path .build-asan

build-tsan: h11-venv peers-venv otel-venv sdk-venv dot-venv aws-venv grpc-go-peer
	$(SWIFT) build --build-tests --sanitize=thread --scratch-path .build-tsan

# (Each suite's output is kept in its build folder too, for test-sanitizers' summary.)
run-asan:
	{ ASAN_OPTIONS=detect_leaks=0 ASAN_SYMBOLIZER_PATH=$(SYMBOLIZER) \
	  $(SWIFT) test --skip-build --sanitize=address --scratch-path .build-asan 2>&1; \
	  echo $$? > .build-asan/suite.rc; } | tee .build-asan/suite.log; exit $$(cat .build-asan/suite.rc)

# (The pool's random-sequence test is one thread's logic: run whole under ASan, a quarter of its
# seeds under TSan, where it was the slowest test of the suite.)
run-tsan:
	{ POOL_STATE_SEEDS=50 $(SWIFT) test --skip-build --sanitize=thread --scratch-path .build-tsan 2>&1; \
	  echo $$? > .build-tsan/suite.rc; } | tee .build-tsan/suite.log; exit $$(cat .build-tsan/suite.rc)

fuzz: deps
	Fuzz/run.sh

# The HTTP/1.1 scenarios, then the HTTP/2 ones (both run; the worse exit status is make's).
abuse: release
	@rc=0; Benchmarks/abuse/run.sh || rc=$$?; \
	H2_VERSION=$(H2_VERSION) Benchmarks/abuse/h2.sh || { r=$$?; [ $$r -gt $$rc ] && rc=$$r; }; \
	Benchmarks/abuse/h2-zero-window.sh || { r=$$?; [ $$r -gt $$rc ] && rc=$$r; }; \
	exit $$rc

soak: release
	Benchmarks/soak.sh

bigbody: release
	Benchmarks/bigbody.sh

# HTTPS interception in CI: 1 GiB through an intercepted tunnel (intact, peak RSS <= 64 MiB),
# TLS resumption toward the app, and a short c50 comparison with the plain route (printed).
intercept-check: release
	SKIP_INSTR=1 SECONDS_EACH=2 Benchmarks/intercept.sh

# Trace export in CI: the OTLP receiver down, slow and answering 503 must not slow requests (p50 of
# 200 within 1.2x tracing off + 2 ms), spans are dropped and counted, RSS stays < 64 MiB, and export
# resumes within 10 s once the receiver is back (Benchmarks/trace_outage.py).
trace-check: release otel-venv
	.build-otel/bin/python3 Benchmarks/trace_outage.py --binary $(BIN)

# The same with callgrind's instructions per request and 5 s of c50 per form.
bench-intercept: release
	Benchmarks/intercept.sh

bench-grpc: release peers-venv
	Benchmarks/grpc-calls.sh

# DPoP's cost against the same route with a bearer token: instructions per request, the
# signature's share, c50 requests/s and CPU per request (fails below 0.5x of bearer).
bench-dpop: release
	Benchmarks/dpop.sh

bench: release
	Benchmarks/bench.sh

bench-peers: release
	Benchmarks/peers.sh

docker-check: release
	scripts/check-docker-deps.sh $(BIN)

clean:
	rm -rf .build .build-tsan .build-asan .build-fuzz .build-grpcgo .build-h11 .build-peers .build-otel .build-k8s .build-aws .build-h2attack

bench-metrics:
	cd Benchmarks/metrics-cost && $(SWIFT) run -c release MetricsCost
