package gateway_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/llmgw/llmgw/api/keyformat"
	"github.com/llmgw/llmgw/api/snapshot"
	"github.com/llmgw/llmgw/gateway"
	"github.com/llmgw/llmgw/gateway/source"
	"github.com/llmgw/llmgw/mockproviders"
	"github.com/llmgw/llmgw/test/testutil"
)

// syncBuffer is a log sink safe for concurrent use.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// quotaGateways starts n gateways on one snapshot, sharing srv as their
// quota store, each believing n replicas are ready.
func quotaGateways(t *testing.T, srv *testutil.RedisServer, n int, failClosed bool, logs *syncBuffer) (gws []*gateway.Gateway, key string) {
	t.Helper()
	mock, err := mockproviders.NewHandler(mockproviders.Options{Flavor: mockproviders.Alpha})
	if err != nil {
		t.Fatal(err)
	}
	provider := httptest.NewServer(mock)
	t.Cleanup(provider.Close)
	plain, prefix, hash, err := keyformat.Generate()
	if err != nil {
		t.Fatal(err)
	}
	zero := 0
	dir := t.TempDir()
	snapPath := filepath.Join(dir, "snapshot.json")
	// 4 requests of burst, then one a minute: nothing refills during the test.
	if err := snapshot.WriteFile(snapPath, &snapshot.Snapshot{
		Providers: []snapshot.Provider{{Name: "alpha", Protocol: snapshot.ProtocolOpenAI, BaseURL: provider.URL}},
		Aliases:   []snapshot.Alias{{Name: "chat", Primary: snapshot.Route{Provider: "alpha", Model: "alpha-small"}, MaxFallbacks: &zero}},
		Keys: []snapshot.Key{{ID: "shared-key", Prefix: prefix, Hash: hash, Models: []string{"*"},
			RateLimit: snapshot.RateLimit{RPM: 1, Burst: 4}}},
	}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait() })
	for i := range n {
		g, err := gateway.Start(ctx, gateway.Config{Addr: "127.0.0.1:0", MgmtAddr: "127.0.0.1:0",
			Source: source.File{Path: snapPath, Interval: time.Hour}, DBPath: filepath.Join(dir, "usage-"+string(rune('a'+i))+".db"),
			DrainTimeout: time.Second, Logger: slog.New(slog.NewJSONHandler(logs, nil)),
			QuotaStore: gateway.QuotaStore{URL: srv.URL(), Password: srv.Password, Timeout: 300 * time.Millisecond,
				FailClosed: failClosed, Replicas: n, ReadyReplicas: func(context.Context) int { return n }}})
		if err != nil {
			t.Fatal(err)
		}
		wg.Go(func() { _ = g.Wait(ctx) })
		gws = append(gws, g)
	}
	return gws, plain
}

// chatStatuses sends n chat requests, alternating over the gateways, and
// counts the answers by status.
func chatStatuses(t *testing.T, gws []*gateway.Gateway, key string, n int) map[int]int {
	t.Helper()
	out := map[int]int{}
	for i := range n {
		req, err := http.NewRequest(http.MethodPost, "http://"+gws[i%len(gws)].Addr+"/v1/chat/completions",
			strings.NewReader(`{"model":"chat","messages":[{"role":"user","content":"hello"}]}`))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var body struct{ Error struct{ Code string } }
		_ = json.NewDecoder(resp.Body).Decode(&body)
		resp.Body.Close()
		out[resp.StatusCode]++
		if resp.StatusCode == http.StatusServiceUnavailable {
			out[-1]++ // counted apart: must be quota_store_unavailable
			if body.Error.Code != "quota_store_unavailable" {
				t.Fatalf("503 with code %q, want quota_store_unavailable", body.Error.Code)
			}
		}
	}
	return out
}

func healthOf(t *testing.T, g *gateway.Gateway) (status, store string) {
	t.Helper()
	var h struct {
		Status     string `json:"status"`
		QuotaStore string `json:"quota_store"`
	}
	if err := json.Unmarshal([]byte(get(t, "http://"+g.Addr+"/health")), &h); err != nil {
		t.Fatal(err)
	}
	return h.Status, h.QuotaStore
}

func waitHealth(t *testing.T, gws []*gateway.Gateway, want string) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for _, g := range gws {
		for {
			if _, s := healthOf(t, g); s == want {
				break
			}
			if time.Now().After(deadline) {
				_, s := healthOf(t, g)
				t.Fatalf("quota_store %q in /health, want %q", s, want)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

func TestGatewaysShareLimitsThroughTheQuotaStore(t *testing.T) {
	srv := testutil.StartRedis(t, "gw-test-password")
	var logs syncBuffer
	gws, key := quotaGateways(t, srv, 2, false, &logs)
	waitHealth(t, gws, "shared")

	if got := chatStatuses(t, gws, key, 10); got[http.StatusOK] != 4 || got[http.StatusTooManyRequests] != 6 {
		t.Fatalf("through 2 gateways sharing the store: %v, want 4 × 200 (the key's burst) and 6 × 429", got)
	}

	srv.Stop()
	// The next request finds the store gone; the ping says it within a second.
	waitHealth(t, gws, "degraded")
	for _, g := range gws {
		if status, _ := healthOf(t, g); status != "degraded" {
			t.Fatalf("/health status %q while the quota store is down, want degraded", status)
		}
		if body := get(t, "http://"+g.Addr+"/readyz"); !strings.HasPrefix(body, "ok") {
			t.Fatalf("/readyz while the quota store is down: %q, want ok (serving degraded)", body)
		}
		m := get(t, "http://"+g.MgmtAddr+"/metrics")
		for _, want := range []string{"llmgw_quota_store_degraded 1", "llmgw_quota_store_divisor 2", "llmgw_quota_store_transitions_total 1"} {
			if !strings.Contains(m, want+"\n") {
				t.Fatalf("/metrics lacks %q", want)
			}
		}
	}
	// Each gateway counts alone, the burst of 4 divided by 2.
	if got := chatStatuses(t, gws, key, 10); got[http.StatusOK] != 4 || got[http.StatusTooManyRequests] != 6 {
		t.Fatalf("through 2 degraded gateways: %v, want 2 × 2 admitted", got)
	}

	srv.Restart() // empty: a new count
	waitHealth(t, gws, "shared")
	if got := chatStatuses(t, gws, key, 10); got[http.StatusOK] != 4 {
		t.Fatalf("after the store came back: %v, want 4 admitted (one shared count again)", got)
	}
	for _, g := range gws {
		if m := get(t, "http://"+g.MgmtAddr+"/metrics"); !strings.Contains(m, "llmgw_quota_store_degraded 0\n") {
			t.Fatal("llmgw_quota_store_degraded is not 0 after the recovery")
		}
	}
	out := logs.String()
	if a, b := strings.Count(out, "quota store unreachable"), strings.Count(out, "quota store reachable again"); a != 2 || b != 2 {
		t.Fatalf("%d 'unreachable' and %d 'reachable again' lines from 2 gateways over one outage, want 2 and 2:\n%s", a, b, out)
	}
	if strings.Contains(out, "gw-test-password") {
		t.Fatal("the quota store's password is in the log")
	}
}

func TestGatewayFailClosedWithoutTheQuotaStore(t *testing.T) {
	srv := testutil.StartRedis(t, "")
	var logs syncBuffer
	gws, key := quotaGateways(t, srv, 1, true, &logs)
	waitHealth(t, gws, "shared")
	if got := chatStatuses(t, gws, key, 2); got[http.StatusOK] != 2 {
		t.Fatalf("with the store up: %v", got)
	}
	srv.Stop()
	waitHealth(t, gws, "unavailable")
	if got := chatStatuses(t, gws, key, 3); got[http.StatusServiceUnavailable] != 3 {
		t.Fatalf("fail closed with the store down: %v, want 3 × 503 quota_store_unavailable", got)
	}
	if body := get(t, "http://"+gws[0].Addr+"/readyz"); !strings.HasPrefix(body, "ok") {
		t.Fatalf("/readyz fail-closed with the store down: %q, want ok: the 503 says why, an empty Service would not", body)
	}
	srv.Restart()
	waitHealth(t, gws, "shared")
	if got := chatStatuses(t, gws, key, 2); got[http.StatusOK] != 2 {
		t.Fatalf("after the store came back: %v, want 2 admitted (a new, empty store)", got)
	}
}
