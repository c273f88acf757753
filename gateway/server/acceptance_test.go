package server_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/llmgw/llmgw/api/snapshot"
	"github.com/llmgw/llmgw/api/tokens"
)

// 1. /health leaks nothing; /v1/models lists only the key's aliases.
func TestHealthAndModels(t *testing.T) {
	h := newHarness(t)
	h.chat(h.keyA, chatBody("chat-alpha", false, "")) // give /health some provider stats
	for _, path := range []string{"/healthz", "/readyz", "/nope"} {
		if r := h.do(http.MethodGet, path, "", ""); r.header.Get("X-Request-Id") == "" {
			t.Fatalf("%s has no X-Request-Id", path)
		}
	}
	r := h.do(http.MethodGet, "/health", "", "")
	if r.status != http.StatusOK || r.header.Get("X-Request-Id") == "" {
		t.Fatalf("/health status %d: %s", r.status, r.body)
	}
	body := string(r.body)
	for _, forbidden := range []string{"http://", "127.0.0.1", h.snap.Keys[0].Hash, h.snap.Keys[0].Prefix, h.snap.Keys[1].Prefix, "key-a", "key-b"} {
		if strings.Contains(body, forbidden) {
			t.Fatalf("/health contains %q: %s", forbidden, body)
		}
	}
	var health struct {
		Status   string `json:"status"`
		Snapshot struct {
			Version string `json:"version"`
		} `json:"snapshot"`
		Providers []struct {
			Name, Status string
		} `json:"providers"`
	}
	if err := json.Unmarshal(r.body, &health); err != nil {
		t.Fatal(err)
	}
	if health.Status != "ok" || health.Snapshot.Version != h.srv.Version() || len(health.Providers) != 2 {
		t.Fatalf("unexpected health: %s", body)
	}

	models := func(key string) []string {
		r := h.do(http.MethodGet, "/v1/models", key, "")
		if r.status != http.StatusOK {
			t.Fatalf("/v1/models status %d", r.status)
		}
		var l struct {
			Object string `json:"object"`
			Data   []struct {
				ID      string `json:"id"`
				Object  string `json:"object"`
				OwnedBy string `json:"owned_by"`
			} `json:"data"`
		}
		if err := json.Unmarshal(r.body, &l); err != nil || l.Object != "list" {
			t.Fatalf("models body %s (%v)", r.body, err)
		}
		var ids []string
		for _, d := range l.Data {
			ids = append(ids, d.ID)
		}
		return ids
	}
	if got := strings.Join(models(h.keyA), ","); got != "chat-alpha,chat-beta,chat-restricted,embed-alpha" {
		t.Fatalf("key A models %s", got)
	}
	if got := strings.Join(models(h.keyB), ","); got != "chat-alpha,chat-beta,embed-alpha" {
		t.Fatalf("key B models %s", got)
	}
	if r := h.do(http.MethodGet, "/v1/models", "", ""); r.status != http.StatusUnauthorized {
		t.Fatalf("/v1/models without key: %d", r.status)
	}
}

// 2. No key / invalid key / key without permission → 401 / 401 / 403, each
// with a request id; the key never appears in a log line (checked at cleanup).
func TestAuthErrors(t *testing.T) {
	h := newHarness(t)
	wrong := h.keyA[:len(h.keyA)-4] + "AAAA"
	cases := []struct {
		name, key, model string
		status           int
		typ, code        string
	}{
		{"no key", "", "chat-alpha", 401, "authentication_error", "missing_api_key"},
		{"malformed", "not-a-key", "chat-alpha", 401, "authentication_error", "invalid_api_key"},
		{"wrong secret", wrong, "chat-alpha", 401, "authentication_error", "invalid_api_key"},
		{"no permission", h.keyB, "chat-restricted", 403, "permission_error", "model_not_allowed"},
		{"unknown model for restricted key", h.keyB, "nope", 403, "permission_error", "model_not_allowed"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := h.chat(tc.key, chatBody(tc.model, false, ""))
			if r.status != tc.status {
				t.Fatalf("status %d, want %d: %s", r.status, tc.status, r.body)
			}
			e := r.errorBody(t)
			if e.Error.Type != tc.typ || e.Error.Code != tc.code {
				t.Fatalf("error %s/%s, want %s/%s", e.Error.Type, e.Error.Code, tc.typ, tc.code)
			}
			if strings.Contains(string(r.body), wrong) {
				t.Fatal("the presented key was echoed")
			}
		})
	}
	if c := mockCalls(t, h.alpha); c.Total != 0 {
		t.Fatalf("provider called %d times for rejected requests", c.Total)
	}
}

// An unknown alias is 404 model_not_found for a key that may use every
// alias; a key with a list gets 403 for anything off its list (see above).
func TestUnknownModel(t *testing.T) {
	h := newHarness(t, func(s *snapshot.Snapshot) { s.Keys[0].Models = []string{"*"} })
	r := h.chat(h.keyA, chatBody("no-such-model", false, ""))
	if r.status != http.StatusNotFound || r.errorBody(t).Error.Code != "model_not_found" {
		t.Fatalf("unknown model: %d %s", r.status, r.body)
	}
}

func TestDisabledAndExpiredKeys(t *testing.T) {
	h := newHarness(t, func(s *snapshot.Snapshot) {
		s.Keys[0].Disabled = true
		past := time.Now().Add(-time.Hour)
		s.Keys[1].ExpiresAt = &past
	})
	if r := h.chat(h.keyA, chatBody("chat-alpha", false, "")); r.status != 401 || r.errorBody(t).Error.Code != "key_disabled" {
		t.Fatalf("disabled key: %d %s", r.status, r.body)
	}
	if r := h.chat(h.keyB, chatBody("chat-alpha", false, "")); r.status != 401 || r.errorBody(t).Error.Code != "key_expired" {
		t.Fatalf("expired key: %d %s", r.status, r.body)
	}
}

func sdk(h *harness, key string) openai.Client {
	return openai.NewClient(option.WithBaseURL(h.gw.URL+"/v1/"), option.WithAPIKey(key), option.WithMaxRetries(0))
}

// 3. Primary healthy, through the official OpenAI SDK and as raw bytes.
func TestPrimaryHealthy(t *testing.T) {
	h := newHarness(t)
	client := sdk(h, h.keyA)
	ctx := context.Background()
	params := openai.ChatCompletionNewParams{
		Model:    "chat-alpha",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.SystemMessage("Be terse"), openai.UserMessage("Hello there")},
	}
	comp, err := client.Chat.Completions.New(ctx, params)
	if err != nil {
		t.Fatalf("SDK JSON call: %v", err)
	}
	if comp.Model != "chat-alpha" || len(comp.Choices) != 1 || !strings.HasPrefix(comp.Choices[0].Message.Content, "alpha/alpha-large says:") {
		t.Fatalf("unexpected completion: %+v", comp)
	}
	if comp.Usage.PromptTokens != 4 || comp.Usage.CompletionTokens != int64(tokens.Count(comp.Choices[0].Message.Content)) {
		t.Fatalf("usage %+v for %q", comp.Usage, comp.Choices[0].Message.Content)
	}

	params.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
	stream := client.Chat.Completions.NewStreaming(ctx, params)
	var text string
	var usageSeen bool
	for stream.Next() {
		ch := stream.Current()
		if ch.Model != "chat-alpha" {
			t.Fatalf("chunk model %q", ch.Model)
		}
		for _, c := range ch.Choices {
			text += c.Delta.Content
		}
		if ch.Usage.TotalTokens > 0 {
			usageSeen = true
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatalf("SDK stream: %v", err)
	}
	if text != comp.Choices[0].Message.Content || !usageSeen {
		t.Fatalf("stream text %q (usage %v), JSON text %q", text, usageSeen, comp.Choices[0].Message.Content)
	}

	for _, model := range []string{"chat-alpha", "chat-beta"} {
		r := h.chat(h.keyA, chatBody(model, true, ""))
		if r.status != 200 || r.header.Get("Content-Type") != "text/event-stream" || r.header.Get("X-Request-Id") == "" {
			t.Fatalf("%s stream: %d %v", model, r.status, r.header)
		}
		s := summarize(t, sseEvents(t, r.body))
		if s.done != 1 || !s.doneIsLast || len(s.errors) != 0 || s.usage == nil || s.finish != "stop" || s.contentN == 0 {
			t.Fatalf("%s stream summary %+v", model, s)
		}
		if s.usage.Completion != tokens.Count(s.content) {
			t.Fatalf("%s usage %d tokens, relayed %d", model, s.usage.Completion, tokens.Count(s.content))
		}
		rec := h.record(r.header.Get("X-Request-Id"))
		if rec.Status != "success" || !rec.Stream || rec.OutputTokens != s.usage.Completion || rec.Fallbacks != 0 {
			t.Fatalf("%s record %+v", model, rec)
		}
	}
}

// 4. Primary times out, returns 429 or 5xx, or cannot be reached → exactly
// one fallback, which succeeds; the record names the real provider. Nine
// failures of alpha in a row would open its circuit breaker and skip it
// (breaker_test.go), so the breakers are off here.
func TestFallbackOnRetryableFailure(t *testing.T) {
	h := newHarness(t, breakersOff)
	cases := []struct {
		name, directive, outcome string
		stream                   bool
	}{
		{"timeout before headers", "alpha:delay_ms=3000", "timeout", false},
		{"429", "alpha:status=429 alpha:retry_after=1", "status", false},
		{"500", "alpha:status=500", "status", false},
		{"503", "alpha:status=503", "status", false},
		{"stream timeout before headers", "alpha:delay_ms=3000", "timeout", true},
		{"stream first byte timeout", "alpha:first_byte_delay_ms=3000", "timeout", true},
		{"stream 503", "alpha:status=503", "status", true},
		{"stream error before first chunk", "alpha:error_after=0", "stream_error", true},
		{"stream drop before first chunk", "alpha:drop_after=0", "stream_error", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := h.chat(h.keyA, chatBody("chat-alpha", tc.stream, tc.directive))
			if r.status != 200 {
				t.Fatalf("status %d: %s", r.status, r.body)
			}
			if p := r.header.Get("X-Llmgw-Provider"); p != "beta" {
				t.Fatalf("X-Llmgw-Provider %q", p)
			}
			text := string(r.body)
			if tc.stream {
				s := summarize(t, sseEvents(t, r.body))
				if s.done != 1 || len(s.errors) != 0 {
					t.Fatalf("stream %+v", s)
				}
				text = s.content
			}
			if strings.Contains(text, "alpha/") || !strings.Contains(text, "beta/beta-large says:") {
				t.Fatalf("response mixes providers or misses the fallback's text: %q", text)
			}
			rec := h.record(r.header.Get("X-Request-Id"))
			if rec.Status != "success" || rec.Provider != "beta" || rec.Fallbacks != 1 || len(rec.Attempts) != 2 ||
				rec.Attempts[0].Provider != "alpha" || rec.Attempts[0].Outcome != tc.outcome || rec.Attempts[1].Outcome != "ok" {
				t.Fatalf("record %+v", rec)
			}
		})
	}
}

func TestFallbackOnConnectionFailure(t *testing.T) {
	h := newHarness(t, func(s *snapshot.Snapshot) {
		s.Providers[0].BaseURL = "http://127.0.0.1:1" // nothing listens on port 1
	})
	r := h.chat(h.keyA, chatBody("chat-alpha", false, ""))
	if r.status != 200 || r.header.Get("X-Llmgw-Provider") != "beta" {
		t.Fatalf("status %d provider %q: %s", r.status, r.header.Get("X-Llmgw-Provider"), r.body)
	}
	rec := h.record(r.header.Get("X-Request-Id"))
	if rec.Fallbacks != 1 || rec.Attempts[0].Outcome != "connection" {
		t.Fatalf("record %+v", rec)
	}
	// With no fallback allowed the failure is a 502 provider_error.
	r = h.chat(h.keyA, chatBody("chat-restricted", false, ""))
	if r.status != http.StatusBadGateway || r.errorBody(t).Error.Type != "provider_error" {
		t.Fatalf("restricted alias on a dead provider: %d %s", r.status, r.body)
	}
}

// 5. Primary answers 400/401/403 → the fallback is never called.
func TestNoFallbackOnClientErrors(t *testing.T) {
	h := newHarness(t)
	cases := []struct {
		upstream, status int
		code             string
	}{
		{400, 400, "upstream_rejected_request"},
		{401, 502, "upstream_auth_failed"},
		{403, 502, "upstream_auth_failed"},
		{404, 502, "upstream_rejected"},
	}
	for _, tc := range cases {
		for _, stream := range []bool{false, true} {
			r := h.chat(h.keyA, chatBody("chat-alpha", stream, "alpha:status="+strconv.Itoa(tc.upstream)))
			if r.status != tc.status {
				t.Fatalf("upstream %d stream=%v: status %d: %s", tc.upstream, stream, r.status, r.body)
			}
			e := r.errorBody(t)
			if e.Error.Type != "provider_error" || e.Error.Code != tc.code {
				t.Fatalf("upstream %d: error %+v", tc.upstream, e.Error)
			}
			rec := h.record(r.header.Get("X-Request-Id"))
			if rec.Fallbacks != 0 || len(rec.Attempts) != 1 || rec.Status != "error" || rec.HTTPStatus != tc.status {
				t.Fatalf("record %+v", rec)
			}
		}
	}
	if c := mockCalls(t, h.beta); c.Total != 0 {
		t.Fatalf("fallback provider called %d times", c.Total)
	}
}

// 6. Stream fails after the first content chunk → no provider switch, no
// repeated content, one error event, one [DONE], a partial record.
func TestStreamFailureAfterCommit(t *testing.T) {
	h := newHarness(t)
	for _, model := range []string{"chat-alpha", "chat-beta"} {
		flavor := strings.TrimPrefix(model, "chat-")
		other := map[string]string{"alpha": "beta", "beta": "alpha"}[flavor]
		for _, fault := range []string{"drop_after=2", "error_after=2", "stall_after=2"} {
			t.Run(model+"/"+fault, func(t *testing.T) {
				r := h.chat(h.keyA, chatBody(model, true, flavor+":chunks=5 "+flavor+":"+fault))
				if r.status != 200 {
					t.Fatalf("status %d: %s", r.status, r.body)
				}
				s := summarize(t, sseEvents(t, r.body))
				if s.done != 1 || !s.doneIsLast || len(s.errors) != 1 || s.contentN != 2 || s.usage != nil {
					t.Fatalf("summary %+v", s)
				}
				if strings.Contains(s.content, other+"/") || strings.Count(s.content, "says:") != 1 {
					t.Fatalf("content switched provider or repeated: %q", s.content)
				}
				wantCode := "upstream_interrupted"
				if strings.HasPrefix(fault, "stall") {
					wantCode = "upstream_timeout"
				}
				if e := s.errors[0].Error; e.Type != "stream_error" || e.Code != wantCode || e.RequestID != r.header.Get("X-Request-Id") {
					t.Fatalf("error event %+v", e)
				}
				rec := h.record(r.header.Get("X-Request-Id"))
				if rec.Status != "partial" || rec.Fallbacks != 0 || rec.OutputTokens != tokens.Count(s.content) || rec.Provider != flavor {
					t.Fatalf("record %+v (relayed %d tokens)", rec, tokens.Count(s.content))
				}
			})
		}
	}
	for _, s := range []*struct {
		name string
		c    int64
	}{{"alpha", mockCalls(t, h.alpha).Total}, {"beta", mockCalls(t, h.beta).Total}} {
		if s.c != 3 {
			t.Fatalf("%s called %d times, want 3 (no switch after commit)", s.name, s.c)
		}
	}
}

// 7. Key A exhausts its limit → 429, provider not called; key B unaffected.
func TestRateLimitIsPerKey(t *testing.T) {
	h := newHarness(t, func(s *snapshot.Snapshot) {
		s.Keys[0].RateLimit = snapshot.RateLimit{RPM: 1, Burst: 3}
	})
	var wg sync.WaitGroup
	var mu sync.Mutex
	got := map[string]map[int]int{"A": {}, "B": {}}
	for i := 0; i < 10; i++ {
		for name, key := range map[string]string{"A": h.keyA, "B": h.keyB} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r := h.chat(key, chatBody("chat-alpha", false, ""))
				if r.status == 429 {
					e := r.errorBody(t)
					if e.Error.Type != "rate_limit_error" || r.header.Get("Retry-After") == "" || !strings.Contains(string(r.body), "retry_after_ms") {
						t.Errorf("429 without a retry hint: %v %s", r.header, r.body)
					}
				}
				mu.Lock()
				got[name][r.status]++
				mu.Unlock()
			}()
		}
	}
	wg.Wait()
	if got["A"][200] != 3 || got["A"][429] != 7 || got["B"][200] != 10 {
		t.Fatalf("outcomes %v", got)
	}
	if c := mockCalls(t, h.alpha); c.Total != 13 {
		t.Fatalf("provider called %d times, want 13 (gateway 429s never reach it)", c.Total)
	}
}

// 8. Primary fails, fallback succeeds → /v1/usage shows one record for the
// request id with both attempts.
func TestUsageShowsFallbackOnce(t *testing.T) {
	h := newHarness(t)
	r := h.chat(h.keyA, chatBody("chat-alpha", false, "alpha:status=503"))
	id := r.header.Get("X-Request-Id")
	u := h.do(http.MethodGet, "/v1/usage?limit=500", h.keyA, "")
	var list struct {
		Data []struct {
			RequestID string `json:"request_id"`
			Provider  string `json:"provider"`
			Fallbacks int    `json:"fallbacks"`
			Attempts  []struct {
				Provider, Outcome string
				StatusCode        int `json:"status_code"`
			} `json:"attempts"`
		} `json:"data"`
	}
	if err := json.Unmarshal(u.body, &list); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, d := range list.Data {
		if d.RequestID == id {
			n++
			if d.Provider != "beta" || d.Fallbacks != 1 || len(d.Attempts) != 2 || d.Attempts[0].StatusCode != 503 {
				t.Fatalf("usage entry %+v", d)
			}
		}
	}
	if n != 1 {
		t.Fatalf("request %s appears %d times in /v1/usage", id, n)
	}
	// Key B sees none of key A's records.
	u = h.do(http.MethodGet, "/v1/usage", h.keyB, "")
	if strings.Contains(string(u.body), id) {
		t.Fatal("key B sees key A's record")
	}
}

// Each event is flushed as it arrives: with 400 ms between upstream chunks,
// the client sees the first and last content events far apart, which a
// buffered relay could not produce.
func TestStreamIsFlushedPerEvent(t *testing.T) {
	h := newHarness(t)
	req, _ := http.NewRequest(http.MethodPost, h.gw.URL+"/v1/chat/completions",
		strings.NewReader(chatBody("chat-alpha", true, "alpha:chunks=3 alpha:chunk_delay_ms=400")))
	req.Header.Set("Authorization", "Bearer "+h.keyA)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	var contentAt []time.Time
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			break
		}
		if strings.Contains(line, `"delta":{"content":"`) && !strings.Contains(line, `"content":""`) {
			contentAt = append(contentAt, time.Now())
		}
	}
	if len(contentAt) != 3 {
		t.Fatalf("%d content events, want 3", len(contentAt))
	}
	if gap := contentAt[2].Sub(contentAt[0]); gap < 400*time.Millisecond {
		t.Fatalf("first and last content events %v apart: the stream was buffered", gap)
	}
}
