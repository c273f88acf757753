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
