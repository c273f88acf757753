package source_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/llmgw/llmgw/api/keyformat"
	"github.com/llmgw/llmgw/api/snapshot"
	"github.com/llmgw/llmgw/gateway"
	"github.com/llmgw/llmgw/gateway/localstack"
	"github.com/llmgw/llmgw/gateway/source"
	"github.com/llmgw/llmgw/mockproviders"
	"github.com/llmgw/llmgw/test/testutil"
)

// startEnvtest runs a real kube-apiserver + etcd built from source
// (make envtest). Without them the test is skipped locally and fails in CI.
func startEnvtest(t *testing.T) *envtest.Environment {
	t.Helper()
	testutil.RequireEnvtest(t)
	env := &envtest.Environment{}
	if _, err := env.Start(); err != nil {
		t.Fatalf("envtest: %v", err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	return env
}

// putSnapshot publishes snap as the controller does: parts, then the head.
func putSnapshot(t *testing.T, cs kubernetes.Interface, ns string, snap *snapshot.Snapshot) {
	t.Helper()
	if _, err := testutil.PublishSnapshot(context.Background(), cs, ns, snapshot.DefaultConfigMapName, snap.Clone()); err != nil {
		t.Fatal(err)
	}
}

// Kubernetes mode: the gateway hot-loads every change of its ConfigMap while
// a steady load runs, with no request failing because of a reload.
func TestKubernetesHotLoad(t *testing.T) {
	env := startEnvtest(t)
	cs, err := kubernetes.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	const ns = "llmgw-system"
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	alpha, _ := mockproviders.NewHandler(mockproviders.Options{Flavor: mockproviders.Alpha})
	beta, _ := mockproviders.NewHandler(mockproviders.Options{Flavor: mockproviders.Beta, RequireKey: "beta-in-cluster-secret"})
	as, bs := httptest.NewServer(alpha), httptest.NewServer(beta)
	defer as.Close()
	defer bs.Close()
	keyA, _, _, _ := keyformat.Generate()
	keyB, _, _, _ := keyformat.Generate()
	snap := localstack.Demo(as.URL, bs.URL, keyA, keyB)
	snap.Providers[1].Credential = &snapshot.Credential{SecretName: "beta-cred", SecretKey: "apiKey"}
	snap.Keys[1].RateLimit = snapshot.RateLimit{RPM: 100000, Burst: 10000}
	snap.Keys[0].RateLimit = snapshot.RateLimit{RPM: 100000, Burst: 10000} // polled while waiting for beta
	putSnapshot(t, cs, ns, snap)

	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	src, err := source.NewKube(source.KubeConfig{Namespace: ns, ConfigMap: snapshot.DefaultConfigMapName, RestConfig: env.Config,
		CredentialRefresh: 200 * time.Millisecond, PartWait: 500 * time.Millisecond, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, cancel := context.WithCancel(ctx)
	gw, err := gateway.Start(runCtx, gateway.Config{Addr: "127.0.0.1:0", DBPath: filepath.Join(t.TempDir(), "usage.db"),
		DrainTimeout: 2 * time.Second, Source: src, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- gw.Wait(runCtx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Wait: %v", err)
		}
	}()
	base := "http://" + gw.Addr
	chat := func(key, model string) int { return testutil.ChatStatus(base, key, model) }
	waitServed := func(what string, cond func() bool) time.Duration {
		t.Helper()
		return testutil.WaitServed(t, what, 10*time.Second, cond)
	}
	// The snapshot names a Secret that does not exist yet. One provider's
	// credential does not block the rest: the snapshot runs, alpha serves,
	// beta is down (503 provider_unavailable, no call), /health degraded.
	waitServed("the snapshot, beta's Secret missing", func() bool { return chat(keyA, "chat-alpha") == 200 })
	if c := httpStatus(t, base+"/readyz"); c != 200 {
		t.Fatalf("/readyz with one provider's credential Secret missing: %d, want 200", c)
	}
	// chat-beta falls back to alpha: beta is passed over without a call.
	if c := chat(keyA, "chat-beta"); c != http.StatusOK {
		t.Fatalf("chat-beta with its provider's credential Secret missing: %d, want 200 through its fallback", c)
	}
	if h := healthStatus(t, base); h != "degraded" {
		t.Fatalf("/health with beta's credential Secret missing: %q, want degraded", h)
	}
	// Creating the Secret is enough: the gateway retries the read with
	// backoff, with no ConfigMap or CR change.
	if _, err := cs.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "beta-cred"},
		Data: map[string][]byte{"apiKey": []byte("stale-secret-before-rotation")}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// Beta is back in routing once the gateway has read it: the stale value
	// makes the mock refuse it (502, no fallback on a credential rejection).
	waitServed("beta once its Secret exists", func() bool { return chat(keyA, "chat-beta") == http.StatusBadGateway })
	if h := healthStatus(t, base); h != "ok" {
		t.Fatalf("/health once beta's Secret exists: %q, want ok", h)
	}

	// Mock beta rejects the stale Secret value (a gateway misconfiguration:
	// 502, never 401); after rotating the Secret, the gateway injects the new
	// value without a restart or a snapshot change.
	if c := chat(keyA, "chat-beta"); c != http.StatusBadGateway {
		t.Fatalf("chat-beta with a stale credential: %d, want 502", c)
	}
	sec, err := cs.CoreV1().Secrets(ns).Get(ctx, "beta-cred", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sec.Data["apiKey"] = []byte("beta-in-cluster-secret")
	if _, err := cs.CoreV1().Secrets(ns).Update(ctx, sec, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitServed("rotated credential", func() bool { return chat(keyA, "chat-beta") == 200 })

	// Steady load with key B through every reload below.
	// Paced well below key B's limit (100,000 rpm ≈ 1,667/s), so that every
	// request must succeed on any machine.
	load := testutil.StartLoad(50, func() int { return chat(keyB, "chat-alpha") })

	// A new alias.
	snap.Aliases = append(snap.Aliases, snapshot.Alias{Name: "chat-new", Primary: snapshot.Route{Provider: "beta", Model: "beta-new"}})
	snap.Keys[0].Models = append(snap.Keys[0].Models, "chat-new")
	putSnapshot(t, cs, ns, snap)
	waitServed("new alias", func() bool { return chat(keyA, "chat-new") == 200 })

	// A changed fallback: chat-restricted gains beta as fallback, so a 503 from
	// alpha is now answered by beta.
	one := 1
	snap.Aliases[2].Fallbacks = []snapshot.Route{{Provider: "beta", Model: "beta-large"}}
	snap.Aliases[2].MaxFallbacks = &one
	putSnapshot(t, cs, ns, snap)
	waitServed("changed fallback", func() bool {
		req, _ := http.NewRequest(http.MethodPost, base+"/v1/chat/completions",
			strings.NewReader(`{"model":"chat-restricted","messages":[{"role":"user","content":"hi\n@mock alpha:status=503"}]}`))
		req.Header.Set("Authorization", "Bearer "+keyA)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == 200 && resp.Header.Get("X-Llmgw-Provider") == "beta"
	})

	// A rate-limit change: key A down to a burst of 1.
	snap.Keys[0].RateLimit = snapshot.RateLimit{RPM: 1, Burst: 1}
	putSnapshot(t, cs, ns, snap)
	waitServed("rate limit change", func() bool { return chat(keyA, "chat-alpha") == 429 })

	// A head whose part never arrives: the gateway waits, reports it after
	// PartWait, keeps serving, and applies the snapshot once the part exists.
	// (A rate limit not used before, so that its key shard is a new part.)
	snap.Keys[0].RateLimit = snapshot.RateLimit{RPM: 99999, Burst: 9999}
	parts, head, err := testutil.SnapshotConfigMaps(ns, snapshot.DefaultConfigMapName, snap.Clone(), 0)
	if err != nil {
		t.Fatal(err)
	}
	var withheld *corev1.ConfigMap
	for _, p := range parts {
		if _, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, p.Name, metav1.GetOptions{}); err == nil {
			continue // an unchanged part
		}
		if withheld == nil {
			withheld = p
			continue
		}
		if _, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if withheld == nil {
		t.Fatal("no new part to withhold")
	}
	if err := testutil.PutHead(ctx, cs, head); err != nil {
		t.Fatal(err)
	}
	waitServed("missing part reported", func() bool { return lastReloadError(base) != "" })
	if c := chat(keyA, "chat-alpha"); c != 429 {
		t.Fatalf("while a part is missing: %d, want the running snapshot's 429", c)
	}
	if _, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, withheld, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitServed("snapshot applied once its part exists", func() bool { return chat(keyA, "chat-alpha") == 200 && lastReloadError(base) == "" })
	// An invalid head is rejected and the running snapshot kept.
	bad := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: snapshot.DefaultConfigMapName, Namespace: ns,
		Labels: map[string]string{snapshot.SnapshotLabel: snapshot.DefaultConfigMapName}},
		Data: map[string]string{snapshot.HeadKey: `{"version":"nope"}`}}
	if err := testutil.PutHead(ctx, cs, bad); err != nil {
		t.Fatal(err)
	}
	waitServed("invalid snapshot reported", func() bool { return lastReloadError(base) != "" })
	if c := chat(keyA, "chat-alpha"); c != 200 {
		t.Fatalf("after an invalid head: %d, want the running snapshot's 200", c)
	}

	// A disabled key → 401 within the hot-load bound; measure the latency of
	// ConfigMap update → served, repeatedly.
	var lat []time.Duration
	for i := 0; i < 20; i++ {
		snap.Keys[0].Disabled = i%2 == 0
		snap.Keys[0].RateLimit = snapshot.RateLimit{RPM: 100000, Burst: 10000}
		want := 200
		if snap.Keys[0].Disabled {
			want = 401
		}
		putSnapshot(t, cs, ns, snap)
		lat = append(lat, waitServed(fmt.Sprintf("toggle %d", i), func() bool { return chat(keyA, "chat-alpha") == want }))
	}
	statuses := load.Stop()
	if ok, desc := testutil.OnlyStatus(statuses, 200); !ok {
		t.Fatalf("steady load across reloads: %s; want 200 only", desc)
	}
	loadOK := statuses[200]
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	p50, p99 := lat[len(lat)/2], lat[len(lat)-1]
	t.Logf("ConfigMap update → served: p50 %v, max(p99 of 20) %v; steady load %d requests, 0 failed", p50, p99, loadOK)
	if p99 > time.Second {
		t.Fatalf("hot-load latency p99 %v exceeds 1s", p99)
	}
}

func httpStatus(t *testing.T, url string) int {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

func lastReloadError(base string) string {
	resp, err := http.Get(base + "/health")
	if err != nil {
		return ""
	}
	defer resp.Body.Close()
	var h struct {
		Snapshot struct {
			LastReloadError string `json:"last_reload_error"`
		} `json:"snapshot"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&h)
	return h.Snapshot.LastReloadError
}
