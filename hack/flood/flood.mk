# Ledger growth under a flood at the default abuse limits. Included by the top
# Makefile (-include hack/*/*.mk). docs/operations.md (Ledger sizing) has the
# method and the recorded numbers.
#
#   make flood                                  # one hour, ≈ 11 req/s, ~2% of a core
#   make flood FLOOD_DURATION=5m FLOOD_FLAGS='-sample 30s -rate 20'

FLOOD_DURATION ?= 1h
FLOOD_FLAGS ?=

.PHONY: flood
flood: ## ledger records and disk bytes, sampled every minute, under a wrong-key flood at --ip-rpm plus a valid key at its rate (FLOOD_DURATION, FLOOD_FLAGS)
	CGO_ENABLED=0 $(GO) build -trimpath -o $(BIN)/flood ./hack/flood
	$(BIN)/flood -duration $(FLOOD_DURATION) $(FLOOD_FLAGS)
