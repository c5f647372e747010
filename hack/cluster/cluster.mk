# Local Kubernetes cluster without Docker (hack/cluster/README.md).
# Include from the top-level Makefile:  include hack/cluster/cluster.mk
# All targets need root.
XDS_CLUSTER_DIR := $(patsubst %/,%,$(dir $(lastword $(MAKEFILE_LIST))))
XDS_CLUSTER := $(XDS_CLUSTER_DIR)/cluster

.PHONY: cluster-unit cluster-up cluster-down cluster-status cluster-smoke cluster-ci cluster-images cluster-check-clean cluster-controller-image cluster-testservers-image cluster-ratelimit-images

cluster-unit: ## Unit tests of the cluster tools (image builder, LoadBalancer allocator); no root needed
	cd $(XDS_CLUSTER_DIR)/tools && go test ./...

cluster-up: ## Bring the local cluster up (builds and caches binaries/images on first use)
	$(XDS_CLUSTER) up

cluster-down: ## Tear the local cluster down, leaving nothing behind
	$(XDS_CLUSTER) down

cluster-status: ## Show cluster processes, node and pods
	$(XDS_CLUSTER) status

cluster-smoke: ## Run the smoke test against a running cluster
	$(XDS_CLUSTER) smoke

cluster-ci: ## up + smoke + down (SKIP line when the machine cannot run it); used by .ci/run
	$(XDS_CLUSTER_DIR)/ci-smoke.sh

cluster-images: ## Build every image tarball the cluster imports
	$(XDS_CLUSTER) images

cluster-check-clean: ## Verify no cluster process, mount, netns, bridge, chain or state is left
	$(XDS_CLUSTER) check-clean

cluster-controller-image: ## Build the controller image from ./cmd/xds-controller and import it into a running cluster
	GO_IMAGE_LDFLAGS='$(LDFLAGS)' $(XDS_CLUSTER) go-image ./cmd/xds-controller xds-controller ghcr.io/xds-controller/xds-controller:dev

cluster-testservers-image: ## Build the e2e test servers' image (ext_authz gRPC/HTTP, OTLP receiver, OpenID provider: internal/testservers/cmd/xds-testservers) and import it into a running cluster
	$(XDS_CLUSTER) go-image ./internal/testservers/cmd/xds-testservers xds-testservers ghcr.io/xds-controller/xds-testservers:e2e

cluster-ratelimit-images: ## Build the global rate-limit service's and Redis's images (the chart's rateLimit.image and rateLimit.redis.image: hack/install-ratelimit.sh's binary, Debian's redis-server) and import them into a running cluster
	$(XDS_CLUSTER) ratelimit-images
