# Kubernetes tooling: the envtest control plane built from Go modules, code
# generation for api/ (controller-gen), and the staleness check CI runs.
# Included by the top Makefile (-include hack/*/*.mk); paths are relative to
# the repo root.

include $(CURDIR)/hack/versions.env

# KUBEBUILDER_ASSETS for envtest suites: `make envtest` fills it, then e.g.
#   KUBEBUILDER_ASSETS=$(ENVTEST_ASSETS) go test ./controllers/...
# The binaries live in a cache outside the clone, keyed by version, so a second
# clone on the same machine (CI) skips the build. Override with LLMGW_CACHE.
LLMGW_CACHE ?= $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/llmgw
ENVTEST_ASSETS ?= $(LLMGW_CACHE)/envtest/$(K8S_VERSION)
CONTROLLER_GEN ?= $(GO) tool controller-gen

.PHONY: envtest
envtest: ## build kube-apiserver, etcd and kubectl from Go modules into $(ENVTEST_ASSETS) (cached)
	ENVTEST_ASSETS=$(ENVTEST_ASSETS) hack/envtest.sh >/dev/null

.PHONY: generate
generate: ## deepcopy for api/ (controller-gen)
	$(CONTROLLER_GEN) object paths=./api/...

.PHONY: manifests
manifests: ## CRDs into config/crd/bases and the controller Role into config/rbac (controller-gen)
	$(CONTROLLER_GEN) crd paths=./api/... output:crd:artifacts:config=config/crd/bases
	$(CONTROLLER_GEN) rbac:roleName=llmgw-controller paths=./controllers/... output:rbac:artifacts:config=config/rbac

# Paths controller-gen writes; verify-generated fails when they differ from
# what is committed (or when generation leaves untracked files there).
GENERATED_PATHS := api/v1alpha1/zz_generated.deepcopy.go config/crd/bases config/rbac/role.yaml

.PHONY: verify-generated
verify-generated: generate manifests ## fail if `make generate manifests` changes committed output
	@git diff --exit-code -- $(GENERATED_PATHS) || { echo "generated files are stale: run 'make generate manifests' and commit"; exit 1; }
	@untracked=$$(git ls-files --others --exclude-standard -- $(GENERATED_PATHS)); \
	  if [ -n "$$untracked" ]; then echo "generated files not committed:"; echo "$$untracked"; exit 1; fi
