package server_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/llmgw/llmgw/api/keyformat"
	"github.com/llmgw/llmgw/api/snapshot"
	"github.com/llmgw/llmgw/gateway/localstack"
	"github.com/llmgw/llmgw/gateway/server"
	"github.com/llmgw/llmgw/gateway/usage"
	"github.com/llmgw/llmgw/mockproviders"
	"github.com/llmgw/llmgw/test/testutil"
)

// Traces of model requests (tracing.go), on the demo configuration
// (localstack.Demo) served by a gateway in this process with an in-memory
// span recorder, over the real mock providers, each behind a recorder of
// the traceparent it was sent.

// The caller's trace context in the tests: its trace and its span.
const (
	callerTrace = "4bf92f3577b34da6a3ce929d0e0e4736"
	callerSpan  = "00f067aa0ba902b7"
	callerTP    = "00-" + callerTrace + "-" + callerSpan + "-01"
)

// traceStack is the demo stack with tracing.
type traceStack struct {
	t          *testing.T
	url        string
	keyA, keyB string
	ledger     *usage.Ledger
	spans      *tracetest.SpanRecorder // nil: tracing off
	logs       *testutil.SyncBuffer
	alpha      *sentHeaders
	beta       *sentHeaders
	alphaAddr  *url.URL
}

// sentHeaders keeps the trace headers of every request a mock got.
type sentHeaders struct {
	mu          sync.Mutex
	traceparent []string
	tracestate  []string
}

func (s *sentHeaders) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/v1/") {
			s.mu.Lock()
			s.traceparent = append(s.traceparent, r.Header.Get("Traceparent"))
			s.tracestate = append(s.tracestate, r.Header.Get("Tracestate"))
			s.mu.Unlock()
		}
		h.ServeHTTP(w, r)
	})
}

func (s *sentHeaders) last(t *testing.T) (traceparent, tracestate string) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.traceparent) == 0 {
		t.Fatal("the provider got no request")
	}
	return s.traceparent[len(s.traceparent)-1], s.tracestate[len(s.tracestate)-1]
}

// betaCredential resolves mock beta's upstream key.
type betaCredential struct{}

func (betaCredential) Resolve(context.Context, string, snapshot.Credential) (string, error) {
	return betaSecret, nil
}

// traceOn is a tracer into a fresh recorder, sampling as the SDK does by
// default (parent-based, always on).
func traceOn() (trace.Tracer, *tracetest.SpanRecorder) {
	sr := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sr))
	return tp.Tracer("llmgw-test"), sr
}

// newTraceStack starts the mocks and a gateway on the demo snapshot with
// tracer (nil: tracing off), short timeouts and rate limits no test meets
// unless mutate sets them.
func newTraceStack(t *testing.T, tracer trace.Tracer, sr *tracetest.SpanRecorder, mutate ...func(*snapshot.Snapshot)) *traceStack {
	t.Helper()
	ts := &traceStack{t: t, spans: sr, logs: &testutil.SyncBuffer{}, alpha: &sentHeaders{}, beta: &sentHeaders{}}
	mock := func(flavor mockproviders.Flavor, key string, sent *sentHeaders) string {
		h, err := mockproviders.NewHandler(mockproviders.Options{Flavor: flavor, RequireKey: key})
		if err != nil {
			t.Fatal(err)
		}
		srv := httptest.NewServer(sent.wrap(h))
		t.Cleanup(srv.Close)
		return srv.URL
	}
	alphaURL, betaURL := mock(mockproviders.Alpha, "", ts.alpha), mock(mockproviders.Beta, betaSecret, ts.beta)
	var err error
	if ts.alphaAddr, err = url.Parse(alphaURL); err != nil {
		t.Fatal(err)
	}
	for _, k := range []*string{&ts.keyA, &ts.keyB} {
		if *k, _, _, err = keyformat.Generate(); err != nil {
			t.Fatal(err)
		}
	}
	snap := localstack.Demo(alphaURL, betaURL, ts.keyA, ts.keyB)
	for i := range snap.Aliases {
		snap.Aliases[i].Timeouts = snapshot.Timeouts{TotalMs: 5000, AttemptMs: 2000, FirstChunkMs: 2000, IdleMs: 2000}
	}
	for i := range snap.Keys {
		snap.Keys[i].RateLimit = snapshot.RateLimit{RPM: 6000, Burst: 1000}
	}
	for _, m := range mutate {
		m(snap)
	}
	if ts.ledger, err = usage.Open(t.Context(), t.TempDir()+"/u.db", usage.Options{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ts.ledger.Close() })
	srv, err := server.New(server.Options{Ledger: ts.ledger, Credentials: betaCredential{}, Tracer: tracer,
		Logger: slog.New(slog.NewJSONHandler(ts.logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Apply(t.Context(), snap); err != nil {
		t.Fatal(err)
	}
	gw := httptest.NewServer(srv.Handler())
	t.Cleanup(gw.Close)
	ts.url = gw.URL
	return ts
}

// post sends body to path with key and the caller's extra headers (name,
// value pairs), and returns the answer read to its end.
func (ts *traceStack) post(path, key, body string, headers ...string) response {
	ts.t.Helper()
	req, err := http.NewRequest(http.MethodPost, ts.url+path, strings.NewReader(body))
	if err != nil {
		ts.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		ts.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		ts.t.Fatal(err)
	}
	return response{status: resp.StatusCode, header: resp.Header, body: b}
}

func (ts *traceStack) record(id string) usage.Record {
	ts.t.Helper()
	r, err := ts.ledger.Get(context.Background(), id)
	if err != nil {
		ts.t.Fatalf("record %s: %v", id, err)
	}
	return r
}

// trace is the spans of one request: its server span and its client spans,
// in the order they started.
type traceOf struct {
	server  sdktrace.ReadOnlySpan
	clients []sdktrace.ReadOnlySpan
}

// traceFor finds the spans of the request whose llmgw.request_id is id.
func (ts *traceStack) traceFor(id string) traceOf {
	ts.t.Helper()
	var tr traceOf
	ended := ts.spans.Ended()
	for _, s := range ended {
		if s.SpanKind() == trace.SpanKindServer && attrs(s)["llmgw.request_id"] == id {
			if tr.server != nil {
				ts.t.Fatalf("two server spans for request %s", id)
			}
			tr.server = s
		}
	}
	if tr.server == nil {
		ts.t.Fatalf("no server span for request %s among %d", id, len(ended))
	}
	for _, s := range ended {
		if s.SpanKind() == trace.SpanKindClient && s.Parent().SpanID() == tr.server.SpanContext().SpanID() {
			tr.clients = append(tr.clients, s)
		}
	}
	return tr
}

// attrs are a span's attributes, each value as it is emitted.
func attrs(s sdktrace.ReadOnlySpan) map[string]string {
	m := map[string]string{}
	for _, kv := range s.Attributes() {
		m[string(kv.Key)] = kv.Value.String()
	}
	return m
}

// wantAttrs checks that a span has the attributes of want, and that it has
// none of absent.
func wantAttrs(t *testing.T, s sdktrace.ReadOnlySpan, want map[string]string, absent ...string) {
	t.Helper()
	got := attrs(s)
	for k, v := range want {
		if g, ok := got[k]; !ok || g != v {
			t.Errorf("span %q: %s = %q (set %v), want %q", s.Name(), k, g, ok, v)
		}
	}
	for _, k := range absent {
		if g, ok := got[k]; ok {
			t.Errorf("span %q has %s = %q", s.Name(), k, g)
		}
	}
}

// assertNoText fails if any span recorded says any of texts: in its name,
// status, attributes, events or links.
func (ts *traceStack) assertNoText(texts ...string) {
	ts.t.Helper()
	for _, s := range ts.spans.Ended() {
		var says []string
		says = append(says, s.Name(), s.Status().Description)
		for _, kv := range s.Attributes() {
			says = append(says, string(kv.Key), kv.Value.String())
		}
		for _, e := range s.Events() {
			says = append(says, e.Name)
			for _, kv := range e.Attributes {
				says = append(says, string(kv.Key), kv.Value.String())
			}
		}
		all := strings.Join(says, "\x00")
		for _, text := range texts {
			if text != "" && strings.Contains(all, text) {
				ts.t.Fatalf("span %q carries %q", s.Name(), text)
			}
		}
		for _, secret := range []string{ts.keyA, ts.keyB, betaSecret, keyformat.Hash(ts.keyA), keyformat.Hash(ts.keyB)} {
			if strings.Contains(all, secret) {
				ts.t.Fatalf("span %q carries a key, its hash or a credential", s.Name())
			}
		}
	}
}

// chatContent is the answer's text of a chat completion.
func chatContent(t *testing.T, body []byte) string {
	t.Helper()
	var c struct {
		Choices []struct {
			Message struct {
				Content string `json:"content"`
			} `json:"message"`
		} `json:"choices"`
	}
	if err := json.Unmarshal(body, &c); err != nil || len(c.Choices) == 0 || c.Choices[0].Message.Content == "" {
		t.Fatalf("no answer text in %s (%v)", body, err)
	}
	return c.Choices[0].Message.Content
}

// logLine is the request's one log line.
func (ts *traceStack) logLine(msg, id string) map[string]any {
	ts.t.Helper()
	for _, l := range strings.Split(ts.logs.String(), "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(l), &m) == nil && m["msg"] == msg && m["request_id"] == id {
			return m
		}
	}
	ts.t.Fatalf("no %s log line for %s", msg, id)
	return nil
}

const tracedPrompt = "Name the colour of a ripe lemon"

// A chat request with the caller's traceparent and tracestate: one server
// span, the child of the caller's span in the caller's trace, carrying the
// final record; one client span under it, whose context the provider got;
// the log line names the server span.
func TestTraceOfAChatRequest(t *testing.T) {
	tracer, sr := traceOn()
	ts := newTraceStack(t, tracer, sr)
	body := `{"model":"chat-alpha","messages":[{"role":"user","content":"` + tracedPrompt +
		`\n@mock *:cached_tokens=2 *:reasoning_tokens=3"}]}`
	r := ts.post("/v1/chat/completions", ts.keyA, body, "Traceparent", callerTP, "Tracestate", "caller=t61rcWkgMzE")
	if r.status != http.StatusOK {
		t.Fatalf("status %d: %s", r.status, r.body)
	}
	id := r.header.Get("X-Request-Id")
	rec := ts.record(id)
	tr := ts.traceFor(id)
	srv := tr.server

	if got := srv.SpanContext().TraceID().String(); got != callerTrace {
		t.Fatalf("server span in trace %s, want the caller's %s", got, callerTrace)
	}
	if p := srv.Parent(); p.SpanID().String() != callerSpan || !p.IsRemote() {
		t.Fatalf("server span's parent %s (remote %v), want the caller's span %s", p.SpanID(), p.IsRemote(), callerSpan)
	}
	if srv.SpanContext().TraceState().Get("caller") != "t61rcWkgMzE" {
		t.Errorf("the caller's tracestate was not continued: %q", srv.SpanContext().TraceState())
	}
	if srv.Name() != "chat chat-alpha" || srv.Status().Code != codes.Unset {
		t.Errorf("server span %q status %v", srv.Name(), srv.Status())
	}
	if rec.Cost == 0 || rec.Currency == "" || rec.CachedInputTokens != 2 || rec.ReasoningTokens != 3 {
		t.Fatalf("the record does not exercise cost and token kinds: %+v", rec)
	}
	wantAttrs(t, srv, map[string]string{
		"gen_ai.operation.name": "chat", "gen_ai.request.model": "chat-alpha", "gen_ai.response.model": "alpha-large",
		"gen_ai.provider.name": "openai", "llmgw.provider": "alpha",
		"gen_ai.usage.input_tokens":            strconv.Itoa(rec.InputTokens),
		"gen_ai.usage.output_tokens":           strconv.Itoa(rec.OutputTokens),
		"gen_ai.usage.cache_read.input_tokens": "2", "llmgw.usage.reasoning_tokens": "3",
		"llmgw.cost": rec.Cost.String(), "llmgw.cost.currency": rec.Currency,
		"llmgw.key_id": "key-a", "llmgw.request_id": id, "llmgw.endpoint": "chat", "llmgw.fallbacks": "0",
		"llmgw.status": "success", "http.response.status_code": "200", "llmgw.stream": "false",
	}, "error.type")

	if len(tr.clients) != 1 {
		t.Fatalf("%d client spans, want 1", len(tr.clients))
	}
	cl := tr.clients[0]
	if cl.Name() != "chat alpha-large" || cl.SpanContext().TraceID().String() != callerTrace || cl.Status().Code != codes.Unset {
		t.Errorf("client span %q in trace %s, status %v", cl.Name(), cl.SpanContext().TraceID(), cl.Status())
	}
	wantAttrs(t, cl, map[string]string{
		"gen_ai.operation.name": "chat", "gen_ai.provider.name": "openai", "llmgw.provider": "alpha",
		"gen_ai.request.model": "alpha-large", "llmgw.attempt.outcome": "ok", "http.response.status_code": "200",
		"llmgw.fallback_index": "0", "server.address": ts.alphaAddr.Hostname(), "server.port": ts.alphaAddr.Port(),
	}, "error.type")

	tp, state := ts.alpha.last(t)
	if want := "00-" + callerTrace + "-" + cl.SpanContext().SpanID().String() + "-01"; tp != want {
		t.Errorf("the provider got traceparent %q, want %q (the client span's)", tp, want)
	}
	if !strings.Contains(state, "caller=t61rcWkgMzE") {
		t.Errorf("the provider got tracestate %q, want the caller's", state)
	}

	line := ts.logLine("chat", id)
	if line["trace_id"] != callerTrace || line["span_id"] != srv.SpanContext().SpanID().String() {
		t.Errorf("log line trace_id %v span_id %v, want the server span's", line["trace_id"], line["span_id"])
	}
	ts.assertNoText(tracedPrompt, chatContent(t, r.body), "@mock")
}

// Fallback: alpha fails (503) and beta answers: two client spans, in
// order, with their outcomes. Alpha's breaker is then open: the next
// request passes it over, an event on its server span, and calls beta only.
func TestTraceOfAFallbackAndABreakerSkip(t *testing.T) {
	tracer, sr := traceOn()
	ts := newTraceStack(t, tracer, sr, alphaBreaker(1, 1))
	r := ts.post("/v1/chat/completions", ts.keyA, chatBody("chat-alpha", false, "alpha:status=503"))
	if r.status != http.StatusOK || r.header.Get("X-Llmgw-Provider") != "beta" {
		t.Fatalf("status %d provider %q: %s", r.status, r.header.Get("X-Llmgw-Provider"), r.body)
	}
	tr := ts.traceFor(r.header.Get("X-Request-Id"))
	if len(tr.clients) != 2 {
		t.Fatalf("%d client spans, want 2", len(tr.clients))
	}
	first, second := tr.clients[0], tr.clients[1]
	if first.StartTime().After(second.StartTime()) {
		first, second = second, first
	}
	wantAttrs(t, first, map[string]string{"llmgw.provider": "alpha", "gen_ai.provider.name": "openai",
		"llmgw.fallback_index": "0", "llmgw.attempt.outcome": "status", "http.response.status_code": "503", "error.type": "503"})
	if first.Status().Code != codes.Error {
		t.Errorf("failed attempt's status %v, want Error", first.Status())
	}
	wantAttrs(t, second, map[string]string{"llmgw.provider": "beta", "gen_ai.provider.name": "anthropic",
		"gen_ai.request.model": "beta-large", "llmgw.fallback_index": "1", "llmgw.attempt.outcome": "ok",
		"http.response.status_code": "200"}, "error.type")
	wantAttrs(t, tr.server, map[string]string{"llmgw.fallbacks": "1", "llmgw.provider": "beta",
		"gen_ai.provider.name": "anthropic", "gen_ai.response.model": "beta-large", "llmgw.status": "success"}, "error.type")
	if tp, _ := ts.beta.last(t); !strings.Contains(tp, "-"+second.SpanContext().SpanID().String()+"-") {
		t.Errorf("beta got traceparent %q, want its attempt's span", tp)
	}
	if len(tr.server.Events()) != 0 {
		t.Errorf("events on a request that skipped nothing: %v", tr.server.Events())
	}

	r = ts.post("/v1/chat/completions", ts.keyA, chatBody("chat-alpha", false, ""))
	if r.status != http.StatusOK || r.header.Get("X-Llmgw-Provider") != "beta" {
		t.Fatalf("with alpha's breaker open: status %d provider %q", r.status, r.header.Get("X-Llmgw-Provider"))
	}
	tr = ts.traceFor(r.header.Get("X-Request-Id"))
	if len(tr.clients) != 1 || attrs(tr.clients[0])["llmgw.provider"] != "beta" || attrs(tr.clients[0])["llmgw.fallback_index"] != "0" {
		t.Fatalf("client spans %d, want beta's alone, as the first attempt", len(tr.clients))
	}
	ev := tr.server.Events()
	if len(ev) != 1 || ev[0].Name != "provider skipped" {
		t.Fatalf("server span events %v, want one provider skipped", ev)
	}
	got := map[attribute.Key]string{}
	for _, kv := range ev[0].Attributes {
		got[kv.Key] = kv.Value.String()
	}
	if got["llmgw.provider"] != "alpha" || got["llmgw.skip.reason"] != "circuit_open" {
		t.Fatalf("skip event attributes %v", got)
	}
	ts.assertNoText("Tell me something deterministic", "You are terse", chatContent(t, r.body), "@mock")
}

// Every endpoint that routes to providers makes a server span of its
// operation, named after it and the alias, with one client span per
// attempt; a stream's attempt ends at its commit point.
func TestTraceOfEachEndpoint(t *testing.T) {
	tracer, sr := traceOn()
	ts := newTraceStack(t, tracer, sr)
	const prompt = "Describe a quiet harbour at dawn"
	tests := []struct {
		name, path, body     string
		headers              []string
		op, endpoint, alias  string
		providerModel, proto string
		stream               bool
	}{
		{"chat stream", "/v1/chat/completions", `{"model":"chat-alpha","stream":true,"messages":[{"role":"user","content":"` + prompt + `"}]}`,
			nil, "chat", "chat", "chat-alpha", "alpha-large", "openai", true},
		{"embeddings", "/v1/embeddings", `{"model":"embed-alpha","input":"` + prompt + `"}`,
			nil, "embeddings", "embeddings", "embed-alpha", "alpha-embed", "openai", false},
		{"messages", "/v1/messages", `{"model":"chat-beta","max_tokens":50,"messages":[{"role":"user","content":"` + prompt + `"}]}`,
			[]string{"Anthropic-Version", "2023-06-01"}, "chat", "messages", "chat-beta", "beta-large", "anthropic", false},
		{"messages stream", "/v1/messages", `{"model":"chat-beta","max_tokens":50,"stream":true,"messages":[{"role":"user","content":"` + prompt + `"}]}`,
			[]string{"Anthropic-Version", "2023-06-01"}, "chat", "messages", "chat-beta", "beta-large", "anthropic", true},
		{"responses", "/v1/responses", `{"model":"chat-alpha","input":"` + prompt + `"}`,
			nil, "chat", "responses", "chat-alpha", "alpha-large", "openai", false},
		{"responses stream", "/v1/responses", `{"model":"chat-beta","stream":true,"input":"` + prompt + `"}`,
			nil, "chat", "responses", "chat-beta", "beta-large", "anthropic", true},
	}
	var answers []string
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := ts.post(tc.path, ts.keyA, tc.body, tc.headers...)
			if r.status != http.StatusOK {
				t.Fatalf("status %d: %s", r.status, r.body)
			}
			answers = append(answers, string(r.body))
			id := r.header.Get("X-Request-Id")
			rec := ts.record(id)
			tr := ts.traceFor(id)
			if want := tc.op + " " + tc.alias; tr.server.Name() != want {
				t.Errorf("server span %q, want %q", tr.server.Name(), want)
			}
			wantAttrs(t, tr.server, map[string]string{"gen_ai.operation.name": tc.op, "llmgw.endpoint": tc.endpoint,
				"gen_ai.request.model": tc.alias, "gen_ai.response.model": tc.providerModel, "gen_ai.provider.name": tc.proto,
				"llmgw.status": "success", "llmgw.stream": strconv.FormatBool(tc.stream),
				"gen_ai.usage.input_tokens": strconv.Itoa(rec.InputTokens), "gen_ai.usage.output_tokens": strconv.Itoa(rec.OutputTokens)},
				"error.type")
			if len(tr.clients) != 1 {
				t.Fatalf("%d client spans, want 1", len(tr.clients))
			}
			cl := tr.clients[0]
			if want := tc.op + " " + tc.providerModel; cl.Name() != want {
				t.Errorf("client span %q, want %q", cl.Name(), want)
			}
			wantAttrs(t, cl, map[string]string{"gen_ai.operation.name": tc.op, "llmgw.attempt.outcome": "ok", "gen_ai.provider.name": tc.proto})
			if tc.stream && !cl.EndTime().Before(tr.server.EndTime()) {
				t.Error("a stream's attempt span did not end before its request's")
			}
		})
	}
	ts.assertNoText(prompt)
	// What the mocks answered, content and events, appears in no span: a
	// span says nothing that an answer's body says but the names both
	// carry (the alias, the provider model).
	for _, s := range ts.spans.Ended() {
		for _, kv := range s.Attributes() {
			v := kv.Value.String()
			if len(v) < 24 {
				continue // ids, names and numbers an answer may repeat
			}
			for _, a := range answers {
				if strings.Contains(a, v) && kv.Key != "llmgw.request_id" {
					t.Errorf("span %q attribute %s = %q is in an answer", s.Name(), kv.Key, v)
				}
			}
		}
	}
}

// A request the gateway refuses has its server span, with the record's
// error type and the Error status, and no client span: no provider was
// called.
func TestTraceOfARefusedRequest(t *testing.T) {
	tracer, sr := traceOn()
	ts := newTraceStack(t, tracer, sr, func(s *snapshot.Snapshot) {
		for i := range s.Keys {
			if s.Keys[i].ID == "key-b" {
				s.Keys[i].RateLimit = snapshot.RateLimit{RPM: 1, Burst: 1}
			}
		}
	})
	bad, _, _, err := keyformat.Generate()
	if err != nil {
		t.Fatal(err)
	}
	// key B's one request of the minute, answered.
	if r := ts.post("/v1/chat/completions", ts.keyB, chatBody("chat-alpha", false, "")); r.status != http.StatusOK {
		t.Fatalf("key B's first request: %d", r.status)
	}
	tests := []struct {
		name, key string
		status    int
		keyID     string
	}{
		{"unknown key", bad, http.StatusUnauthorized, ""},
		{"rate limited", ts.keyB, http.StatusTooManyRequests, "key-b"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := ts.post("/v1/chat/completions", tc.key, chatBody("chat-alpha", false, ""), "Traceparent", callerTP)
			if r.status != tc.status {
				t.Fatalf("status %d, want %d", r.status, tc.status)
			}
			id := r.header.Get("X-Request-Id")
			rec := ts.record(id)
			if rec.ErrorType == "" {
				t.Fatal("the record has no error type")
			}
			tr := ts.traceFor(id)
			want := map[string]string{"llmgw.status": "rejected", "http.response.status_code": strconv.Itoa(tc.status),
				"error.type": rec.ErrorType}
			absent := []string{"gen_ai.response.model", "llmgw.provider"}
			if tc.keyID != "" {
				want["llmgw.key_id"] = tc.keyID
			} else {
				absent = append(absent, "llmgw.key_id")
			}
			wantAttrs(t, tr.server, want, absent...)
			if st := tr.server.Status(); st.Code != codes.Error || st.Description != rec.ErrorType {
				t.Errorf("status %v, want Error %q", st, rec.ErrorType)
			}
			for _, s := range ts.spans.Ended() {
				if s.SpanKind() == trace.SpanKindClient && s.SpanContext().TraceID() == tr.server.SpanContext().TraceID() {
					t.Fatalf("a client span %q for a refused request", s.Name())
				}
			}
		})
	}
	ts.assertNoText("Tell me something deterministic", "You are terse", bad)
}

// Tracing off (no tracer, or a no-op one): no span, no trace_id in the log
// line of a request without trace context, and a caller's traceparent goes
// to the provider as it came, its ids in the log line. A caller's trace
// that is not sampled, with tracing on: nothing is recorded, but the
// provider gets the gateway's attempt span id in the caller's trace, not
// sampled.
func TestTraceContextWithTracingOffOrUnsampled(t *testing.T) {
	const unsampledTP = "00-" + callerTrace + "-" + callerSpan + "-00"
	tracer, sr := traceOn()
	tests := []struct {
		name        string
		tracer      trace.Tracer
		spans       *tracetest.SpanRecorder
		traceparent string
		// want: what the provider gets ("": none; "new": the caller's trace,
		// another span, not sampled); logged: the log line's trace_id and
		// span_id ("" none).
		want, logTrace, logSpan string
	}{
		{"off, no trace context", nil, nil, "", "", "", ""},
		{"off, caller's traceparent", nil, nil, callerTP, callerTP, callerTrace, callerSpan},
		{"no-op tracer, caller's traceparent", noop.NewTracerProvider().Tracer(""), nil, callerTP, callerTP, callerTrace, callerSpan},
		{"on, caller not sampled", tracer, sr, unsampledTP, "new", callerTrace, "new"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ts := newTraceStack(t, tc.tracer, tc.spans)
			var hdr []string
			if tc.traceparent != "" {
				hdr = []string{"Traceparent", tc.traceparent}
			}
			r := ts.post("/v1/chat/completions", ts.keyA, chatBody("chat-alpha", false, ""), hdr...)
			if r.status != http.StatusOK {
				t.Fatalf("status %d: %s", r.status, r.body)
			}
			got, _ := ts.alpha.last(t)
			line := ts.logLine("chat", r.header.Get("X-Request-Id"))
			switch tc.want {
			case "new":
				parts := strings.Split(got, "-")
				if len(parts) != 4 || parts[1] != callerTrace || parts[2] == callerSpan || parts[3] != "00" {
					t.Fatalf("the provider got %q, want the caller's trace, the gateway's span, not sampled", got)
				}
				if n := len(tc.spans.Ended()); n != 0 {
					t.Fatalf("%d spans recorded of a trace not sampled", n)
				}
				if line["trace_id"] != callerTrace || line["span_id"] == callerSpan || line["span_id"] == nil {
					t.Fatalf("log line trace_id %v span_id %v", line["trace_id"], line["span_id"])
				}
				return
			default:
				if got != tc.want {
					t.Fatalf("the provider got traceparent %q, want %q", got, tc.want)
				}
			}
			if tc.logTrace == "" {
				if _, ok := line["trace_id"]; ok {
					t.Fatalf("log line has trace_id %v with no trace context", line["trace_id"])
				}
				if _, ok := line["span_id"]; ok {
					t.Fatalf("log line has span_id %v with no trace context", line["span_id"])
				}
				return
			}
			if line["trace_id"] != tc.logTrace || line["span_id"] != tc.logSpan {
				t.Fatalf("log line trace_id %v span_id %v, want %s %s", line["trace_id"], line["span_id"], tc.logTrace, tc.logSpan)
			}
		})
	}
}
