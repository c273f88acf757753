package server_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/llmgw/llmgw/api/snapshot"
	"github.com/llmgw/llmgw/gateway/server"
	"github.com/llmgw/llmgw/gateway/usage"
)

// The documented error codes of the final failure paths, each provoked for real.
func TestFailureCodes(t *testing.T) {
	broken := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte("this is not JSON"))
	}))
	defer broken.Close()
	h := newHarness(t, func(s *snapshot.Snapshot) {
		s.Providers = append(s.Providers, snapshot.Provider{Name: "broken", Protocol: snapshot.ProtocolOpenAI, BaseURL: broken.URL})
		s.Aliases = append(s.Aliases,
			snapshot.Alias{Name: "chat-broken", Primary: snapshot.Route{Provider: "broken", Model: "m"},
				Fallbacks: []snapshot.Route{{Provider: "beta", Model: "beta-large"}}},
			snapshot.Alias{Name: "chat-tight", Primary: snapshot.Route{Provider: "alpha", Model: "a"},
				Fallbacks: []snapshot.Route{{Provider: "beta", Model: "b"}},
				Timeouts:  snapshot.Timeouts{TotalMs: 400, AttemptMs: 250, FirstChunkMs: 250, IdleMs: 250}})
		s.Keys[0].Models = []string{"*"}
	})
	cases := []struct {
		name, model, directive string
		status                 int
		typ, code, retryAfter  string
	}{
		{"attempt timeout, no fallback", "chat-restricted", "alpha:delay_ms=3000", 504, "provider_timeout", "upstream_timeout", ""},
		{"total deadline", "chat-tight", "*:delay_ms=3000", 504, "provider_timeout", "gateway_deadline_exceeded", ""},
		{"provider 429", "chat-restricted", "alpha:status=429 alpha:retry_after=7", 429, "provider_error", "upstream_rate_limited", "7"},
		{"provider 5xx", "chat-restricted", "alpha:status=500", 502, "provider_error", "upstream_error", ""},
		{"malformed response, not retried", "chat-broken", "", 502, "provider_error", "upstream_bad_response", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := h.chat(h.keyA, chatBody(tc.model, false, tc.directive))
			e := r.errorBody(t)
			if r.status != tc.status || e.Error.Type != tc.typ || e.Error.Code != tc.code {
				t.Fatalf("got %d %s/%s, want %d %s/%s", r.status, e.Error.Type, e.Error.Code, tc.status, tc.typ, tc.code)
			}
			if r.header.Get("Retry-After") != tc.retryAfter {
				t.Fatalf("Retry-After %q, want %q", r.header.Get("Retry-After"), tc.retryAfter)
			}
			rec := h.record(r.header.Get("X-Request-Id"))
			if rec.Status != "error" || rec.ErrorType != tc.typ || rec.HTTPStatus != tc.status {
				t.Fatalf("record %+v", rec)
			}
		})
	}
	if c := mockCalls(t, h.beta); c.Total != 1 { // only chat-tight's fallback reached beta
		t.Fatalf("beta called %d times, want 1", c.Total)
	}
	if r := h.do(http.MethodGet, "/v2/nothing", "", ""); r.status != 404 || r.errorBody(t).Error.Code != "unknown_endpoint" {
		t.Fatalf("unknown endpoint: %d %s", r.status, r.body)
	}
}

// Before the first snapshot, chat answers 503 not_ready, still with a record.
func TestNotReadyBeforeFirstSnapshot(t *testing.T) {
	l, err := usage.Open(context.Background(), t.TempDir()+"/u.db", usage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	srv, _ := server.New(server.Options{Ledger: l})
	gw := httptest.NewServer(srv.Handler())
	defer gw.Close()
	resp, err := http.Post(gw.URL+"/v1/chat/completions", "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 503 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	if rec, err := l.Get(context.Background(), resp.Header.Get("X-Request-Id")); err != nil || rec.Status != "rejected" {
		t.Fatalf("record %+v %v", rec, err)
	}
	if r, _ := http.Get(gw.URL + "/readyz"); r.StatusCode != 503 {
		t.Fatalf("readyz before snapshot: %d", r.StatusCode)
	}
}
