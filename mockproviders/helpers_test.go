package mockproviders

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
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
	var msgs []map[string]any
	if fl == Alpha && s.system != "" {
		msgs = append(msgs, map[string]any{"role": "system", "content": s.system})
	}
	for i, h := range s.history {
		role := "user"
		if i%2 == 1 {
			role = "assistant"
		}
		msgs = append(msgs, map[string]any{"role": role, "content": h})
	}
	msgs = append(msgs, map[string]any{"role": "user", "content": s.user})
	b := map[string]any{"model": model, "messages": msgs}
	if s.stream {
		b["stream"] = true
	}
	switch fl {
	case Alpha:
		if s.includeUsage {
			b["stream_options"] = map[string]any{"include_usage": true}
		}
		if s.maxTokens > 0 {
			b["max_tokens"] = s.maxTokens
		}
		if s.stops != nil {
			b["stop"] = s.stops
		}
	case Beta:
		b["max_tokens"] = 1000
		if s.maxTokens > 0 {
			b["max_tokens"] = s.maxTokens
		}
		if s.system != "" {
			b["system"] = s.system
		}
		if s.stops != nil {
			b["stop_sequences"] = s.stops
		}
	}
	out, _ := json.Marshal(b)
	return out
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
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, m.URL+m.path(), bytes.NewReader(body))
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
	if err := json.NewDecoder(resp.Body).Decode(&c); err != nil {
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
			var c struct {
				Choices []struct {
					Delta struct {
						Role    string  `json:"role"`
						Content *string `json:"content"`
					} `json:"delta"`
				} `json:"choices"`
			}
			mustUnmarshal(t, e.data, &c)
			if len(c.Choices) == 1 && c.Choices[0].Delta.Content != nil && c.Choices[0].Delta.Role == "" {
				out = append(out, *c.Choices[0].Delta.Content)
			}
		case Beta:
			if e.name != "content_block_delta" {
				continue
			}
			var d struct {
				Delta struct{ Text string } `json:"delta"`
			}
			mustUnmarshal(t, e.data, &d)
			out = append(out, d.Delta.Text)
		}
	}
	return out
}

func mustUnmarshal(t *testing.T, s string, v any) {
	t.Helper()
	if err := json.Unmarshal([]byte(s), v); err != nil {
		t.Fatalf("unmarshal %q: %v", s, err)
	}
}

// answerText returns the text and usage of a JSON answer of either protocol.
type jsonAnswer struct {
	text         string
	finish       string
	in, out      int
	usagePresent bool
	model        string
	stopSequence *string
	rawTopLevel  map[string]json.RawMessage
}

func decodeAnswer(t *testing.T, fl Flavor, body []byte) jsonAnswer {
	t.Helper()
	var a jsonAnswer
	mustUnmarshal(t, string(body), &a.rawTopLevel)
	_, a.usagePresent = a.rawTopLevel["usage"]
	switch fl {
	case Alpha:
		var r struct {
			Model   string
			Choices []struct {
				Message      struct{ Content string }
				FinishReason string `json:"finish_reason"`
			}
			Usage struct {
				PromptTokens     int `json:"prompt_tokens"`
				CompletionTokens int `json:"completion_tokens"`
				TotalTokens      int `json:"total_tokens"`
			}
		}
		mustUnmarshal(t, string(body), &r)
		if len(r.Choices) != 1 {
			t.Fatalf("choices: %s", body)
		}
		if a.usagePresent && r.Usage.TotalTokens != r.Usage.PromptTokens+r.Usage.CompletionTokens {
			t.Fatalf("total_tokens mismatch: %s", body)
		}
		a.text, a.finish, a.in, a.out, a.model = r.Choices[0].Message.Content, r.Choices[0].FinishReason, r.Usage.PromptTokens, r.Usage.CompletionTokens, r.Model
	case Beta:
		var r struct {
			Model   string
			Content []struct{ Type, Text string }
			Stop    string  `json:"stop_reason"`
			StopSeq *string `json:"stop_sequence"`
			Usage   struct {
				In  int `json:"input_tokens"`
				Out int `json:"output_tokens"`
			}
		}
		mustUnmarshal(t, string(body), &r)
		if len(r.Content) != 1 || r.Content[0].Type != "text" {
			t.Fatalf("content: %s", body)
		}
		a.text, a.finish, a.in, a.out, a.model, a.stopSequence = r.Content[0].Text, r.Stop, r.Usage.In, r.Usage.Out, r.Model, r.StopSeq
	}
	return a
}

// errorType returns the protocol error type of an error body (either shape).
func errorType(t *testing.T, fl Flavor, body []byte) (typ, code, msg string) {
	t.Helper()
	switch fl {
	case Alpha:
		var e struct {
			Error struct {
				Message string
				Type    string
				Param   *string
				Code    *string
			}
		}
		mustUnmarshal(t, string(body), &e)
		if e.Error.Code != nil {
			code = *e.Error.Code
		}
		return e.Error.Type, code, e.Error.Message
	default:
		var e struct {
			Type  string
			Error struct{ Type, Message string }
		}
		mustUnmarshal(t, string(body), &e)
		if e.Type != "error" {
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
