# The upstream Gateway API conformance suite on the local cluster
# (hack/cluster), one run and one report per deployment mode. Include from
# the top-level Makefile:  include hack/conformance.mk   (needs root, like
# the cluster). conformance/README.md has the details and how to run the
# suite on any other cluster.
#
#   make conformance MODE=shared          brings the cluster up when it is not,
#   make conformance MODE=dedicated       builds and imports the controller
#                                         image (stamped with $(VERSION); the
#                                         chart gets its content-addressed tag,
#                                         so an upgrade runs this very build), helm
#                                         installs/upgrades the chart with that
#                                         mode, runs the suite, writes
#                                         conformance/reports/<gateway-api version>/
#                                         <channel>-$(VERSION)-<mode>-report.yaml
#                                         and prints the summary.
#   CHANNEL=standard|experimental         the Gateway API release channel of the
#                                         CRDs the chart installs (default
#                                         standard). Switching on one cluster
#                                         deletes the safe-upgrades policy
#                                         (standard -> experimental) or the
#                                         x-k8s.io CRDs (experimental ->
#                                         standard) first, and says so.
#   PROFILES=GATEWAY-HTTP,...             profiles (default: the ones we claim,
#                                         GATEWAY-HTTP,GATEWAY-GRPC,GATEWAY-TLS,
#                                         GATEWAY-TCP,GATEWAY-UDP)
#   RUN_TEST=HTTPRouteSimpleSameNamespace one test only (no report written)
#   SKIP_TESTS=A,B   TRY_FEATURES=F,G     see conformance/conformance_test.go
#
# On the shared local cluster, wrap it: flock -o /tmp/xds-cluster.lock make conformance MODE=shared
# (-o: the lock stays with flock, never with a daemon the command starts)
MODE ?= shared
CHANNEL ?= standard
PROFILES ?= GATEWAY-HTTP,GATEWAY-GRPC,GATEWAY-TLS,GATEWAY-TCP,GATEWAY-UDP
RUN_TEST ?=
SKIP_TESTS ?=
TRY_FEATURES ?=
CONFORMANCE_TIMEOUT ?= 40m

.PHONY: conformance
conformance: ## the Gateway API conformance suite on the local cluster, MODE=shared|dedicated [CHANNEL=standard|experimental] [PROFILES=...] [RUN_TEST=...]: writes conformance/reports/
	@set -o pipefail; \
	case "$(MODE)" in shared|dedicated) ;; *) echo "MODE must be shared or dedicated, not '$(MODE)'"; exit 2;; esac; \
	case "$(CHANNEL)" in standard|experimental) ;; *) echo "CHANNEL must be standard or experimental, not '$(CHANNEL)'"; exit 2;; esac; \
	start=$$(date +%s); \
	if hack/cluster/cluster kubectl get --raw=/readyz >/dev/null 2>&1; then \
	  echo "conformance: local cluster already up"; \
	  hack/cluster/cluster refresh-tools || exit 1; \
	else \
	  XDS_CLUSTER_SKIP_CONTROLLER=1 hack/cluster/cluster up || exit 1; \
	fi; \
	$(MAKE) --no-print-directory cluster-controller-image || exit 1; \
	rc=0; \
	ref=$$(hack/cluster/cluster go-image-ref xds-controller) || exit 1; \
	(cd conformance && KUBECONFIG=/var/lib/xds-cluster/admin.kubeconfig \
	  CHART_SET="image.tag=$${ref##*:}$${CHART_SET:+,$$CHART_SET}" \
	  INSTALL_CHART=../charts/xds-controller MODE='$(MODE)' CHANNEL='$(CHANNEL)' PROFILES='$(PROFILES)' \
	  RUN_TEST='$(RUN_TEST)' SKIP_TESTS='$(SKIP_TESTS)' TRY_FEATURES='$(TRY_FEATURES)' \
	  $(GO) test -count=1 -v -timeout $(CONFORMANCE_TIMEOUT) -ldflags '$(LDFLAGS)' -run '^TestConformance$$' . \
	  2>&1 | tee /tmp/xds-conformance-$(MODE).log \
	  | { grep --line-buffered -E '^ {0,4}--- (PASS|FAIL)|^(ok|FAIL|PASS)\b|^====|^GATEWAY|^MESH|^  (failed|skipped):|^report:|chart .* installed|Gateway API CRDs' || true; } ) || rc=$$?; \
	echo "conformance MODE=$(MODE) CHANNEL=$(CHANNEL): rc=$$rc, $$(( $$(date +%s) - start ))s; full log in /tmp/xds-conformance-$(MODE).log"; \
	exit $$rc
