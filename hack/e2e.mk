# End-to-end tests on the local cluster (hack/cluster). Include from the
# top-level Makefile:  include hack/e2e.mk   (needs root, like the cluster).
#
#   make e2e                    brings the cluster up when it is not (warm: ~30 s),
#                               builds and imports the controller image (and
#                               the test servers' and the rate-limit service's
#                               and Redis's images), runs
#                               test/e2e-cluster (helm install, kubectl apply
#                               examples/, HTTP in Shared and in
#                               Dedicated mode) and LEAVES THE CLUSTER RUNNING
#                               (`make cluster-down` stops it).
#   make e2e E2E_DOWN=1         the same, then tears the cluster down.
#   make e2e E2E_RUN=Shared     only the tests matching this -run pattern
#                               (e.g. TestGatewaysOnTheLocalCluster/Dedicated).
E2E_DOWN ?=
E2E_RUN ?=
E2E_TIMEOUT ?= 30m

.PHONY: e2e
e2e: ## e2e on the local cluster: helm install + kubectl apply -f examples/ in Shared and Dedicated mode (cluster left running; E2E_DOWN=1 tears it down)
	@set -o pipefail; \
	if hack/cluster/cluster kubectl get --raw=/readyz >/dev/null 2>&1; then \
	  echo "e2e: local cluster already up"; \
	else \
	  XDS_CLUSTER_SKIP_CONTROLLER=1 hack/cluster/cluster up || exit 1; \
	fi; \
	$(MAKE) --no-print-directory cluster-controller-image || exit 1; \
	$(MAKE) --no-print-directory cluster-testservers-image || exit 1; \
	$(MAKE) --no-print-directory cluster-ratelimit-images || exit 1; \
	rc=0; \
	(cd test/e2e-cluster && KUBECONFIG=/var/lib/xds-cluster/admin.kubeconfig \
	  $(GO) test -count=1 -v -timeout $(E2E_TIMEOUT) $(if $(E2E_RUN),-run '$(E2E_RUN)') ./...) || rc=$$?; \
	if [ -n "$(E2E_DOWN)" ]; then hack/cluster/cluster down; \
	else echo "e2e: the local cluster is still running (hack/cluster/cluster down, or make e2e E2E_DOWN=1)"; fi; \
	exit $$rc

# The propagation benchmark (issue 14; docs/performance.md) on the local
# cluster: N routes of ../shared/bench/gen-routes.py in MODE=shared|dedicated.
#   make bench-cluster N=1000 MODE=shared
# prints bulk (all Accepted / all answering after the last create), single
# route create/edit/delete (median / p99 / max over BENCH_SAMPLES), churn and
# rolling-restart request failures, and the controller's CPU and peak RSS per
# phase; the summary is also written to /tmp/xds-bench-cluster-<mode>-<N>.txt.
# BENCH_PROFILE=DIR also writes CPU profiles of the controller replicas
# during the single-route phase into DIR (go tool pprof -top FILE).
# PROXIES=P1,P2,... adds the fan-out phase (issue 30): P1, then P2... simulated proxies
# (test/simproxy/simfleet, run on this node) join the Gateway's fleet and
# BENCH_SAMPLES route creates are timed at all of them.
#   make bench-cluster N=3000 PROXIES=10,100,1000 MODE=shared BENCH_SAMPLES=20 BENCH_CHURN=10s
N ?= 1000
PROXIES ?=
BENCH_SAMPLES ?= 50
BENCH_CHURN ?= 60s
BENCH_PROFILE ?=

.PHONY: bench-cluster
bench-cluster: ## propagation benchmark on the local cluster: N routes (default 1000), MODE=shared|dedicated, PROXIES=P simulated proxies; prints bulk, single-route, churn, restart (and fan-out) figures
	@out=/tmp/xds-bench-cluster-$(MODE)-$(N).txt; rm -f $$out; \
	if [ -n "$(PROXIES)" ]; then $(GO) build -o .cache/bin/simfleet ./test/simproxy/simfleet || exit 1; fi; \
	E2E_SIMFLEET=$(CURDIR)/.cache/bin/simfleet E2E_BENCH_PROXIES=$(PROXIES) E2E_BENCH_ROUTES=$(N) E2E_BENCH_MODE=$(MODE) E2E_BENCH_SAMPLES=$(BENCH_SAMPLES) E2E_BENCH_CHURN=$(BENCH_CHURN) E2E_BENCH_OUT=$$out E2E_BENCH_PROFILE=$(BENCH_PROFILE) \
	  $(MAKE) --no-print-directory e2e E2E_RUN='^TestPropagationBenchmark$$' E2E_TIMEOUT=90m; rc=$$?; \
	echo "== bench-cluster N=$(N) MODE=$(MODE)"; cat $$out 2>/dev/null; exit $$rc
