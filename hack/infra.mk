# Targets of the parameters API, the provisioner (pkg/infra) and the Helm
# chart. Included by the Makefile.
GATEWAY_API_VERSION ?= v1.7.0
CHART_DIR := charts/xds-controller
CONTROLLER_GEN ?= $(GO) run sigs.k8s.io/controller-tools/cmd/controller-gen@v0.23.0

.PHONY: generate-api chart-crds test-infra test-chart

generate-api: ## regenerate api/v1alpha1 deep-copy code and the CRD (config/crd, copied into the chart)
	$(CONTROLLER_GEN) object crd paths=./api/... output:crd:dir=config/crd
	rm -f $(CHART_DIR)/crds/*.yaml
	cp config/crd/*.yaml $(CHART_DIR)/crds/

chart-crds: ## copy the Gateway API standard CRDs of the module in go.mod into the chart
	@dir=$$($(GO) list -m -f '{{.Dir}}' sigs.k8s.io/gateway-api) && test -n "$$dir" && \
	rm -f $(CHART_DIR)/files/gateway-api/standard/*.yaml && \
	cp "$$dir"/config/crd/standard/*.yaml $(CHART_DIR)/files/gateway-api/standard/ && \
	chmod 644 $(CHART_DIR)/files/gateway-api/standard/*.yaml && \
	echo "Gateway API CRDs from $$dir"

test-infra: ## unit tests of the parameters API and the provisioner
	$(GO) test ./api/... ./pkg/infra/...

test-chart: ## helm lint + helm template of the chart, with Helm's Go module (test/chart, its own module)
	cd test/chart && $(GO) test -count=1 ./...
