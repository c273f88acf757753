package controllers

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/yaml"

	"github.com/llmgw/llmgw/test/testutil"
)

// The envtest suite: a real kube-apiserver + etcd (built from source by
// hack/envtest.sh) with the CRDs from config/crd/bases. The binaries are found,
// or the suite skipped (failed under LLMGW_REQUIRE_ENVTEST=1, which make test
// sets), by testutil.RequireEnvtest, the gate every envtest suite shares.

var (
	assets    string // the envtest binaries, from testutil.RequireEnvtest
	cfg       *rest.Config
	k8sClient client.Client
	testEnv   *envtest.Environment
	suiteCtx  context.Context
	stopSuite context.CancelFunc
)

func TestEnvtest(t *testing.T) {
	assets = testutil.RequireEnvtest(t)
	RegisterFailHandler(Fail)
	RunSpecs(t, "controllers envtest suite")
}

var _ = BeforeSuite(func() {
	logf.SetLogger(funcr.New(func(prefix, args string) { GinkgoWriter.Println(prefix, args) }, funcr.Options{Verbosity: 1}))
	suiteCtx, stopSuite = context.WithCancel(context.Background())
	testEnv = &envtest.Environment{
		CRDDirectoryPaths:     []string{filepath.Join("..", "config", "crd", "bases")},
		ErrorIfCRDPathMissing: true,
		BinaryAssetsDirectory: assets,
	}
	var err error
	cfg, err = testEnv.Start()
	Expect(err).NotTo(HaveOccurred())
	scheme, err := Scheme()
	Expect(err).NotTo(HaveOccurred())
	Expect(apiextensionsv1.AddToScheme(scheme)).To(Succeed())
	k8sClient, err = client.New(cfg, client.Options{Scheme: scheme})
	Expect(err).NotTo(HaveOccurred())
})

var _ = AfterSuite(func() {
	if stopSuite != nil {
		stopSuite()
	}
	if testEnv != nil {
		Expect(testEnv.Stop()).To(Succeed())
	}
})

// objectsFromYAML parses a multi-document YAML into unstructured objects,
// placed in ns when ns is non-empty.
func objectsFromYAML(doc, ns string) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, d := range strings.Split(doc, "\n---") {
		if strings.TrimSpace(d) == "" {
			continue
		}
		u := &unstructured.Unstructured{}
		ExpectWithOffset(2, yaml.Unmarshal([]byte(d), &u.Object)).To(Succeed())
		if len(u.Object) == 0 {
			continue // comments only
		}
		if ns != "" {
			u.SetNamespace(ns)
		}
		out = append(out, u)
	}
	return out
}

func filesYAML(paths ...string) string {
	var b strings.Builder
	for _, p := range paths {
		raw, err := os.ReadFile(p)
		ExpectWithOffset(1, err).NotTo(HaveOccurred())
		b.WriteString("\n---\n")
		b.Write(raw)
	}
	return b.String()
}

// apply creates or updates (server-side apply) every object in doc.
func apply(c client.Client, doc, ns string) {
	for _, u := range objectsFromYAML(doc, ns) {
		ExpectWithOffset(1, c.Apply(suiteCtx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner("test"), client.ForceOwnership)).
			To(Succeed(), "applying %s %s", u.GetKind(), u.GetName())
	}
}

// create creates the one object in doc and returns the API's error.
func create(doc, ns string) error {
	objs := objectsFromYAML(doc, ns)
	ExpectWithOffset(1, objs).To(HaveLen(1))
	return k8sClient.Create(suiteCtx, objs[0])
}

// startManager runs a controller for ns with the given identity until the
// returned stop is called.
func startManager(c *rest.Config, o Options) (r *Reconciler, stop func()) {
	return startManagerLogging(c, o, ctrl.Log.WithName(o.Namespace))
}

// startManagerLogging is startManager logging to log (an errorLog's, for
// specs that check what the controller reported).
func startManagerLogging(c *rest.Config, o Options, log logr.Logger) (r *Reconciler, stop func()) {
	o.SkipNameValidation = true
	if o.MetricsAddr == "" {
		o.MetricsAddr = "0"
	}
	mgr, r, err := NewManager(c, o, log)
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	ctx, cancel := context.WithCancel(suiteCtx)
	done := make(chan struct{})
	go func() {
		defer GinkgoRecover()
		defer close(done)
		Expect(mgr.Start(ctx)).To(Succeed())
	}()
	return r, func() {
		cancel()
		Eventually(done, 30*time.Second).Should(BeClosed())
	}
}
