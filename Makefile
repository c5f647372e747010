# xds-controller — the project's vocabulary. `make help` lists the targets.
SHELL := /bin/bash
GO ?= go
CONTROLLER_GEN := $(GO) run sigs.k8s.io/controller-tools/cmd/controller-gen@v0.23.0

.PHONY: help build test golden generate bench
help: ## list the targets
	@grep -hE '^[a-zA-Z_-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-14s %s\n", $$1, $$2}'

build: ## build bin/xds-controller
	$(GO) build -o bin/xds-controller ./cmd/xds-controller

generate: ## regenerate deep-copy code
	$(CONTROLLER_GEN) object paths=./pkg/ir/...

golden: ## regenerate the golden files (review the diff!)
	$(GO) test ./pkg/translate -run 'TestGolden' -update

test: ## run the test suite
	$(GO) test ./...
