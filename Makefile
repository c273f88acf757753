# llmgw build, test and local-run entry points. `make help` lists them.
SHELL := /usr/bin/env bash
.SHELLFLAGS := -eu -o pipefail -c
GO ?= go
BIN := $(CURDIR)/bin
export GOFLAGS ?= -buildvcs=false

.PHONY: help
help: ## list targets
	@grep -hE '^[a-zA-Z0-9_-]+:.*## ' $(MAKEFILE_LIST) | sed -E 's/:.*## /\t/' | sort

.PHONY: build
build: ## build bin/llmgw
	CGO_ENABLED=0 $(GO) build -trimpath -o $(BIN)/llmgw .

.PHONY: lint
lint: ## go vet + gofmt check
	$(GO) vet ./...
	@out=$$(gofmt -l $$(git ls-files '*.go' | grep -v '^hack/.*/vendor/')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

.PHONY: test
test: envtest ## unit, integration and envtest suites with the race detector
	KUBEBUILDER_ASSETS=$(ENVTEST_ASSETS) LLMGW_REQUIRE_ENVTEST=1 $(GO) test -race -count=1 ./...

.PHONY: fuzz
fuzz: ## run every fuzz target briefly (FUZZTIME, default 10s each)
	hack/fuzz.sh

.PHONY: run
run: build ## start the local stack: both mock providers and the gateway on loopback (llmgw up)
	$(BIN)/llmgw up

.PHONY: test-all
test-all: build lint verify-generated test fuzz kind-ci ## the README's test command: everything CI runs

-include hack/*.mk hack/*/*.mk
