# Gateway latency benchmarks. Included by the top Makefile (-include
# hack/*/*.mk); paths are relative to the repo root. docs/BENCHMARK.md has
# the method and the recorded results.
#
#   make bench                                  # the full table (~5 min on 2 busy cores)
#   make bench BENCH_N=5000 BENCH_STREAM=off    # quicker
#   make bench BENCH_FLAGS='-log warn,info -cpuprofile bin/bench.prof'

BENCH_N ?= 20000
BENCH_C ?= 1,8
BENCH_STREAM ?= both
BENCH_LOG ?= warn
BENCH_FLAGS ?=

.PHONY: bench
bench: ## gateway vs direct-to-mock added latency, interleaved, + throughput at c=64 (BENCH_N, BENCH_C, BENCH_STREAM, BENCH_LOG, BENCH_FLAGS)
	CGO_ENABLED=0 $(GO) build -trimpath -o $(BIN)/latency-bench ./hack/bench/latency
	$(BIN)/latency-bench -n $(BENCH_N) -c $(BENCH_C) -stream $(BENCH_STREAM) -log $(BENCH_LOG) $(BENCH_FLAGS)

.PHONY: bench-go
bench-go: ## Go benchmarks of the gateway path vs the mock (gateway/server/bench_test.go)
	$(GO) test -run='^$$' -bench=. -benchtime=5000x ./gateway/server/
