// Package e2e runs the controller and a gateway in Kubernetes mode against a
// real API server (envtest, built from source by `make envtest`), with the
// mock providers in process: CR → controller → snapshot ConfigMap → gateway
// hot-load, and the client contract on top of it. The same checks run on a
// kind cluster in test/e2e/kind; both use test/e2e/specs.
package e2e

import (
	"testing"

	"github.com/go-logr/logr"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/llmgw/llmgw/test/testutil"
)

// TestE2E is the envtest gate (skip without the control-plane binaries, fail
// with LLMGW_REQUIRE_ENVTEST=1), then the ginkgo suite.
func TestE2E(t *testing.T) {
	testutil.RequireEnvtest(t)
	ctrllog.SetLogger(logr.Discard())
	RegisterFailHandler(Fail)
	RunSpecs(t, "llmgw e2e on envtest")
}
