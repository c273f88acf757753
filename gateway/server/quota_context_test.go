package server_test

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/llmgw/llmgw/gateway/quota"
	"github.com/llmgw/llmgw/gateway/server"
	"github.com/llmgw/llmgw/gateway/usage"
)

// deadlineStore is a store outside the process as the server sees it (not
// the memory store): it refuses every request and notes each call's
// deadline.
type deadlineStore struct {
	quota.Store
	mu        sync.Mutex
	deadlines []time.Duration // -1: the call had none
}

func (d *deadlineStore) Reserve(ctx context.Context, _ string, _ []quota.Limit, _ time.Duration, _ time.Time) (quota.Decision, error) {
	left := time.Duration(-1)
	if dl, ok := ctx.Deadline(); ok {
		left = time.Until(dl)
	}
	d.mu.Lock()
	d.deadlines = append(d.deadlines, left)
	d.mu.Unlock()
	return quota.Decision{Allowed: false, RetryAfter: time.Second}, nil
}

// Only the in-process store goes without a timer: a call to any other store
// on the request path stays bounded (5 s), so a store that hangs cannot
// hold a request forever.
func TestSharedQuotaStoreCallsAreBounded(t *testing.T) {
	plain, snap := oneKeySnapshot(t)
	l, err := usage.Open(t.Context(), t.TempDir()+"/u.db", usage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	store := &deadlineStore{Store: quota.NewMemory()}
	srv, err := server.New(server.Options{Ledger: l, Quota: store, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Apply(t.Context(), snap); err != nil {
		t.Fatal(err)
	}
	gw := httptest.NewServer(srv.Handler())
	t.Cleanup(gw.Close)
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, gw.URL+"/v1/chat/completions",
		strings.NewReader(`{"model":"chat","messages":[{"role":"user","content":"hi"}]}`))
	req.Header.Set("Authorization", "Bearer "+plain)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("status %d, want 429 from the store's refusal", resp.StatusCode)
	}
	store.mu.Lock()
	defer store.mu.Unlock()
	if len(store.deadlines) != 1 {
		t.Fatalf("%d store calls, want 1 (the rate check)", len(store.deadlines))
	}
	if left := store.deadlines[0]; left <= 0 || left > 5*time.Second {
		t.Fatalf("the store call had %v left, want a deadline within 5 s", left)
	}
}
