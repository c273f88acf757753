# The control plane at scale on the kind cluster (issue 10): 50,000
# GatewayKeys and 1,000 ModelAliases against what `make deploy` installed,
# then single-key applies timed until every gateway serves them. Included by
# the top Makefile (-include hack/*/*.mk). docs/BENCHMARK.md has the method
# and the recorded numbers. Every object it creates is labelled
# llmgw.dev/scale=$(SCALE_RUN) and deleted at the end (make scale-cleanup
# after an interrupted run).
#
#   make deploy && make scale
#   make scale SCALE_KEYS=5000 SCALE_FLAGS='-samples 10'

SCALE_KEYS ?= 50000
SCALE_ALIASES ?= 1000
SCALE_RUN ?= scale
SCALE_FLAGS ?=

.PHONY: scale scale-cleanup
scale: ## create SCALE_KEYS GatewayKeys and SCALE_ALIASES ModelAliases on kind, time one-key applies until every gateway serves them, report memory, bytes, reload time; then delete them (SCALE_FLAGS)
	CGO_ENABLED=0 $(GO) build -trimpath -o $(BIN)/scale ./hack/scale
	KUBECONFIG=$(BIN)/kind/kubeconfig $(BIN)/scale -keys $(SCALE_KEYS) -aliases $(SCALE_ALIASES) -run $(SCALE_RUN) -out $(BIN)/scale-report.json $(SCALE_FLAGS)

scale-cleanup: ## delete the objects a scale run left behind (label llmgw.dev/scale=SCALE_RUN)
	CGO_ENABLED=0 $(GO) build -trimpath -o $(BIN)/scale ./hack/scale
	KUBECONFIG=$(BIN)/kind/kubeconfig $(BIN)/scale -cleanup -run $(SCALE_RUN)
