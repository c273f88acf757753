# The kustomize component config/components/monitoring, generated from the
# Helm chart (hack/monitoring). Included by the top Makefile (-include
# hack/*/*.mk); paths are relative to the repo root.
.PHONY: monitoring-manifests

monitoring-manifests: ## regenerate config/components/monitoring from charts/llmgw (test/manifests fails when it is stale)
	$(GO) run ./hack/monitoring/gen -helm "$(HELM)"
