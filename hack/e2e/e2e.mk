# e2e suites (test/e2e). Included by the top Makefile (-include hack/*/*.mk);
# paths are relative to the repository root.
.PHONY: test-e2e-envtest test-e2e-kind

E2E_KIND_TIMEOUT ?= 40m

test-e2e-envtest: envtest ## the envtest e2e suite: CRs -> controller -> ConfigMap -> gateway hot-load, client contract (ginkgo)
	KUBEBUILDER_ASSETS=$(ENVTEST_ASSETS) LLMGW_REQUIRE_ENVTEST=1 $(GO) test ./test/e2e/ -count=1 -v -ginkgo.v

# make kind-up first (a no-op on a healthy cluster; on a fresh machine it builds
# the offline node image, which must not count against the suite's -timeout).
# The suite then reuses that cluster, runs make deploy, applies config/samples/ and this run's keys, then drives the system
# with kubectl and the OpenAI SDK through port-forwards. LLMGW_E2E_SKIP_DEPLOY=1
# skips make deploy (iterating on the suite against an unchanged deployment).
test-e2e-kind: ## the kind e2e suite (ginkgo): make deploy, then kubectl + OpenAI SDK through port-forwards; prints progress and the wall time
	@t0=$$(date +%s); rc=0; \
	echo "[e2e] make kind-up (a cold offline node image takes 35-50 min; outside the suite's -timeout)"; \
	$(MAKE) --no-print-directory kind-up || rc=$$?; \
	[ $$rc -ne 0 ] || LLMGW_E2E_KIND=1 GO=$(GO) $(GO) test ./test/e2e/kind/ -count=1 -timeout $(E2E_KIND_TIMEOUT) -v -ginkgo.v || rc=$$?; \
	echo "[e2e] test-e2e-kind: exit $$rc after $$(( $$(date +%s) - t0 ))s"; exit $$rc
