# Benchmarks. Included by the top Makefile (-include hack/*/*.mk); paths are
# relative to the repo root. docs/BENCHMARK.md has the method; reports go to
# docs/benchmarks/<YYYY-MM-DD>-<name>/.
#
#   make bench                                      # the full run (about 14 min on 2 cores)
#   make bench BENCH_NAME=ledger-fix BENCH_NOTE='quiet machine, load < 1'
#   make bench BENCH_FLAGS='-rounds 1 -rates 500,1000 -variant llmgw-warn=--log-level=warn'
#   make bench-smoke                                # every phase, tiny; correctness only (CI)
#   make bench-latency                              # in-process gateway vs mock, with -cpuprofile
#   make bench-go                                   # Go benchmarks of the gateway path
#   hack/bench/ab-cpu.sh revproxy bin/llmgw ...      # CPU per request, A against B (after make bench-tools)
#   hack/bench/ab-cpu.sh -measure instructions ...  # user-space instructions per request, under callgrind
#   go run ./hack/bench/resident -pid PID           # which parts of a running binary are resident
#   hack/bench/rss-floor.sh                         # resident memory of the package inits alone

BENCH_NAME ?= run
BENCH_ROUNDS ?= 3
BENCH_NOTE ?=
BENCH_FLAGS ?=

.PHONY: bench-tools
bench-tools: build
	CGO_ENABLED=0 $(GO) build -trimpath -o $(BIN)/gwbench ./hack/bench/gwbench
	CGO_ENABLED=0 $(GO) build -trimpath -o $(BIN)/bench-revproxy ./hack/bench/revproxy

.PHONY: bench
bench: bench-tools ## direct vs a bare reverse proxy vs llmgw, each its own process: c=1, c=8, open loop, 1,000 streams; report in docs/benchmarks/ (BENCH_NAME, BENCH_ROUNDS, BENCH_NOTE, BENCH_FLAGS)
	$(BIN)/gwbench -llmgw $(BIN)/llmgw -revproxy $(BIN)/bench-revproxy -rounds $(BENCH_ROUNDS) \
		-name '$(BENCH_NAME)' -note '$(BENCH_NOTE)' $(BENCH_FLAGS)

.PHONY: bench-smoke
bench-smoke: bench-tools ## make bench with tiny settings into a temp dir: zero errors, records == requests, report written; no times asserted
	d=$$(mktemp -d); trap 'rm -rf "$$d"' EXIT; \
	$(BIN)/gwbench -smoke -llmgw $(BIN)/llmgw -revproxy $(BIN)/bench-revproxy -out-dir "$$d/report"

# The earlier in-process tool: gateway and mock alpha in one process, request
# pairs interleaved; kept for its CPU profile of the gateway path.
BENCH_N ?= 20000
BENCH_C ?= 1,8
BENCH_STREAM ?= both
BENCH_LOG ?= warn
LATENCY_FLAGS ?=

.PHONY: bench-latency
bench-latency: ## in-process gateway vs direct added latency (hack/bench/latency; BENCH_N, BENCH_C, BENCH_STREAM, BENCH_LOG, LATENCY_FLAGS='-cpuprofile bin/gw.prof -profile-gateway-only')
	CGO_ENABLED=0 $(GO) build -trimpath -o $(BIN)/latency-bench ./hack/bench/latency
	$(BIN)/latency-bench -n $(BENCH_N) -c $(BENCH_C) -stream $(BENCH_STREAM) -log $(BENCH_LOG) $(LATENCY_FLAGS)

BENCH_GO_PKGS ?= ./gateway/server/
BENCH_GO_TIME ?= 5000x

.PHONY: bench-go
bench-go: ## Go benchmarks with -benchmem (BENCH_GO_PKGS, default the gateway path vs the mock in gateway/server/bench_test.go; BENCH_GO_TIME)
	$(GO) test -run='^$$' -bench=. -benchmem -benchtime=$(BENCH_GO_TIME) $(BENCH_GO_PKGS)
