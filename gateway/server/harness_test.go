package server_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/llmgw/llmgw/api/keyformat"
	"github.com/llmgw/llmgw/api/snapshot"
	"github.com/llmgw/llmgw/gateway/server"
	"github.com/llmgw/llmgw/gateway/usage"
	"github.com/llmgw/llmgw/mockproviders"
	"github.com/llmgw/llmgw/test/testutil"
)

// Upstream credentials the gateway injects; they must never reach a caller,
// a log line or the database.
const (
	alphaSecret = "alpha-upstream-secret-0123456789"
	betaSecret  = "beta-upstream-secret-9876543210"
)

// harness is a real gateway over real mock providers, all on loopback.
type harness struct {
	t      *testing.T
	alpha  *httptest.Server
	beta   *httptest.Server
	gw     *httptest.Server
	srv    *server.Server
	ledger *usage.Ledger
	dbPath string
	snap   *snapshot.Snapshot
	keyA   string // chat-alpha, chat-beta, chat-restricted
	keyB   string // chat-alpha, chat-beta
	logs   *testutil.SyncBuffer
}

type staticCreds map[string]string

func (c staticCreds) Resolve(_ context.Context, provider string, _ snapshot.Credential) (string, error) {
	return c[provider], nil
}

func newHarness(t *testing.T, mutate ...func(*snapshot.Snapshot)) *harness {
	t.Helper()
	h := &harness{t: t, logs: &testutil.SyncBuffer{}}
	h.alpha = mockServer(t, mockproviders.Alpha, alphaSecret)
	h.beta = mockServer(t, mockproviders.Beta, betaSecret)
	var err error
	h.keyA, _, _, err = keyformat.Generate()
	if err != nil {
		t.Fatal(err)
	}
	h.keyB, _, _, _ = keyformat.Generate()
	h.snap = testSnapshot(h.alpha.URL, h.beta.URL, h.keyA, h.keyB)
	for _, m := range mutate {
		m(h.snap)
	}
	h.dbPath = filepath.Join(t.TempDir(), "usage.db")
	log := slog.New(slog.NewJSONHandler(h.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	h.ledger, err = usage.Open(context.Background(), h.dbPath, usage.Options{Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	h.srv, err = server.New(server.Options{Ledger: h.ledger, Logger: log,
		Credentials: staticCreds{"alpha": alphaSecret, "beta": betaSecret}})
	if err != nil {
		t.Fatal(err)
	}
	if err := h.srv.Apply(context.Background(), h.snap); err != nil {
		t.Fatalf("apply: %v", err)
	}
	h.gw = httptest.NewServer(h.srv.Handler())
	t.Cleanup(func() {
		h.gw.Close()
		_ = h.ledger.Close()
		h.assertNoSecretsLogged()
	})
	return h
}

func mockServer(t *testing.T, f mockproviders.Flavor, key string) *httptest.Server {
	t.Helper()
	hd, err := mockproviders.NewHandler(mockproviders.Options{Flavor: f, RequireKey: key})
	if err != nil {
		t.Fatal(err)
	}
	s := httptest.NewServer(hd)
	t.Cleanup(s.Close)
	return s
}

// testSnapshot mirrors the demo stack with short timeouts so failure paths
// are quick.
func testSnapshot(alphaURL, betaURL, keyA, keyB string) *snapshot.Snapshot {
	zero, one := 0, 1
	to := snapshot.Timeouts{TotalMs: 5000, AttemptMs: 1000, FirstChunkMs: 1000, IdleMs: 500}
	key := func(id, plain string, models ...string) snapshot.Key {
		prefix, _ := keyformat.PrefixOf(plain)
		return snapshot.Key{ID: id, Prefix: prefix, Hash: keyformat.Hash(plain), Models: models,
			RateLimit: snapshot.RateLimit{RPM: 6000, Burst: 1000}}
	}
	cred := &snapshot.Credential{File: "unused-in-tests"}
	return &snapshot.Snapshot{
		Providers: []snapshot.Provider{
			{Name: "alpha", Protocol: snapshot.ProtocolOpenAI, BaseURL: alphaURL, Credential: cred},
			{Name: "beta", Protocol: snapshot.ProtocolAnthropic, BaseURL: betaURL, Credential: cred},
		},
		Aliases: []snapshot.Alias{
			{Name: "chat-alpha", Primary: snapshot.Route{Provider: "alpha", Model: "alpha-large"},
				Fallbacks: []snapshot.Route{{Provider: "beta", Model: "beta-large"}}, MaxFallbacks: &one, Timeouts: to},
			{Name: "chat-beta", Primary: snapshot.Route{Provider: "beta", Model: "beta-large"},
				Fallbacks: []snapshot.Route{{Provider: "alpha", Model: "alpha-large"}}, MaxFallbacks: &one, Timeouts: to},
			{Name: "chat-restricted", Primary: snapshot.Route{Provider: "alpha", Model: "alpha-small"}, MaxFallbacks: &zero, Timeouts: to},
		},
		Keys: []snapshot.Key{
			key("key-a", keyA, "chat-alpha", "chat-beta", "chat-restricted"),
			key("key-b", keyB, "chat-alpha", "chat-beta"),
		},
	}
}

// chatBody builds a request; directive (if any) becomes the @mock line.
func chatBody(model string, stream bool, directive string) string {
	content := "Tell me something deterministic please"
	if directive != "" {
		content += "\n@mock " + directive
	}
	m := map[string]any{"model": model, "messages": []map[string]string{
		{"role": "system", "content": "You are terse"}, {"role": "user", "content": content}}}
	if stream {
		m["stream"] = true
		m["stream_options"] = map[string]bool{"include_usage": true}
	}
	b, _ := json.Marshal(m)
	return string(b)
}

type response struct {
	status int
	header http.Header
	body   []byte
}

func (h *harness) do(method, path, key, body string) response {
	h.t.Helper()
	req, err := http.NewRequest(method, h.gw.URL+path, strings.NewReader(body))
	if err != nil {
		h.t.Fatal(err)
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		h.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		h.t.Fatalf("reading body: %v", err)
	}
	h.assertNoSecrets(string(b))
	return response{status: resp.StatusCode, header: resp.Header, body: b}
}

func (h *harness) chat(key, body string) response {
	return h.do(http.MethodPost, "/v1/chat/completions", key, body)
}

type errorBody struct {
	Error struct {
		Message   string `json:"message"`
		Type      string `json:"type"`
		Code      string `json:"code"`
		RequestID string `json:"request_id"`
	} `json:"error"`
}

func (r response) errorBody(t *testing.T) errorBody {
	t.Helper()
	var e errorBody
	if err := json.Unmarshal(r.body, &e); err != nil {
		t.Fatalf("error body is not JSON: %v: %s", err, r.body)
	}
	if e.Error.RequestID == "" || e.Error.RequestID != r.header.Get("X-Request-Id") {
		t.Fatalf("error request_id %q does not match X-Request-Id %q", e.Error.RequestID, r.header.Get("X-Request-Id"))
	}
	return e
}

// mockCalls reads a mock's call counters.
func mockCalls(t *testing.T, s *httptest.Server) mockproviders.Calls {
	t.Helper()
	resp, err := http.Get(s.URL + "/mock/calls")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var c mockproviders.Calls
	if err := json.NewDecoder(resp.Body).Decode(&c); err != nil {
		t.Fatal(err)
	}
	return c
}

func (h *harness) record(id string) usage.Record {
	h.t.Helper()
	r, err := h.ledger.Get(context.Background(), id)
	if err != nil {
		h.t.Fatalf("record %s: %v", id, err)
	}
	return r
}

// assertNoSecrets fails when s carries a plaintext gateway key or an
// upstream credential or URL.
func (h *harness) assertNoSecrets(s string) {
	h.t.Helper()
	for _, secret := range []string{h.keyA, h.keyB, alphaSecret, betaSecret} {
		if secret != "" && strings.Contains(s, secret) {
			h.t.Fatalf("a secret leaked into %q", truncate(s))
		}
	}
	for _, u := range []string{h.alpha.URL, h.beta.URL} {
		if strings.Contains(s, strings.TrimPrefix(u, "http://")) {
			h.t.Fatalf("a provider URL leaked into %q", truncate(s))
		}
	}
}

func (h *harness) assertNoSecretsLogged() {
	h.t.Helper()
	logs := h.logs.String()
	for _, secret := range []string{h.keyA, h.keyB, alphaSecret, betaSecret} {
		if strings.Contains(logs, secret) {
			h.t.Fatal("a secret appears in the gateway's logs")
		}
	}
	if keyformat.LooksLikeKey(logs) {
		h.t.Fatal("something shaped like a gateway key appears in the logs")
	}
}

func truncate(s string) string {
	if len(s) > 300 {
		return s[:300] + "…"
	}
	return s
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t *testing.T, d time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met in time")
		}
		time.Sleep(10 * time.Millisecond)
	}
}
