// Package kind_test is the e2e suite on a kind cluster: the deployed system
// (make deploy: controller, gateway StatefulSet, mocks) driven the way users
// drive it, with kubectl (hack/kind/kubectl.sh: the kubectl built from
// source, kubeconfig bin/kind/kubeconfig) and the official OpenAI Go SDK
// through kubectl port-forwards the suite starts and stops.
//
// It only runs with LLMGW_E2E_KIND=1 (make test-e2e-kind), so a plain
// `go test ./...` skips it.
package kind_test

import (
	"os"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// EnvGate is the variable that turns the suite on.
const EnvGate = "LLMGW_E2E_KIND"

func TestKind(t *testing.T) {
	if os.Getenv(EnvGate) != "1" {
		t.Skipf("the kind e2e suite needs a kind cluster and takes minutes: run `make test-e2e-kind` "+
			"(or %s=1 go test ./test/e2e/kind/ -timeout 40m -v -ginkgo.v)", EnvGate)
	}
	RegisterFailHandler(Fail)
	RunSpecs(t, "llmgw e2e on kind")
}

// BeforeSuite brings up (or reuses) the cluster and deploys the system once
// for every container of the suite: each container puts back what it
// changes (DeferCleanup, AfterAll), so none needs a fresh deploy of its own.
// make deploy's apply also puts back what an interrupted earlier run left
// changed (the controller's flags, the watched-namespaces policy).
var _ = BeforeSuite(func(ctx SpecContext) {
	root := repoRoot()
	k := kube{root: root}
	By("cluster: reuse a healthy kind cluster or create one (make kind-up)")
	if !clusterReady(ctx, k) {
		Expect(runMake(ctx, root, "kind-up")).To(Succeed())
		Expect(clusterReady(ctx, k)).To(BeTrue(), "make kind-up succeeded but the node is not Ready")
	}
	if os.Getenv("LLMGW_E2E_SKIP_DEPLOY") == "1" {
		By("LLMGW_E2E_SKIP_DEPLOY=1: using the deployment as it is")
		return
	}
	Expect(runMake(ctx, root, "deploy")).To(Succeed())
}, NodeTimeout(20*time.Minute))
