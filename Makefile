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

# The README's test command: fast enough for a newcomer (a few minutes warm).
# The full-disk tests mount a small tmpfs, which needs root; CI runs as root
# and must not skip them. Without root: make test LLMGW_REQUIRE_PRIVILEGED=0.
# The quota store tests run a real redis-server, which `make redis-server`
# installs when missing (hack/redis/redis.mk); without root: make test
# LLMGW_REQUIRE_REDIS=0 skips them.
LLMGW_REQUIRE_PRIVILEGED ?= 1
.PHONY: test
test: envtest redis-server ## unit, integration and envtest suites with the race detector, the stack measure without it, then a fuzz smoke pass (10000 executions a target)
	@echo "[test] go test -race ./... (envtest: $(ENVTEST_ASSETS))"
	KUBEBUILDER_ASSETS=$(ENVTEST_ASSETS) LLMGW_REQUIRE_ENVTEST=1 LLMGW_REQUIRE_PRIVILEGED=$(LLMGW_REQUIRE_PRIVILEGED) LLMGW_REQUIRE_REDIS=$(LLMGW_REQUIRE_REDIS) $(GO) test -race -count=1 ./...
	$(GO) test -count=1 -run '^TestOpenStreamCostsNoMoreStackThanAReverseProxy$$' ./gateway/server/
	FUZZTIME=$${FUZZTIME:-10000x} hack/fuzz.sh

.PHONY: fuzz
fuzz: ## run every fuzz target (FUZZTIME each, default 100000x; a duration like 30s works too)
	hack/fuzz.sh

.PHONY: run
run: build ## start the local stack: both mock providers and the gateway on loopback (llmgw up)
	$(BIN)/llmgw up

# What CI runs (.ci/run): the checks, the README's test command, then the kind
# suite (make test-e2e-kind, hack/e2e/e2e.mk), which builds the offline node
# image and the cluster when they are missing.
.PHONY: test-all
test-all: build lint verify-generated verify-docs verify-chart test bench-smoke test-e2e-kind ## everything CI runs

-include hack/*.mk hack/*/*.mk
