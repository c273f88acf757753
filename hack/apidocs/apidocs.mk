# API reference generated from the CRDs (hack/apidocs). Included by the top
# Makefile (-include hack/*/*.mk); paths are relative to the repo root.
#
#   make docs          # rewrite docs/api-reference.md from config/crd/bases
#   make verify-docs   # fail if docs/api-reference.md is not what `make docs` writes
#
# The CRDs come from the Go types (make manifests), so after changing
# api/v1alpha1: make manifests docs. go test ./hack/apidocs checks the same.

APIDOCS_CRDS := config/crd/bases
APIDOCS_OUT := docs/api-reference.md

.PHONY: docs verify-docs

docs: ## regenerate docs/api-reference.md from the CRDs in config/crd/bases (hack/apidocs)
	$(GO) run ./hack/apidocs -crds $(APIDOCS_CRDS) -out $(APIDOCS_OUT)

verify-docs: ## fail if docs/api-reference.md differs from what `make docs` would write
	@tmp=$$(mktemp); trap 'rm -f "$$tmp"' EXIT; \
	$(GO) run ./hack/apidocs -crds $(APIDOCS_CRDS) -out "$$tmp"; \
	if ! diff -u $(APIDOCS_OUT) "$$tmp"; then \
	  echo "$(APIDOCS_OUT) is stale: it differs from what $(APIDOCS_CRDS) renders to (a CRD changed, or the file was edited by hand). Run 'make docs' and commit $(APIDOCS_OUT)." >&2; \
	  exit 1; \
	fi; \
	echo "$(APIDOCS_OUT) is up to date"
