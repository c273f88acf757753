# Benchmarks. Included by the top Makefile (-include hack/*/*.mk); paths are
# relative to the repo root. hack/bench is a Go module of its own: the harness
# reaches llmgw only through its command line, HTTP, /metrics, /proc and the
# ledger file, so it can measure any llmgw binary, an older one included.
# docs/BENCHMARK.md has the method; reports go to docs/benchmarks/<YYYY-MM-DD>-<name>/.
#
#   make bench                                       # bin/llmgw, 3 rounds (about 15 min on 2 cores)
#   make bench LLMGW=/path/to/old/llmgw BENCH_NAME=old
#   make bench BENCH_FLAGS='-gateway old=/path/to/old/llmgw -rss-baseline old'   # both in one run
#   make bench BENCH_FLAGS='-rounds 1 -rates 500,1000'
#   make bench-smoke                                 # every phase, tiny; correctness only (CI)
#   make bench-go                                    # Go benchmarks of the gateway path
#
# LLMGW is the gateway under test; the mock providers always run bin/llmgw
# (MOCKS), so two runs against different gateways share the same mocks.

LLMGW ?= $(BIN)/llmgw
MOCKS ?= $(BIN)/llmgw
BENCH_NAME ?= run
BENCH_ROUNDS ?= 3
BENCH_NOTE ?=
BENCH_FLAGS ?=

.PHONY: bench-tools
bench-tools: build
	cd hack/bench && CGO_ENABLED=0 $(GO) build -trimpath -o $(BIN)/gwbench ./gwbench
	cd hack/bench && CGO_ENABLED=0 $(GO) build -trimpath -o $(BIN)/bench-revproxy ./revproxy

.PHONY: bench
bench: bench-tools ## LLMGW (default bin/llmgw) against a bare reverse proxy and direct calls, each its own process: c=1, c=8 CPU, open loop, 1,000 streams' RssAnon, records; report in docs/benchmarks/ (BENCH_NAME, BENCH_ROUNDS, BENCH_NOTE, BENCH_FLAGS)
	$(BIN)/gwbench -mocks $(MOCKS) -gateway llmgw=$(LLMGW) -revproxy $(BIN)/bench-revproxy -rounds $(BENCH_ROUNDS) \
		-name '$(BENCH_NAME)' -note '$(BENCH_NOTE)' $(BENCH_FLAGS)

.PHONY: bench-smoke
bench-smoke: bench-tools ## the harness's own tests, then make bench with tiny settings into a temp dir: zero errors, records == requests, report written; no times asserted
	cd hack/bench && $(GO) test -count=1 ./...
	d=$$(mktemp -d); trap 'rm -rf "$$d"' EXIT; \
	$(BIN)/gwbench -smoke -mocks $(MOCKS) -gateway llmgw=$(LLMGW) -revproxy $(BIN)/bench-revproxy -out-dir "$$d/report"

BENCH_GO_PKGS ?= ./gateway/server/
BENCH_GO_TIME ?= 5000x

.PHONY: bench-go
bench-go: ## Go benchmarks with -benchmem (BENCH_GO_PKGS, default the gateway path in gateway/server; BENCH_GO_TIME)
	$(GO) test -run='^$$' -bench=. -benchmem -benchtime=$(BENCH_GO_TIME) $(BENCH_GO_PKGS)

# The dashboard picture of docs/operations.md, from the real dashboard JSON and
# real data: hack/bench/dashshot/run.sh drives a few minutes of traffic through
# the kind cluster (`make kind-up deploy` first), scrapes the gateways with a
# local Prometheus (unpacked from Debian's package into bin/) and draws
# charts/llmgw/dashboards/llmgw.json from it with dashshot, no Grafana needed.
# Knobs (DASHSHOT_TRAFFIC seconds, DASHSHOT_OUT, ...): hack/bench/dashshot/README.md.
.PHONY: dashboard-image
dashboard-image: build ## docs/images/dashboard.png: the chart's Grafana dashboard drawn by dashshot over a few minutes of traffic on kind (make kind-up deploy first)
	cd hack/bench && CGO_ENABLED=0 $(GO) build -trimpath -o $(BIN)/dashshot ./dashshot
	LLMGW=$(BIN)/llmgw DASHSHOT=$(BIN)/dashshot hack/bench/dashshot/run.sh
