# llmgw image, kind deployment and Helm chart upkeep (hack/deploy/). Included
# by the top Makefile (-include hack/*/*.mk); paths are relative to the repo root.
.PHONY: image image-tag deploy undeploy chart-sync verify-chart helm-template

HELM ?= $(GO) tool helm
# Chart files that are copies of controller-gen output (config/), kept in sync
# by chart-sync and checked by verify-chart: the CRDs, the controller Role
# (all controller-gen output), the hand-written gateway Role and the Role of
# a watched namespace.
CHART_DIR := charts/llmgw
CHART_COPIES := $(foreach f,$(notdir $(wildcard config/crd/bases/*.yaml)),config/crd/bases/$(f):$(CHART_DIR)/crds/$(f)) \
	config/rbac/role.yaml:$(CHART_DIR)/files/controller-role.yaml \
	config/rbac/gateway_role.yaml:$(CHART_DIR)/files/gateway-role.yaml \
	config/rbac/watched_namespace/role.yaml:$(CHART_DIR)/files/watched-namespace-role.yaml \
	config/rbac/watched_namespace/role_binding.yaml:$(CHART_DIR)/files/watched-namespace-role-binding.yaml

image: ## build bin/image/llmgw (static) and the FROM-scratch image llmgw:<appVersion>-<content hash>
	@hack/deploy/image.sh >/dev/null

image-tag: ## print the image reference `make image` built last (for helm --set image.tag=...)
	@cat bin/image/tag 2>/dev/null || { echo "no image built yet: make image" >&2; exit 1; }

deploy: ## build the image, load it into kind, create generated Secrets, apply config/default, wait until Ready
	hack/deploy/deploy.sh

undeploy: ## delete what config/default installed (CRDs, namespace and its PVCs included)
	hack/deploy/deploy.sh --delete

chart-sync: ## copy the CRDs and the controller Role from config/ into charts/llmgw
	@for p in $(CHART_COPIES); do src=$${p%%:*}; dst=$${p#*:}; mkdir -p $$(dirname $$dst); \
	  cmp -s $$src $$dst || { cp $$src $$dst; echo "chart-sync: $$src -> $$dst"; }; done
	@for f in $(CHART_DIR)/crds/*.yaml; do [ -e config/crd/bases/$$(basename $$f) ] || { rm -f $$f; echo "chart-sync: removed $$f"; }; done

verify-chart: ## fail when a chart copy of config/ (CRDs, controller Role) drifted; helm lint
	@rc=0; for p in $(CHART_COPIES); do src=$${p%%:*}; dst=$${p#*:}; \
	  cmp -s $$src $$dst || { echo "verify-chart: $$dst differs from $$src"; rc=1; }; done; \
	for f in $(CHART_DIR)/crds/*.yaml; do [ -e config/crd/bases/$$(basename $$f) ] || { echo "verify-chart: $$f has no config/crd/bases counterpart"; rc=1; }; done; \
	if [ $$rc -ne 0 ]; then echo "verify-chart: run 'make chart-sync' and commit"; exit 1; fi
	$(HELM) lint --strict $(CHART_DIR)

helm-template: ## render the chart as `helm install -n llmgw-system` would (no cluster needed)
	$(HELM) template llmgw $(CHART_DIR) --namespace llmgw-system
