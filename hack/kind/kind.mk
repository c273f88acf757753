# kind cluster with no image registry: everything built from Go modules and
# Debian packages (hack/kind/README.md). Included by the top Makefile.
.PHONY: kind-image kind-up kind-down kind-smoke kind-ci

kind-image: ## build the offline kind node image and everything in it (cached; skipped with KIND_NODE_IMAGE)
	@if [ -n "$${KIND_NODE_IMAGE:-}" ]; then echo "[kind] KIND_NODE_IMAGE=$$KIND_NODE_IMAGE: no local node image build"; \
	else hack/kind/image.sh >/dev/null; fi

kind-up: ## create the single-node kind cluster llmgw and wait until it is Ready (no-op when healthy)
	hack/kind/up.sh

kind-down: ## delete the kind cluster and its docker network (cached images stay)
	hack/kind/down.sh

kind-smoke: ## smoke-check the kind cluster: pod, PVC, Service DNS, kind load, port-forward
	hack/kind/smoke.sh

kind-ci: ## kind-image + kind-up + kind-smoke, timed (what CI runs)
	@t0=$$(date +%s); \
	$(MAKE) --no-print-directory kind-image && \
	$(MAKE) --no-print-directory kind-up && \
	$(MAKE) --no-print-directory kind-smoke; rc=$$?; \
	echo "[kind] kind-ci: exit $$rc after $$(( $$(date +%s) - t0 ))s"; exit $$rc
