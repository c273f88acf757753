package gateway_test

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"

	"github.com/llmgw/llmgw/api/snapshot"
	"github.com/llmgw/llmgw/gateway"
	"github.com/llmgw/llmgw/gateway/peers"
	"github.com/llmgw/llmgw/gateway/source"
	"github.com/llmgw/llmgw/gateway/usage"
)

const testNS = "llmgw-system"

// cluster is a fake API server with the gateway StatefulSet and its claims,
// and a dialer that resolves <pod>.peers:9090 to the started gateways'
// management ports, as the headless Service would.
type cluster struct {
	api   *fake.Clientset
	mu    sync.Mutex
	addrs map[string]string
}

func newCluster(t *testing.T, replicas int32) *cluster {
	t.Helper()
	c := &cluster{addrs: map[string]string{}, api: fake.NewClientset(
		&appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: testNS, Name: "llmgw-gateway"},
			Spec: appsv1.StatefulSetSpec{Replicas: ptr.To(replicas)}, Status: appsv1.StatefulSetStatus{ReadyReplicas: replicas}},
		&corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: testNS, Name: "data-llmgw-gateway-0"}},
		&corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: testNS, Name: "data-llmgw-gateway-1"}},
	)}
	return c
}

func (c *cluster) client() *http.Client {
	return &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		c.mu.Lock()
		a, ok := c.addrs[addr]
		c.mu.Unlock()
		if !ok {
			a = "127.0.0.1:1"
		}
		return (&net.Dialer{}).DialContext(ctx, network, a)
	}}}
}

func (c *cluster) scale(t *testing.T, n int32) {
	t.Helper()
	sts, err := c.api.AppsV1().StatefulSets(testNS).Get(t.Context(), "llmgw-gateway", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sts.Spec.Replicas, sts.Status.ReadyReplicas = ptr.To(n), n
	if _, err := c.api.AppsV1().StatefulSets(testNS).Update(t.Context(), sts, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func (c *cluster) annotation(t *testing.T, claim string) string {
	t.Helper()
	pvc, err := c.api.CoreV1().PersistentVolumeClaims(testNS).Get(t.Context(), claim, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return pvc.Annotations[peers.HandedOffAnnotation]
}

// replica is one started gateway of the StatefulSet.
type replica struct {
	g      *gateway.Gateway
	cancel context.CancelFunc
	done   chan error
}

// start runs llmgw-gateway-<ord> on db, with discovery and hand-off as in a
// StatefulSet.
func (c *cluster) start(t *testing.T, ord string, db string) *replica {
	t.Helper()
	dir := t.TempDir()
	snap := filepath.Join(dir, "snapshot.json")
	if err := snapshot.WriteFile(snap, &snapshot.Snapshot{}); err != nil {
		t.Fatal(err)
	}
	self := "llmgw-gateway-" + ord
	d, err := peers.NewDiscovery(peers.DiscoveryConfig{Client: c.api, Namespace: testNS, StatefulSet: "llmgw-gateway", ClaimTemplate: "data"})
	if err != nil {
		t.Fatal(err)
	}
	set, err := peers.New(peers.Config{Self: self, Service: "peers", Port: 9090, Token: "tok", Client: c.client(), Roster: d.Membership})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	g, err := gateway.Start(ctx, gateway.Config{Addr: "127.0.0.1:0", MgmtAddr: "127.0.0.1:0",
		Source: source.File{Path: snap, Interval: time.Hour}, DBPath: db, DrainTimeout: time.Second,
		Logger: slog.New(slog.DiscardHandler), Peers: set, PeerToken: "tok",
		Elastic: &gateway.Elastic{Discovery: d, Self: self, Service: "peers", Port: 9090, Token: "tok",
			Claim: "data-" + self, Timeout: 10 * time.Second, Client: c.client()}})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	c.mu.Lock()
	c.addrs[self+".peers:9090"] = g.MgmtAddr
	c.mu.Unlock()
	r := &replica{g: g, cancel: cancel, done: make(chan error, 1)}
	go func() { r.done <- g.Wait(ctx) }()
	t.Cleanup(r.stop)
	return r
}

// stop is SIGTERM: the drain, then the hand-off if scaled away.
func (r *replica) stop() {
	if r.cancel != nil {
		r.cancel()
		<-r.done
		r.cancel = nil
	}
}

func seed(t *testing.T, l *usage.Ledger, n int) []string {
	t.Helper()
	var ids []string
	for range n {
		id := usage.NewRequestID()
		ids = append(ids, id)
		if err := l.Finish(t.Context(), usage.Record{RequestID: id, KeyID: "key-a", Status: usage.StatusSuccess, CreatedAt: time.Now()}); err != nil {
			t.Fatal(err)
		}
	}
	return ids
}

func count(t *testing.T, db string) int {
	t.Helper()
	l, err := usage.Open(t.Context(), db, usage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	n, _, err := l.Count(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func waitFor(t *testing.T, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestScaledAwayReplicaHandsItsRecordsOff: a replica that stops while it
// is still in the StatefulSet (a restart) keeps its records; one that
// stops because it was scaled away hands them to llmgw-gateway-0 after the
// drain, ends with an empty ledger and marks its claim handed off.
func TestScaledAwayReplicaHandsItsRecordsOff(t *testing.T) {
	c := newCluster(t, 2)
	dbs := []string{filepath.Join(t.TempDir(), "u0.db"), filepath.Join(t.TempDir(), "u1.db")}
	gw0 := c.start(t, "0", dbs[0])
	gw1 := c.start(t, "1", dbs[1])
	ids := seed(t, gw1.g.Ledger, 25)

	gw1.stop() // a restart: the ordinal stays
	if n := count(t, dbs[1]); n != 25 {
		t.Fatalf("a restarted replica keeps %d of its 25 records", n)
	}
	if a := c.annotation(t, "data-llmgw-gateway-1"); a != "" {
		t.Fatalf("a restarted replica marked its claim handed off to %q", a)
	}

	gw1 = c.start(t, "1", dbs[1])
	c.scale(t, 1)
	gw1.stop() // scaled away: hand-off after the drain
	if n := count(t, dbs[1]); n != 0 {
		t.Fatalf("the scaled-away replica keeps %d records after its hand-off", n)
	}
	for _, id := range ids {
		if _, err := gw0.g.Ledger.Get(t.Context(), id); err != nil {
			t.Fatalf("record %s not at llmgw-gateway-0: %v", id, err)
		}
	}
	if a := c.annotation(t, "data-llmgw-gateway-1"); a != "http://llmgw-gateway-0.peers:9090" {
		t.Fatalf("claim annotation %q after the hand-off", a)
	}

	t.Log("the ordinal comes back: it clears the mark, its ledger is its own again")
	c.scale(t, 2)
	c.start(t, "1", dbs[1])
	waitFor(t, "the claim's mark is cleared", func() bool { return c.annotation(t, "data-llmgw-gateway-1") == "" })
}

// TestInterruptedHandOffResumesAtStart: a ledger whose hand-off a crash cut
// short (its marker names llmgw-gateway-0) is finished when the replica
// starts again, before its peer endpoint serves those records.
func TestInterruptedHandOffResumesAtStart(t *testing.T) {
	c := newCluster(t, 2)
	dbs := []string{filepath.Join(t.TempDir(), "u0.db"), filepath.Join(t.TempDir(), "u1.db")}
	gw0 := c.start(t, "0", dbs[0])
	l, err := usage.Open(t.Context(), dbs[1], usage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ids := seed(t, l, 12)
	// The first 5 reached gw-0 before the crash; the marker stayed.
	var first []usage.Record
	for _, id := range ids[:5] {
		r, err := l.Get(t.Context(), id)
		if err != nil {
			t.Fatal(err)
		}
		first = append(first, r)
	}
	if _, err := gw0.g.Ledger.Import(t.Context(), first); err != nil {
		t.Fatal(err)
	}
	if err := l.SetHandoff(t.Context(), "http://llmgw-gateway-0.peers:9090"); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}

	gw1 := c.start(t, "1", dbs[1])
	waitFor(t, "the hand-off is finished", func() bool {
		n, _, err := gw1.g.Ledger.Count(t.Context())
		return err == nil && n == 0
	})
	total, _, err := gw0.g.Ledger.Count(t.Context())
	if err != nil || total != 12 {
		t.Fatalf("llmgw-gateway-0 holds %d records (%v), want the 12 once each", total, err)
	}
	if _, ok, err := gw1.g.Ledger.Handoff(t.Context()); ok || err != nil {
		t.Fatalf("marker left after the resumed hand-off (%v)", err)
	}
}
