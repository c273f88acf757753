# kind cluster for the e2e suites, on either path (hack/kind/README.md): online
# (plain kind, upstream node image, nothing changed on the machine) or offline
# (everything built from Go modules and Debian packages). KIND_MODE=auto|offline|online
# (default auto: detected). Included by the top Makefile.
.PHONY: kind-image kind-up kind-down kind-smoke kind-ci kind-mode

kind-mode: ## print which kind path (offline/online) KIND_MODE and the probes choose, and what it would change
	@bash -c 'source hack/kind/lib.sh && decide_mode -probe-all >/dev/null && echo "$$KIND_RESOLVED_MODE"'

kind-image: ## build (cached) the node image: offline path only (nothing on the online path or with KIND_NODE_IMAGE)
	@if [ -n "$${KIND_NODE_IMAGE:-}" ]; then echo "[kind] KIND_NODE_IMAGE=$$KIND_NODE_IMAGE: no local node image build"; \
	else hack/kind/up.sh --image-only; fi

kind-up: ## create the single-node kind cluster llmgw and wait until it is Ready (no-op when healthy)
	hack/kind/up.sh

kind-down: ## delete the kind cluster and its docker network (cached images stay)
	hack/kind/down.sh

kind-smoke: ## smoke-check the kind cluster: pod, PVC, Service DNS, kind load, port-forward
	@bash hack/kind/lib.sh progress_run kind-smoke hack/kind/smoke.sh

# kind-up builds the node image on the offline path (what kind-image does), so
# CI needs two steps; each prints its own steps and times.
kind-ci: ## kind-up (which builds the node image on the offline path) + kind-smoke, timed (what CI runs)
	@t0=$$(date +%s); rc=0; n=0; \
	for t in kind-up kind-smoke; do \
	  n=$$((n + 1)); s=$$(date +%s); \
	  echo "[kind] kind-ci step $$n/2 (+$$((s - t0))s): make $$t" >&2; \
	  $(MAKE) --no-print-directory $$t || { rc=$$?; echo "[kind] kind-ci step $$n/2: make $$t failed (exit $$rc) after $$(( $$(date +%s) - s ))s" >&2; break; }; \
	  echo "[kind] kind-ci step $$n/2: make $$t done in $$(( $$(date +%s) - s ))s" >&2; \
	done; \
	echo "[kind] kind-ci: exit $$rc after $$(( $$(date +%s) - t0 ))s"; exit $$rc
