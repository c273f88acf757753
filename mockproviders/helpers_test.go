package mockproviders

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/llmgw/llmgw/api/wire/anthropic"
	"github.com/llmgw/llmgw/api/wire/openai"
)

// flavors is the outer loop of most tests: every behaviour is checked on both protocols.
var flavors = []Flavor{Alpha, Beta}

// mock starts a mock in an httptest server. done receives once per finished
// protocol handler, so tests can prove a stalled handler really returned.
type mock struct {
	*httptest.Server
	flavor Flavor
	done   chan struct{}
}

func newMock(t *testing.T, opts Options) *mock {
	t.Helper()
	h, err := NewHandler(opts)
	if err != nil {
		t.Fatal(err)
	}
	m := &mock{flavor: opts.Flavor, done: make(chan struct{}, 100)}
	m.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			select {
			case m.done <- struct{}{}:
			default:
			}
		}()
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(m.Close)
	return m
}

func (m *mock) path() string {
	if m.flavor == Alpha {
		return "/v1/chat/completions"
	}
	return "/v1/messages"
}

// reqSpec is a chat request independent of the protocol; body renders it.
type reqSpec struct {
	model        string
	system       string
	user         string // last user message
	history      []string
	stream       bool
	includeUsage bool
	maxTokens    int
	stops        []string
}

func (s reqSpec) body(fl Flavor) []byte {
	model := s.model
	if model == "" {
		model = string(fl) + "-large"
	}
	type turn struct{ role, text string }
	var turns []turn
	for i, h := range s.history {
		role := "user"
		if i%2 == 1 {
			role = "assistant"
		}
		turns = append(turns, turn{role, h})
	}
	turns = append(turns, turn{"user", s.user})
	var v any
	switch fl {
	case Alpha:
		r := openai.ChatCompletionRequest{Model: model}
		if s.system != "" {
			r.Messages = append(r.Messages, openai.Message{Role: "system", Content: openai.Text(s.system)})
		}
		for _, m := range turns {
			r.Messages = append(r.Messages, openai.Message{Role: m.role, Content: openai.Text(m.text)})
		}
		if s.stream {
			r.Stream = ptr(true)
		}
		if s.includeUsage {
			r.StreamOptions = &openai.StreamOptions{IncludeUsage: ptr(true)}
		}
		if s.maxTokens > 0 {
			r.MaxTokens = ptr(s.maxTokens)
		}
		if s.stops != nil {
			r.Stop = mustMarshal(s.stops)
		}
		v = r
	case Beta:
		r := anthropic.MessagesRequest{Model: model, MaxTokens: ptr(1000), Stream: s.stream, StopSequences: s.stops}
		if s.maxTokens > 0 {
			r.MaxTokens = ptr(s.maxTokens)
		}
		if s.system != "" {
			r.System = anthropic.Text(s.system)
		}
		for _, m := range turns {
			r.Messages = append(r.Messages, anthropic.Message{Role: m.role, Content: anthropic.Text(m.text)})
		}
		v = r
	}
	return mustMarshal(v)
}

func ptr[T any](v T) *T { return &v }

func mustMarshal(v any) []byte {
	b, err := jsonv2.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

type result struct {
	headers time.Duration // until response headers arrived
	resp    *http.Response
	body    []byte
	readErr error // non-nil when the body was cut or the read was cancelled
	elapsed time.Duration
}

func (m *mock) do(t *testing.T, ctx context.Context, body []byte, hdr map[string]string) result {
	t.Helper()
	return m.doAt(t, ctx, m.path(), body, hdr)
}

// doAt posts body to path (do posts to the chat path).
func (m *mock) doAt(t *testing.T, ctx context.Context, path string, body []byte, hdr map[string]string) result {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, m.URL+path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	start := time.Now()
	resp, err := m.Client().Do(req)
	if err != nil {
		t.Fatalf("request: %v", err)
	}
	defer resp.Body.Close()
	headers := time.Since(start)
	b, rerr := io.ReadAll(resp.Body)
	return result{headers: headers, resp: resp, body: b, readErr: rerr, elapsed: time.Since(start)}
}

func (m *mock) call(t *testing.T, s reqSpec) result {
	t.Helper()
	return m.do(t, context.Background(), s.body(m.flavor), nil)
}

func (m *mock) calls(t *testing.T) Calls {
	t.Helper()
	resp, err := m.Client().Get(m.URL + "/mock/calls")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var c Calls
	if err := jsonv2.UnmarshalRead(resp.Body, &c); err != nil {
		t.Fatal(err)
	}
	return c
}

type sseEvent struct {
	name string // "" for alpha's unnamed events
	data string
}

// parseSSE checks the framing strictly: only "event:" and "data:" lines, each
// event ended by one blank line, nothing after the last one.
func parseSSE(t *testing.T, body []byte) []sseEvent {
	t.Helper()
	var evs []sseEvent
	var cur sseEvent
	open := false
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if !open {
				t.Fatalf("blank line outside an event in %q", body)
			}
			evs = append(evs, cur)
			cur, open = sseEvent{}, false
		case strings.HasPrefix(line, "event: "):
			cur.name, open = strings.TrimPrefix(line, "event: "), true
		case strings.HasPrefix(line, "data: "):
			cur.data, open = strings.TrimPrefix(line, "data: "), true
		default:
			t.Fatalf("unexpected SSE line %q", line)
		}
	}
	if open {
		t.Fatalf("unterminated event %+v", cur)
	}
	return evs
}

// contentPieces extracts the text deltas of either protocol's stream.
func contentPieces(t *testing.T, fl Flavor, evs []sseEvent) []string {
	t.Helper()
	var out []string
	for _, e := range evs {
		switch fl {
		case Alpha:
			if e.data == "[DONE]" || strings.HasPrefix(e.data, `{"error"`) {
				continue
			}
			var c openai.ChatCompletionChunk
			mustUnmarshal(t, e.data, &c)
			if len(c.Choices) == 1 && c.Choices[0].Delta.Content != nil && c.Choices[0].Delta.Role == "" {
				out = append(out, *c.Choices[0].Delta.Content)
			}
		case Beta:
			if e.name != anthropic.EventContentBlockDelta {
				continue
			}
			var d anthropic.ContentBlockDelta
			mustUnmarshal(t, e.data, &d)
			out = append(out, d.Delta.Text)
		}
	}
	return out
}

func mustUnmarshal(t *testing.T, s string, v any) {
	t.Helper()
	if err := jsonv2.Unmarshal([]byte(s), v); err != nil {
		t.Fatalf("unmarshal %q: %v", s, err)
	}
}

// jsonAnswer is the text and usage of a JSON answer of either protocol.
type jsonAnswer struct {
	text         string
	finish       string
	in, out      int
	usagePresent bool
	model        string
	stopSequence *string
	rawTopLevel  map[string]jsontext.Value
}

func decodeAnswer(t *testing.T, fl Flavor, body []byte) jsonAnswer {
	t.Helper()
	var a jsonAnswer
	mustUnmarshal(t, string(body), &a.rawTopLevel)
	_, a.usagePresent = a.rawTopLevel["usage"]
	switch fl {
	case Alpha:
		var r openai.ChatCompletion
		mustUnmarshal(t, string(body), &r)
		if len(r.Choices) != 1 {
			t.Fatalf("choices: %s", body)
		}
		if u := r.Usage; u != nil {
			if u.TotalTokens != u.PromptTokens+u.CompletionTokens {
				t.Fatalf("total_tokens mismatch: %s", body)
			}
			a.in, a.out = u.PromptTokens, u.CompletionTokens
		}
		a.finish, a.model = r.Choices[0].FinishReason, r.Model
		if c := r.Choices[0].Message.Content; c != nil {
			a.text = *c
		}
	case Beta:
		var r anthropic.MessageResponse
		mustUnmarshal(t, string(body), &r)
		if len(r.Content) != 1 || r.Content[0].Type != anthropic.BlockText || r.StopReason == nil {
			t.Fatalf("content or stop_reason: %s", body)
		}
		if u := r.Usage; u != nil {
			if u.InputTokens == nil || u.OutputTokens == nil {
				t.Fatalf("usage without input or output tokens: %s", body)
			}
			a.in, a.out = *u.InputTokens, *u.OutputTokens
		}
		a.text, a.finish, a.model, a.stopSequence = r.Content[0].TextOf(), *r.StopReason, r.Model, r.StopSequence
	}
	return a
}

// errorType returns the protocol error type of an error body (either shape).
func errorType(t *testing.T, fl Flavor, body []byte) (typ, code, msg string) {
	t.Helper()
	switch fl {
	case Alpha:
		var e openai.ErrorResponse
		mustUnmarshal(t, string(body), &e)
		return e.Error.Type, e.Error.CodeString(), e.Error.Message
	default:
		var e anthropic.ErrorResponse
		mustUnmarshal(t, string(body), &e)
		if e.Type != anthropic.TypeError {
			t.Fatalf("beta error body without type error: %s", body)
		}
		return e.Error.Type, "", e.Error.Message
	}
}

func mustRequest(t *testing.T, ctx context.Context, m *mock, body []byte) *http.Request {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, m.URL+m.path(), bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	return req
}
