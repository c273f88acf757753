package server_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/llmgw/llmgw/api/keyformat"
	"github.com/llmgw/llmgw/api/snapshot"
	"github.com/llmgw/llmgw/gateway/localstack"
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

// harness is the local stack (gateway/localstack): a real gateway process
// fed from a snapshot file, over real mock providers, all on loopback.
type harness struct {
	t      *testing.T
	alpha  *endpoint
	beta   *endpoint
	gw     *endpoint
	srv    *server.Server
	ledger *usage.Ledger
	dbPath string
	snap   *snapshot.Snapshot
	keyA   string // chat-alpha, chat-beta, chat-restricted
	keyB   string // chat-alpha, chat-beta
	logs   *testutil.SyncBuffer
}

// endpoint is one listener of the stack.
type endpoint struct{ URL string }

// newHarness starts the demo stack with short timeouts, so failure paths are
// quick, and limits no test reaches unless it means to; mutate edits the
// snapshot before the gateway loads it.
func newHarness(t *testing.T, mutate ...func(*snapshot.Snapshot)) *harness {
	t.Helper()
	h, st := startStack(t, localstack.Options{Dir: t.TempDir(), Mutate: func(s *snapshot.Snapshot) {
		to := snapshot.Timeouts{TotalMs: 5000, AttemptMs: 1000, FirstChunkMs: 1000, IdleMs: 500}
		for i := range s.Aliases {
			s.Aliases[i].Timeouts = to
		}
		for i := range s.Keys {
			s.Keys[i].RateLimit = snapshot.RateLimit{RPM: 6000, Burst: 1000}
		}
		for _, m := range mutate {
			m(s)
		}
	}})
	var err error
	if h.snap, err = snapshot.LoadFile(st.SnapshotPath); err != nil {
		t.Fatal(err)
	}
	return h
}

// startStack starts the local stack with opts (the upstream secrets, a
// debug logger into h.logs and a short drain are filled in) and closes it
// when the test ends, checking that no secret was logged.
func startStack(t *testing.T, opts localstack.Options) (*harness, *localstack.Stack) {
	t.Helper()
	h := &harness{t: t, logs: &testutil.SyncBuffer{}}
	opts.AlphaKey, opts.BetaKey = alphaSecret, betaSecret
	opts.Logger = slog.New(slog.NewJSONHandler(h.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	if opts.DrainTimeout == 0 {
		opts.DrainTimeout = 2 * time.Second
	}
	st, err := localstack.Start(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := st.Close(); err != nil {
			t.Errorf("closing the stack: %v", err)
		}
		h.assertNoSecretsLogged()
	})
	h.alpha, h.beta, h.gw = &endpoint{st.AlphaURL}, &endpoint{st.BetaURL}, &endpoint{st.URL}
	h.srv, h.ledger, h.dbPath, h.keyA, h.keyB = st.Server, st.Ledger, st.DBPath, st.KeyA, st.KeyB
	return h, st
}

// oneKeySnapshot is the least a request needs to get past authentication:
// one key allowed every model and one alias, "chat", on a provider nobody
// listens on; plain is the key's secret.
func oneKeySnapshot(t *testing.T) (plain string, snap *snapshot.Snapshot) {
	t.Helper()
	plain, prefix, hash, err := keyformat.Generate()
	if err != nil {
		t.Fatal(err)
	}
	return plain, &snapshot.Snapshot{
		Providers: []snapshot.Provider{{Name: "alpha", Protocol: snapshot.ProtocolOpenAI, BaseURL: "http://127.0.0.1:1"}},
		Aliases:   []snapshot.Alias{{Name: "chat", Primary: snapshot.Route{Provider: "alpha", Model: "m"}}},
		Keys:      []snapshot.Key{{ID: "key-a", Prefix: prefix, Hash: hash, Models: []string{"*"}}},
	}
}

// directStack is a gateway in this process (no local stack) with
// oneKeySnapshot's key and alias "chat" on the provider at upstreamURL.
type directStack struct {
	key    string
	ledger *usage.Ledger
	url    string // the gateway's base URL
}

// startDirect starts a directStack with opts (its Ledger is filled in);
// mutate edits the snapshot before the gateway loads it.
func startDirect(t *testing.T, upstreamURL string, opts server.Options, mutate ...func(*snapshot.Snapshot)) *directStack {
	t.Helper()
	plain, snap := oneKeySnapshot(t)
	snap.Providers[0].BaseURL = upstreamURL
	for _, m := range mutate {
		m(snap)
	}
	l, err := usage.Open(t.Context(), t.TempDir()+"/u.db", usage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	opts.Ledger = l
	srv, err := server.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Apply(t.Context(), snap); err != nil {
		t.Fatal(err)
	}
	gw := httptest.NewServer(srv.Handler())
	t.Cleanup(gw.Close)
	return &directStack{key: plain, ledger: l, url: gw.URL}
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

// cancelAfterFirstBytes posts a streaming chat request, reads the first
// bytes of the answer, hangs up and returns the request id.
func (h *harness) cancelAfterFirstBytes(key, body string) string {
	h.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, h.gw.URL+"/v1/chat/completions", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		h.t.Fatal(err)
	}
	defer resp.Body.Close()
	if _, err := resp.Body.Read(make([]byte, 64)); err != nil {
		h.t.Fatal(err)
	}
	return resp.Header.Get("X-Request-Id")
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
func mockCalls(t *testing.T, s *endpoint) mockproviders.Calls {
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
