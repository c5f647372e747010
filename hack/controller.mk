# The Kubernetes controller's targets. Include from the top-level Makefile:
#   include hack/controller.mk
# (uses GO from the Makefile; defaults to go).
GO ?= go

.PHONY: test-integration envtest-assets run-controller

envtest-assets: ## print the folder holding kube-apiserver and etcd for envtest (builds kube-apiserver once)
	@hack/envtest-assets.sh

test-integration: ## controller integration tests on a real kube-apiserver + etcd (envtest; builds kube-apiserver once)
	KUBEBUILDER_ASSETS="$$(hack/envtest-assets.sh)" $(GO) test -count=1 -v ./test/integration/...

run-controller: build ## run `serve controller` against $$KUBECONFIG (for instance the local cluster's)
	bin/xds-controller serve controller --namespace $(or $(NAMESPACE),xds-controller-system) --leader-elect
