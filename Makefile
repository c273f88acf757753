# llmgw build, test and local-run entry points. `make help` lists them.
SHELL := /usr/bin/env bash
.SHELLFLAGS := -eu -o pipefail -c
GO ?= go
BIN := $(CURDIR)/bin
export GOFLAGS ?= -buildvcs=false
include $(CURDIR)/hack/versions.env

.PHONY: help
help: ## list targets
	@grep -hE '^[a-zA-Z0-9_-]+:.*## ' $(MAKEFILE_LIST) | sed -E 's/:.*## /\t/' | sort

.PHONY: build
build: ## build bin/llmgw
	CGO_ENABLED=0 $(GO) build -trimpath -o $(BIN)/llmgw .

# The Go modules of this repository: the product and the benchmark harness
# (hack/bench, a module of its own so its plotting and SQLite reader stay out
# of the product's go.mod). lint and verify-tidy cover both.
GO_MODULES := . hack/bench

# golangci-lint (pinned in hack/versions.env) is built from the Go module proxy
# into bin/, not a tool of go.mod: its dependencies stay out of the product's.
GOLANGCI_LINT := $(BIN)/golangci-lint

.PHONY: golangci-lint
golangci-lint: ## install golangci-lint $(GOLANGCI_LINT_VERSION) into bin/ (skipped when that version is there)
	@$(GOLANGCI_LINT) version 2>/dev/null | grep -qF ' version $(GOLANGCI_LINT_VERSION:v%=%) ' || { \
	  echo "[lint] go install golangci-lint $(GOLANGCI_LINT_VERSION) into bin/"; \
	  GOBIN=$(BIN) $(GO) install github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$(GOLANGCI_LINT_VERSION); }

.PHONY: lint
lint: golangci-lint ## gofmt check, then golangci-lint (.golangci.yml: vet, staticcheck, errcheck, ...) on every module
	@out=$$(git ls-files -co --exclude-standard '*.go' | while read -r f; do if [ -f "$$f" ]; then echo "$$f"; fi; done | xargs -r gofmt -l); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	@rc=0; for m in $(GO_MODULES); do echo "[lint] golangci-lint run in $$m"; (cd $$m && $(GOLANGCI_LINT) run --config $(CURDIR)/.golangci.yml ./...) || rc=1; done; exit $$rc

.PHONY: verify-tidy
verify-tidy: ## fail if `go mod tidy` would change go.mod or go.sum of any module
	@rc=0; for m in $(GO_MODULES); do (cd $$m && $(GO) mod tidy -diff) || { echo "go mod tidy changes $$m/go.mod or go.sum: run it there and commit"; rc=1; }; done; exit $$rc

# The README's test command: fast enough for a newcomer (a few minutes warm).
# The full-disk tests mount a small tmpfs, which needs root; CI runs as root
# and must not skip them. Without root: make test LLMGW_REQUIRE_PRIVILEGED=0.
# The quota store tests run a real redis-server, which `make redis-server`
# installs when missing (hack/redis/redis.mk); without root: make test
# LLMGW_REQUIRE_REDIS=0 skips them. The alert-rule tests run promtool, which
# `make promtool` unpacks into bin/ (hack/promtool/promtool.mk);
# LLMGW_REQUIRE_PROMTOOL=0 skips them.
LLMGW_REQUIRE_PRIVILEGED ?= 1
.PHONY: test
test: envtest redis-server promtool ## unit, integration and envtest suites with the race detector, then a fuzz smoke pass (10000 executions a target)
	@echo "[test] go test -race ./... (envtest: $(ENVTEST_ASSETS))"
	KUBEBUILDER_ASSETS=$(ENVTEST_ASSETS) LLMGW_REQUIRE_ENVTEST=1 LLMGW_REQUIRE_PRIVILEGED=$(LLMGW_REQUIRE_PRIVILEGED) LLMGW_REQUIRE_REDIS=$(LLMGW_REQUIRE_REDIS) \
	  PROMTOOL=$(PROMTOOL) LLMGW_REQUIRE_PROMTOOL=$(LLMGW_REQUIRE_PROMTOOL) $(GO) test -race -count=1 ./...
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
TEST_ALL := build lint verify-tidy verify-generated verify-docs verify-chart test test-agents bench-smoke test-e2e-kind
.PHONY: test-all ci-steps
test-all: $(TEST_ALL) ## everything CI runs

ci-steps: ## print test-all's steps, in order (.ci/run runs and times each)
	@echo $(TEST_ALL)

-include hack/*.mk hack/*/*.mk
