package provider

import (
	"context"
	"errors"
	"io"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-json-experiment/json"

	"github.com/llmgw/llmgw/api/tokens"
	"github.com/llmgw/llmgw/api/wire/openai"
	"github.com/llmgw/llmgw/gateway/translate"
	"github.com/llmgw/llmgw/mockproviders"
)

// These tests run the adapters, with the gateway's translators, against the
// project's mock providers: alpha speaks the OpenAI protocol, beta the
// Anthropic one, and both require the credential.

type mockCase struct {
	flavor   mockproviders.Flavor
	protocol string
	model    string
}

var mockCases = []mockCase{
	{mockproviders.Alpha, ProtocolOpenAI, "alpha-large"},
	{mockproviders.Beta, ProtocolAnthropic, "beta-large"},
}

func startMock(t *testing.T, mc mockCase, mod ...func(*Config)) (Adapter, *httptest.Server) {
	t.Helper()
	h, err := mockproviders.NewHandler(mockproviders.Options{Flavor: mc.flavor, RequireKey: testCredential})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return newAdapter(t, mc.protocol, srv.URL, mod...), srv
}

// mockCall is a caller's request to the mock: a conversation whose last
// message carries the directive, and extra members of the caller's body.
type mockCall struct {
	mc        mockCase
	directive string
	extra     []string
}

func (c mockCall) body(t *testing.T, stream bool) [][]byte {
	t.Helper()
	last := "Tell me about rivers."
	if c.directive != "" {
		last += "\n@mock " + c.directive
	}
	msgs, err := json.Marshal([]map[string]string{
		{"role": "system", "content": "You are terse."},
		{"role": "user", "content": "Hello there."},
		{"role": "assistant", "content": "Hi."},
		{"role": "user", "content": last},
	})
	if err != nil {
		t.Fatal(err)
	}
	members := append([]string{`"model":"alias"`, `"messages":` + string(msgs), `"temperature":0.2`, `"user":"u-1"`}, c.extra...)
	if stream {
		members = append(members, `"stream":true`)
	}
	segs, err := translate.Chat(c.mc.protocol).Request(&translate.ChatRequest{Body: []byte("{" + strings.Join(members, ",") + "}"), Stream: stream, IncludeUsage: stream}, c.mc.model)
	if err != nil {
		t.Fatal(err)
	}
	return segs
}

// mockAnswer is what a test reads of a translated answer or stream.
type mockAnswer struct {
	text, finish string
	toolCalls    []string // name(arguments)
	usage        *translate.Usage
	contentParts int // stream: the chunks that carried content
}

func readAnswer(t *testing.T, ans *translate.Answer) mockAnswer {
	t.Helper()
	var c openai.ChatCompletion
	if err := json.Unmarshal(ans.Body, &c); err != nil || len(c.Choices) != 1 || c.Model != "alias" {
		t.Fatalf("answer %s: %v", ans.Body, err)
	}
	m := mockAnswer{finish: c.Choices[0].FinishReason, usage: ans.Usage}
	if p := c.Choices[0].Message.Content; p != nil {
		m.text = *p
	}
	for _, tc := range c.Choices[0].Message.ToolCalls {
		m.toolCalls = append(m.toolCalls, tc.Function.Name+"("+tc.Function.Arguments+")")
	}
	return m
}

func readStream(t *testing.T, chunks []relayed) mockAnswer {
	t.Helper()
	var m mockAnswer
	var names, args []string
	for _, r := range chunks {
		if r.usage != nil {
			m.usage = r.usage
		}
		if r.data == "" {
			continue
		}
		var c openai.ChatCompletionChunk
		if err := json.Unmarshal([]byte(r.data), &c); err != nil || c.Model != "alias" {
			t.Fatalf("chunk %s: %v", r.data, err)
		}
		for _, ch := range c.Choices {
			if p := ch.Delta.Content; p != nil && *p != "" {
				if m.finish != "" {
					t.Fatal("content after the finish reason")
				}
				m.text += *p
				m.contentParts++
			}
			for _, tc := range ch.Delta.ToolCalls {
				for len(names) <= tc.Index {
					names, args = append(names, ""), append(args, "")
				}
				names[tc.Index] += tc.Function.Name
				args[tc.Index] += tc.Function.Arguments
			}
			if ch.FinishReason != nil {
				m.finish = *ch.FinishReason
			}
		}
	}
	for i := range names {
		m.toolCalls = append(m.toolCalls, names[i]+"("+args[i]+")")
	}
	return m
}

// both makes the call as JSON and as a stream, and reads both.
func both(t *testing.T, a Adapter, c mockCall) (js, st mockAnswer) {
	t.Helper()
	ans, err := complete(testCtx(t), a, c.body(t, false))
	if err != nil {
		t.Fatal(err)
	}
	s, err := startStream(testCtx(t), a, c.body(t, true))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	chunks, err := drain(s)
	if err != io.EOF {
		t.Fatal(err)
	}
	return readAnswer(t, ans), readStream(t, chunks)
}

func TestMockHappyPath(t *testing.T) {
	for _, mc := range mockCases {
		t.Run(string(mc.flavor), func(t *testing.T) {
			a, _ := startMock(t, mc)
			js, st := both(t, a, mockCall{mc: mc, directive: "*:chunks=5"})
			prefix := string(mc.flavor) + "/" + mc.model + " says:"
			if !strings.HasPrefix(js.text, prefix) || js.finish != "stop" || js.usage == nil ||
				js.usage.OutputTokens != tokens.Count(js.text) || js.usage.InputTokens == 0 {
				t.Fatalf("answer %+v, usage %v", js, js.usage)
			}
			if st.contentParts != 5 || st.text != js.text || st.finish != "stop" || st.usage == nil || *st.usage != *js.usage {
				t.Fatalf("stream: %d parts %q finish %q usage %v; JSON said %+v %v", st.contentParts, st.text, st.finish, st.usage, js, js.usage)
			}
		})
	}
}

func TestMockMaxTokensAndStop(t *testing.T) {
	for _, mc := range mockCases {
		t.Run(string(mc.flavor), func(t *testing.T) {
			a, _ := startMock(t, mc)
			js, st := both(t, a, mockCall{mc: mc, extra: []string{`"max_tokens":3`}})
			for _, m := range []mockAnswer{js, st} {
				if m.finish != "length" || m.usage == nil || m.usage.OutputTokens != 3 {
					t.Fatalf("max_tokens: %+v %v", m, m.usage)
				}
			}
			js, st = both(t, a, mockCall{mc: mc, extra: []string{`"stop":["says:"]`}})
			for _, m := range []mockAnswer{js, st} {
				if m.finish != "stop" || strings.Contains(m.text, "says:") || m.text == "" {
					t.Fatalf("stop: %+v", m)
				}
			}
		})
	}
}

// A tool the caller offers reaches the provider (passed through to alpha,
// translated for beta), and the call comes back as the caller's tool call.
func TestMockToolCall(t *testing.T) {
	tools := `"tools":[{"type":"function","function":{"name":"lookup","parameters":{"type":"object","properties":{"q":{"type":"string"}}}}}]`
	for _, mc := range mockCases {
		t.Run(string(mc.flavor), func(t *testing.T) {
			a, _ := startMock(t, mc)
			js, st := both(t, a, mockCall{mc: mc, directive: `*:tool=lookup *:args={"q":"x"}`, extra: []string{tools}})
			if len(js.toolCalls) != 1 || js.toolCalls[0] != `lookup({"q":"x"})` || js.finish != "tool_calls" {
				t.Fatalf("answer %+v", js)
			}
			if len(st.toolCalls) != 1 || st.toolCalls[0] != js.toolCalls[0] || st.finish != "tool_calls" {
				t.Fatalf("stream %+v; JSON said %+v", st, js)
			}
		})
	}
}

// The counts' details (cached prompt tokens; reasoning tokens where the
// protocol reports them) come through both ways.
func TestMockUsageDetails(t *testing.T) {
	for _, mc := range mockCases {
		t.Run(string(mc.flavor), func(t *testing.T) {
			a, _ := startMock(t, mc)
			js, st := both(t, a, mockCall{mc: mc, directive: "*:cached_tokens=4 *:reasoning_tokens=3"})
			if js.usage == nil || st.usage == nil || *js.usage != *st.usage {
				t.Fatalf("usage %v, stream %v", js.usage, st.usage)
			}
			if js.usage.CachedInputTokens != 4 || js.usage.InputTokens < 4 {
				t.Fatalf("usage %+v: want 4 cached tokens within the input", *js.usage)
			}
			if mc.flavor == mockproviders.Alpha && js.usage.ReasoningTokens != 3 {
				t.Fatalf("usage %+v: want 3 reasoning tokens", *js.usage)
			}
		})
	}
}

func TestMockEmbeddings(t *testing.T) {
	a, _ := startMock(t, mockCases[0])
	body, err := translate.Embeddings(ProtocolOpenAI).Request(&translate.EmbeddingRequest{Body: []byte(`{"model":"alias","input":["a b","c"],"dimensions":4}`)}, "alpha-embed")
	if err != nil {
		t.Fatal(err)
	}
	var ans *translate.Answer
	err = a.Complete(testCtx(t), Call{Op: OpEmbeddings, Body: body}, func(raw []byte) error {
		ans, err = translate.Embeddings(ProtocolOpenAI).Answer(raw, testMeta())
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	var r openai.EmbeddingResponse
	if err := json.Unmarshal(ans.Body, &r); err != nil || len(r.Data) != 2 || r.Model != "alias" || ans.Usage == nil || ans.Usage.InputTokens == 0 {
		t.Fatalf("answer %s, usage %v: %v", ans.Body, ans.Usage, err)
	}
	// Beta has no embeddings: its translator refuses before any call.
	_, err = translate.Embeddings(ProtocolAnthropic).Request(&translate.EmbeddingRequest{Body: []byte(`{"model":"alias","input":"a"}`)}, "beta-large")
	var nc *translate.NotCarried
	if !errors.As(err, &nc) {
		t.Fatalf("beta embeddings: %v", err)
	}
}

func TestMockWrongCredential(t *testing.T) {
	wantType := map[mockproviders.Flavor]string{mockproviders.Alpha: "invalid_request_error", mockproviders.Beta: "authentication_error"}
	for _, mc := range mockCases {
		t.Run(string(mc.flavor), func(t *testing.T) {
			a, srv := startMock(t, mc, func(c *Config) { c.Credential = "wrong-" + testCredential })
			_, err := complete(testCtx(t), a, mockCall{mc: mc}.body(t, false))
			e := asError(t, err)
			if e.Kind != KindStatus || e.StatusCode != 401 || e.Type != wantType[mc.flavor] {
				t.Fatalf("got %+v", e)
			}
			assertNoLeak(t, err, append(leakCandidates(srv), "wrong-"+testCredential)...)
		})
	}
}

func TestMockStatusFaults(t *testing.T) {
	tests := []struct {
		directive  string
		status     int
		retryAfter time.Duration
	}{
		{"*:status=400", 400, 0},
		{"*:status=403", 403, 0},
		{"*:status=429 *:retry_after=3", 429, 3 * time.Second},
		{"*:status=500", 500, 0},
		{"*:status=503", 503, 0},
	}
	for _, mc := range mockCases {
		a, srv := startMock(t, mc)
		for _, tc := range tests {
			t.Run(string(mc.flavor)+"/"+tc.directive, func(t *testing.T) {
				c := mockCall{mc: mc, directive: tc.directive}
				for _, stream := range []bool{false, true} {
					var err error
					if stream {
						_, err = startStream(testCtx(t), a, c.body(t, true))
					} else {
						_, err = complete(testCtx(t), a, c.body(t, false))
					}
					e := asError(t, err)
					if e.Kind != KindStatus || e.StatusCode != tc.status || e.RetryAfter != tc.retryAfter ||
						!strings.Contains(e.Message, "mock fault") {
						t.Fatalf("stream=%v: got %+v", stream, e)
					}
					assertNoLeak(t, err, leakCandidates(srv)...)
				}
			})
		}
	}
}

// The directive targets one flavor only: the other answers normally.
func TestMockDirectiveTargetsOneFlavor(t *testing.T) {
	for _, mc := range mockCases {
		a, _ := startMock(t, mc)
		_, err := complete(testCtx(t), a, mockCall{mc: mc, directive: "alpha:status=503 beta:status=429"}.body(t, false))
		want := map[mockproviders.Flavor]int{mockproviders.Alpha: 503, mockproviders.Beta: 429}[mc.flavor]
		if e := asError(t, err); e.StatusCode != want {
			t.Fatalf("%s: %+v", mc.flavor, e)
		}
	}
}

func TestMockTimeouts(t *testing.T) {
	for _, mc := range mockCases {
		t.Run(string(mc.flavor), func(t *testing.T) {
			a, _ := startMock(t, mc, func(c *Config) { c.ResponseHeaderTimeout = 100 * time.Millisecond })
			_, err := complete(testCtx(t), a, mockCall{mc: mc, directive: "*:delay_ms=2000"}.body(t, false))
			if e := asError(t, err); e.Kind != KindTimeout {
				t.Fatalf("header delay: %+v", e)
			}
			// Headers on time, first byte late: the caller's first-chunk deadline.
			ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
			defer cancel()
			s, err := startStream(ctx, a, mockCall{mc: mc, directive: "*:first_byte_delay_ms=2000"}.body(t, true))
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			_, err = s.Next()
			if e := asError(t, err); e.Kind != KindTimeout || !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("first byte delay: %+v", e)
			}
		})
	}
}

func TestMockStreamFaults(t *testing.T) {
	tests := []struct {
		directive string
		kind      Kind
		typ       map[mockproviders.Flavor]string
		cancel    bool
	}{
		{"*:drop_after=2", KindStream, nil, false},
		{"*:error_after=2", KindStream, map[mockproviders.Flavor]string{mockproviders.Alpha: "server_error", mockproviders.Beta: "overloaded_error"}, false},
		{"*:stall_after=2", KindCanceled, nil, true},
	}
	for _, mc := range mockCases {
		a, srv := startMock(t, mc)
		for _, tc := range tests {
			t.Run(string(mc.flavor)+"/"+tc.directive, func(t *testing.T) {
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				s, err := startStream(ctx, a, mockCall{mc: mc, directive: tc.directive + " *:chunks=6"}.body(t, true))
				if err != nil {
					t.Fatal(err)
				}
				defer s.Close()
				for said := 0; said < 2; {
					c, err := s.Next()
					if err != nil {
						t.Fatalf("after %d content chunks: %v", said, err)
					}
					if c.Text != "" {
						said++
					}
				}
				if tc.cancel {
					time.AfterFunc(50*time.Millisecond, cancel)
				}
				var c translate.Chunk
				for err == nil && c.Text == "" { // chunks without content (none expected to say more)
					c, err = s.Next()
				}
				e := asError(t, err)
				if e.Kind != tc.kind || e.Type != tc.typ[mc.flavor] {
					t.Fatalf("got %+v (a chunk said %q)", e, c.Text)
				}
				assertNoLeak(t, err, leakCandidates(srv)...)
			})
		}
	}
}

func TestMockNoUsage(t *testing.T) {
	for _, mc := range mockCases {
		t.Run(string(mc.flavor), func(t *testing.T) {
			a, _ := startMock(t, mc)
			c := mockCall{mc: mc, directive: "*:no_usage=1"}
			ans, err := complete(testCtx(t), a, c.body(t, false))
			if err != nil || ans.Usage != nil || ans.Text == "" {
				t.Fatalf("%+v, %v: want no usage and the text for the gateway's count", ans, err)
			}
			js, st := both(t, a, c)
			if st.usage != nil || st.text != js.text || ans.Text != js.text {
				t.Fatalf("stream usage %v text %q; JSON text %q, Text %q", st.usage, st.text, js.text, ans.Text)
			}
		})
	}
}

// The mock's own ledger agrees with what the adapter read: two calls, both
// answered, counted under the caller's user (a member the body carried:
// alpha's user, beta's metadata.user_id), with the usage the answers had.
func TestMockCountsTheRequest(t *testing.T) {
	for _, mc := range mockCases {
		t.Run(string(mc.flavor), func(t *testing.T) {
			a, srv := startMock(t, mc)
			js, _ := both(t, a, mockCall{mc: mc})
			resp, err := srv.Client().Get(srv.URL + "/mock/calls")
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var calls mockproviders.Calls
			if err := json.UnmarshalRead(resp.Body, &calls); err != nil {
				t.Fatal(err)
			}
			u := calls.TokensByUser["u-1"]
			if calls.Total != 2 || calls.ByStatus[strconv.Itoa(200)] != 2 || js.usage == nil ||
				u.InputTokens != 2*int64(js.usage.InputTokens) || u.OutputTokens != 2*int64(js.usage.OutputTokens) {
				t.Fatalf("calls %+v (answer usage %v)", calls, js.usage)
			}
		})
	}
}
