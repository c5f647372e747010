# Targets of the parameters API, the provisioner (pkg/infra) and the Helm
# chart. Included by the Makefile.
GATEWAY_API_VERSION ?= v1.7.0
CHART_DIR := charts/xds-controller
# The subchart that renders the Gateway API CRDs (gatewayAPI.installCRDs).
GATEWAY_API_CRDS_DIR := $(CHART_DIR)/charts/gateway-api-crds/files
CONTROLLER_GEN ?= $(GO) run sigs.k8s.io/controller-tools/cmd/controller-gen@v0.23.0

.PHONY: generate-api chart-crds test-infra test-chart

generate-api: ## regenerate api/v1alpha1 deep-copy code and the CRD (config/crd, copied into the chart)
	$(CONTROLLER_GEN) object crd paths=./api/... output:crd:dir=config/crd
	rm -f $(CHART_DIR)/crds/*.yaml
	cp config/crd/*.yaml $(CHART_DIR)/crds/

chart-crds: ## copy the Gateway API CRDs of both channels (standard, experimental) of the module in go.mod into the chart's gateway-api-crds subchart
	@dir=$$($(GO) list -m -f '{{.Dir}}' sigs.k8s.io/gateway-api) && test -n "$$dir" && \
	for ch in standard experimental; do \
	  dst=$(GATEWAY_API_CRDS_DIR)/$$ch && mkdir -p $$dst && rm -f $$dst/*.yaml && \
	  cp "$$dir"/config/crd/$$ch/gateway.networking*.yaml $$dst/ && \
	  chmod 644 $$dst/*.yaml || exit 1; \
	done && \
	echo "Gateway API CRDs (standard, experimental) from $$dir into $(GATEWAY_API_CRDS_DIR)"

test-infra: ## unit tests of the parameters API and the provisioner
	$(GO) test ./api/... ./pkg/infra/...

test-chart: ## helm lint + helm template of the chart, with Helm's Go module (test/chart, its own module)
	cd test/chart && $(GO) test -count=1 ./...
