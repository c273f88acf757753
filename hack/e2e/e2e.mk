# e2e suites (test/e2e). Included by the top Makefile (-include hack/*/*.mk);
# paths are relative to the repository root.
.PHONY: test-e2e-envtest test-e2e-kind

E2E_KIND_TIMEOUT ?= 40m

test-e2e-envtest: envtest ## the envtest e2e suite: CRs -> controller -> ConfigMap -> gateway hot-load, client contract (ginkgo)
	KUBEBUILDER_ASSETS=$(ENVTEST_ASSETS) LLMGW_REQUIRE_ENVTEST=1 $(GO) test ./test/e2e/ -count=1 -v -ginkgo.v

# The kind suite reuses a healthy cluster (or runs make kind-up), runs make
# deploy, applies config/samples/ and this run's keys, then drives the system
# with kubectl and the OpenAI SDK through port-forwards. LLMGW_E2E_SKIP_DEPLOY=1
# skips make deploy (iterating on the suite against an unchanged deployment).
test-e2e-kind: ## the kind e2e suite (ginkgo): make deploy, then kubectl + OpenAI SDK through port-forwards; prints progress and the wall time
	@t0=$$(date +%s); rc=0; \
	LLMGW_E2E_KIND=1 GO=$(GO) $(GO) test ./test/e2e/kind/ -count=1 -timeout $(E2E_KIND_TIMEOUT) -v -ginkgo.v || rc=$$?; \
	echo "[e2e] test-e2e-kind: exit $$rc after $$(( $$(date +%s) - t0 ))s"; exit $$rc
