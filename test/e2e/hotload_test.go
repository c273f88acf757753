// Package e2e runs the controller and a gateway in Kubernetes mode against a
// real API server (envtest, built from source by `make envtest`).
package e2e

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/llmgw/llmgw/api/keyformat"
	"github.com/llmgw/llmgw/api/snapshot"
	"github.com/llmgw/llmgw/api/v1alpha1"
	"github.com/llmgw/llmgw/controllers"
	"github.com/llmgw/llmgw/gateway"
	"github.com/llmgw/llmgw/gateway/source"
	"github.com/llmgw/llmgw/mockproviders"
	"github.com/llmgw/llmgw/test/testutil"
)

const ns = "llmgw-system"

func startEnv(t *testing.T) (*envtest.Environment, client.Client) {
	t.Helper()
	testutil.RequireEnvtest(t)
	env := &envtest.Environment{CRDDirectoryPaths: []string{filepath.Join("..", "..", "config", "crd", "bases")},
		ErrorIfCRDPathMissing: true}
	cfg, err := env.Start()
	if err != nil {
		t.Fatalf("envtest: %v", err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	scheme, err := controllers.Scheme()
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	return env, c
}

func create(t *testing.T, c client.Client, obj client.Object) {
	t.Helper()
	obj.SetNamespace(ns)
	if err := c.Create(context.Background(), obj); err != nil {
		t.Fatalf("create %T %s: %v", obj, obj.GetName(), err)
	}
}

// CR applied → change served by the gateway, through the controller and the
// snapshot ConfigMap, while a steady load runs; target p99 under 1 s.
func TestCRToGatewayHotLoad(t *testing.T) {
	env, c := startEnv(t)
	ctx := context.Background()
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	alpha, _ := mockproviders.NewHandler(mockproviders.Options{Flavor: mockproviders.Alpha})
	beta, _ := mockproviders.NewHandler(mockproviders.Options{Flavor: mockproviders.Beta, RequireKey: "beta-e2e-secret"})
	as, bs := httptest.NewServer(alpha), httptest.NewServer(beta)
	defer as.Close()
	defer bs.Close()

	keyA, prefixA, hashA, _ := keyformat.Generate()
	keyB, prefixB, hashB, _ := keyformat.Generate()
	create(t, c, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "beta-cred"}, Data: map[string][]byte{"apiKey": []byte("beta-e2e-secret")}})
	create(t, c, &v1alpha1.ProviderEndpoint{ObjectMeta: metav1.ObjectMeta{Name: "alpha"},
		Spec: v1alpha1.ProviderEndpointSpec{Protocol: "openai", URL: as.URL}})
	create(t, c, &v1alpha1.ProviderEndpoint{ObjectMeta: metav1.ObjectMeta{Name: "beta"},
		Spec: v1alpha1.ProviderEndpointSpec{Protocol: "anthropic", URL: bs.URL,
			Credential: &v1alpha1.Credential{SecretRef: v1alpha1.SecretKeyReference{Name: "beta-cred", Key: "apiKey"}}}})
	create(t, c, &v1alpha1.ModelAlias{ObjectMeta: metav1.ObjectMeta{Name: "chat-alpha"},
		Spec: v1alpha1.ModelAliasSpec{Primary: v1alpha1.Route{Provider: "alpha", Model: "alpha-large"},
			Fallbacks: []v1alpha1.Route{{Provider: "beta", Model: "beta-large"}}}})
	keyAObj := &v1alpha1.GatewayKey{ObjectMeta: metav1.ObjectMeta{Name: "key-a"},
		Spec: v1alpha1.GatewayKeySpec{KeyHash: hashA, KeyPrefix: prefixA, Models: []string{"*"},
			RateLimit: &v1alpha1.RateLimit{RequestsPerMinute: 100000, Burst: 10000}}}
	create(t, c, keyAObj)
	create(t, c, &v1alpha1.GatewayKey{ObjectMeta: metav1.ObjectMeta{Name: "key-b"},
		Spec: v1alpha1.GatewayKeySpec{KeyHash: hashB, KeyPrefix: prefixB, Models: []string{"chat-alpha"},
			RateLimit: &v1alpha1.RateLimit{RequestsPerMinute: 100000, Burst: 10000}}})

	runCtx, cancel := context.WithCancel(ctx)
	var bg sync.WaitGroup
	defer func() { cancel(); bg.Wait() }()
	bg.Add(2)
	go func() {
		defer bg.Done()
		err := controllers.Run(runCtx, env.Config, controllers.Options{Namespace: ns, MetricsAddr: "0", ProbeAddr: "0",
			Debounce: 200 * time.Millisecond, DebounceMax: time.Second, SkipNameValidation: true}, logr.Discard())
		if err != nil {
			t.Errorf("controller: %v", err)
		}
	}()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	src, err := source.NewKube(source.KubeConfig{Namespace: ns, ConfigMap: snapshot.DefaultConfigMapName, RestConfig: env.Config, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	gw, err := gateway.Start(runCtx, gateway.Config{Addr: "127.0.0.1:0", DBPath: filepath.Join(t.TempDir(), "usage.db"),
		DrainTimeout: 2 * time.Second, Source: src, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		defer bg.Done()
		if err := gw.Wait(runCtx); err != nil {
			t.Errorf("gateway: %v", err)
		}
	}()
	base := "http://" + gw.Addr
	chat := func(key, model string) int { return testutil.ChatStatus(base, key, model) }
	served := func(what string, cond func() bool) time.Duration {
		t.Helper()
		return testutil.WaitServed(t, what, 15*time.Second, cond)
	}
	served("initial CRs", func() bool { return chat(keyA, "chat-alpha") == 200 })

	// Paced well below key B's limit (100,000 rpm ≈ 1,667/s): every request
	// must succeed on any machine, fast or slow.
	load := testutil.StartLoad(50, func() int { return chat(keyB, "chat-alpha") })

	var lat []time.Duration
	for i := 0; i < 20; i++ {
		name := fmt.Sprintf("hot-%02d", i)
		create(t, c, &v1alpha1.ModelAlias{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: v1alpha1.ModelAliasSpec{Primary: v1alpha1.Route{Provider: "beta", Model: "beta-" + name}}})
		lat = append(lat, served(name, func() bool { return chat(keyA, name) == 200 }))
	}
	// Disabling a key takes effect within the same bound.
	if err := c.Get(ctx, client.ObjectKeyFromObject(keyAObj), keyAObj); err != nil {
		t.Fatal(err)
	}
	keyAObj.Spec.Disabled = true
	if err := c.Update(ctx, keyAObj); err != nil {
		t.Fatal(err)
	}
	disable := served("disabled key", func() bool { return chat(keyA, "chat-alpha") == 401 })
	statuses := load.Stop()
	kubectlGet(t, env)

	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	p50, p95, max := lat[len(lat)/2], lat[len(lat)*95/100], lat[len(lat)-1]
	t.Logf("CR create → served by the gateway (20 aliases): p50 %v, p95 %v, max %v; key disable → 401 in %v; steady load: %d ok, %d other statuses",
		p50.Round(time.Millisecond), p95.Round(time.Millisecond), max.Round(time.Millisecond), disable.Round(time.Millisecond), statuses[200], len(statuses)-1)
	if ok, desc := testutil.OnlyStatus(statuses, 200); !ok {
		t.Fatalf("steady load across reloads: %s; want 200 only", desc)
	}
	if max > time.Second || disable > time.Second {
		t.Fatalf("hot-load latency above 1s: max %v, disable %v", max, disable)
	}
}

// kubectlGet logs what an operator sees (`kubectl get llmgw`), with the
// kubectl built next to the envtest binaries, as evidence for the docs.
func kubectlGet(t *testing.T, env *envtest.Environment) {
	t.Helper()
	kubectl := filepath.Join(os.Getenv("KUBEBUILDER_ASSETS"), "kubectl")
	if _, err := os.Stat(kubectl); err != nil {
		t.Logf("no kubectl next to the envtest binaries: %v", err)
		return
	}
	user, err := env.AddUser(envtest.User{Name: "e2e-admin", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	kc, err := user.KubeConfig()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(path, kc, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"get", "providerendpoints"}, {"get", "modelaliases"}, {"get", "gatewaykeys"}} {
		out, err := exec.Command(kubectl, append(args, "-n", ns, "--kubeconfig", path)...).CombinedOutput()
		if err != nil {
			t.Fatalf("kubectl %v: %v\n%s", args, err, out)
		}
		t.Logf("kubectl %s -n %s\n%s", strings.Join(args, " "), ns, out)
	}
}
