package provider

import (
	"context"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-json-experiment/json"

	"github.com/llmgw/llmgw/gateway/provider/sse"
	"github.com/llmgw/llmgw/gateway/translate"
)

// streamOf reads body as the given protocol's stream, through its
// translator, without HTTP. A body that is an io.ReadCloser is closed as
// a response body is.
func streamOf(t testing.TB, protocol string, body io.Reader) *sseStream {
	t.Helper()
	a, err := New(Config{Name: "p", Protocol: protocol, BaseURL: "http://127.0.0.1:1", Credential: testCredential})
	if err != nil {
		t.Fatal(err)
	}
	rc, ok := body.(io.ReadCloser)
	if !ok {
		rc = io.NopCloser(body)
	}
	return newStream(context.Background(), a.(*base), rc, decoder(protocol))
}

// TestStreamEnds: how each protocol's stream ends, as the adapter reports
// it: io.EOF at the protocol's end marker, KindStream for an error event
// (the provider's type and message, redacted) or a stream cut or
// truncated, KindProtocol for data its translator cannot read. The error
// is sticky.
func TestStreamEnds(t *testing.T) {
	oaiError := func(typ, msg string) string {
		return `data: {"error":{"message":"` + msg + `","type":"` + typ + `","param":null,"code":null}}` + "\n\n"
	}
	tests := []struct {
		name     string
		protocol string
		body     string
		text     string
		usage    *translate.Usage
		kind     Kind // "" means a clean io.EOF
		errType  string
		errMsg   string // "" when not checked
	}{
		{"openai normal", ProtocolOpenAI, streamBody(ProtocolOpenAI, "Hello", " world"), "Hello world", &translate.Usage{InputTokens: 5, OutputTokens: 2}, "", "", ""},
		{"openai no usage", ProtocolOpenAI, oaiPre + oaiText("Hi") + oaiFinish + oaiDone, "Hi", nil, "", "", ""},
		{"openai comments and CRLF", ProtocolOpenAI, ": keep-alive\r\n\r\n" + strings.ReplaceAll(oaiText("a"), "\n", "\r\n") + oaiDone, "a", nil, "", "", ""},
		{"openai nothing after DONE is read", ProtocolOpenAI, oaiText("a") + oaiDone + "data: {broken\n\n", "a", nil, "", "", ""},
		{"openai error event", ProtocolOpenAI, oaiPre + oaiText("a") + oaiError("server_error", "The server had an error"),
			"a", nil, KindStream, "server_error", "The server had an error"},
		{"openai error event redacted", ProtocolOpenAI, oaiText("a") + oaiError("server_error", "bad key "+testCredential),
			"a", nil, KindStream, "server_error", "bad key [redacted]"},
		{"openai error event clipped", ProtocolOpenAI, oaiError("server_error", strings.Repeat("x", 2*maxMessageLen)),
			"", nil, KindStream, "server_error", strings.Repeat("x", maxMessageLen) + "..."},
		{"openai error event without a message", ProtocolOpenAI, `data: {"error":{}}` + "\n\n", "", nil, KindStream, "", "upstream error event"},
		{"openai truncated", ProtocolOpenAI, oaiPre + oaiText("a") + oaiFinish,
			"a", nil, KindStream, "", "stream ended before its end marker (cut or truncated)"},
		{"openai cut mid-event", ProtocolOpenAI, oaiText("a") + `data: {"choi`, "a", nil, KindStream, "", ""},
		{"openai malformed JSON", ProtocolOpenAI, oaiText("a") + "data: {nope}\n\n" + oaiDone, "a", nil, KindProtocol, "", "malformed stream chunk JSON"},
		{"openai empty body", ProtocolOpenAI, "", "", nil, KindStream, "", ""},

		{"anthropic normal", ProtocolAnthropic, antStart + antBlockStart + antPing + antText("Hello") + antText(" world") + antBlockStop + antDelta("end_turn", 2) + antStop,
			"Hello world", &translate.Usage{InputTokens: 5, OutputTokens: 2}, "", "", ""},
		{"anthropic unnamed events", ProtocolAnthropic,
			strings.ReplaceAll(antStart+antText("a")+antDelta("end_turn", 1), "event: ", "x-ignored: ") + "data: {\"type\":\"message_stop\"}\n\n",
			"a", &translate.Usage{InputTokens: 5, OutputTokens: 1}, "", "", ""},
		{"anthropic error event", ProtocolAnthropic,
			antStart + antText("a") + antEv("error", `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`),
			"a", nil, KindStream, "overloaded_error", "Overloaded"},
		{"anthropic EOF before message_stop", ProtocolAnthropic, antStart + antText("a") + antDelta("end_turn", 1),
			"a", &translate.Usage{InputTokens: 5, OutputTokens: 1}, KindStream, "", "stream ended before its end marker (cut or truncated)"},
		{"anthropic malformed JSON", ProtocolAnthropic, antStart + antEv("content_block_delta", `{"delta":`), "", nil, KindProtocol, "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := streamOf(t, tc.protocol, strings.NewReader(tc.body))
			defer s.Close()
			chunks, err := drain(s)
			if got := textOf(chunks); got != tc.text {
				t.Errorf("text %q, want %q", got, tc.text)
			}
			if got, want := usageString(usageOf(chunks)), usageString(tc.usage); got != want {
				t.Errorf("usage %s, want %s", got, want)
			}
			for _, c := range chunks {
				checkChunk(t, c)
			}
			if tc.kind == "" {
				if err != io.EOF {
					t.Fatalf("end = %v, want io.EOF", err)
				}
			} else {
				e := asError(t, err)
				if e.Kind != tc.kind || e.Type != tc.errType || e.Provider != "p" || (tc.errMsg != "" && e.Message != tc.errMsg) {
					t.Fatalf("end = %+v, want kind %s type %q message %q", e, tc.kind, tc.errType, tc.errMsg)
				}
				assertNoLeak(t, err, testCredential)
			}
			if _, err2 := s.Next(); err2 != err {
				t.Fatalf("error not sticky: %v then %v", err, err2)
			}
			if _, ok, err3 := s.TryNext(); !ok || err3 != err {
				t.Fatalf("TryNext after the end: %v, %v", ok, err3)
			}
		})
	}
}

func usageString(u *translate.Usage) string {
	if u == nil {
		return "none"
	}
	return strings.Join([]string{strconv.Itoa(u.InputTokens), strconv.Itoa(u.CachedInputTokens), strconv.Itoa(u.OutputTokens), strconv.Itoa(u.ReasoningTokens)}, "/")
}

// checkChunk: a chunk the caller is sent is a chat chunk of the alias.
func checkChunk(t *testing.T, c relayed) {
	t.Helper()
	if c.data == "" {
		return
	}
	var chunk struct {
		Object string `json:"object"`
		Model  string `json:"model"`
	}
	if err := json.Unmarshal([]byte(c.data), &chunk); err != nil || chunk.Model != "alias" {
		t.Errorf("chunk %s (%v): not the alias's", c.data, err)
	}
}

// An event beyond the SSE reader's limit ends the stream: no event is
// buffered without bound.
func TestStreamEventSizeLimit(t *testing.T) {
	huge := `data: {"choices":[{"delta":{"content":"` + strings.Repeat("a", sse.DefaultMaxEventSize) + `"}}]}` + "\n\n"
	s := streamOf(t, ProtocolOpenAI, strings.NewReader(oaiText("a")+huge+oaiDone))
	defer s.Close()
	chunks, err := drain(s)
	if e := asError(t, err); e.Kind != KindProtocol || textOf(chunks) != "a" || !strings.Contains(e.Message, "exceeds") {
		t.Fatalf("chunks %v, end %+v", chunks, e)
	}
}

func TestNextAfterClose(t *testing.T) {
	s := streamOf(t, ProtocolOpenAI, strings.NewReader(oaiText("a")+oaiText("b")+oaiDone))
	if _, err := s.Next(); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s.Close()
	if _, err := s.Next(); asError(t, err).Kind != KindCanceled {
		t.Fatalf("Next after Close: %v", err)
	}
}

func TestCancelHidesBufferedEvents(t *testing.T) {
	a, _ := New(Config{Name: "p", Protocol: ProtocolOpenAI, BaseURL: "http://127.0.0.1:1"})
	ctx, cancel := context.WithCancel(context.Background())
	s := newStream(ctx, a.(*base), io.NopCloser(strings.NewReader(oaiText("a")+oaiText("b")+oaiDone)), decoder(ProtocolOpenAI))
	defer s.Close()
	if c, err := s.Next(); err != nil || c.Text != "a" {
		t.Fatal(c, err)
	}
	cancel()
	if _, ok, err := s.TryNext(); !ok || asError(t, err).Kind != KindCanceled {
		t.Fatalf("TryNext after cancel: %v, %v", ok, err)
	}
	if _, err := s.Next(); asError(t, err).Kind != KindCanceled {
		t.Fatalf("after cancel: %v", err)
	}
}

// TryNext hands out what has arrived and says so when the next chunk is
// still on its way, without waiting for it.
func TestTryNext(t *testing.T) {
	pr, pw := io.Pipe()
	defer pr.Close()
	s := streamOf(t, ProtocolOpenAI, pr)
	defer s.Close()
	var st Stream = s
	b, ok := st.(Buffered)
	if !ok {
		t.Fatal("the stream does not implement Buffered")
	}
	send := func(s string) { go func() { _, _ = io.WriteString(pw, s) }() }

	send(oaiText("a") + oaiText("b") + oaiText("c")[:20]) // two events and part of a third, together
	if c, err := s.Next(); err != nil || c.Text != "a" {
		t.Fatalf("Next: %+v, %v", c, err)
	}
	if c, ok, err := b.TryNext(); !ok || err != nil || c.Text != "b" {
		t.Fatalf("TryNext with b buffered: %+v, %v, %v", c, ok, err)
	}
	if c, ok, err := b.TryNext(); ok || err != nil || c.Data != nil {
		t.Fatalf("TryNext with half an event buffered: %+v, %v, %v", c, ok, err)
	}
	send(oaiText("c")[20:] + oaiDone)
	if c, err := s.Next(); err != nil || c.Text != "c" {
		t.Fatalf("Next: %+v, %v", c, err)
	}
	if _, ok, err := b.TryNext(); !ok || err != io.EOF {
		t.Fatalf("TryNext with [DONE] buffered: %v, %v", ok, err)
	}
	if _, err := s.Next(); err != io.EOF {
		t.Fatalf("Next after the end: %v", err)
	}
	// An upstream that keeps the response open after its end marker: Close
	// gives up draining it after drainTimeout.
	start := time.Now()
	s.Close()
	if d := time.Since(start); d > time.Second {
		t.Fatalf("Close took %v", d)
	}
}

// Over HTTP, the stream Adapter.Stream returns is Buffered too.
func TestAdapterStreamIsBuffered(t *testing.T) {
	for _, p := range protocols {
		srv, _ := upstream(t, reply(200, "text/event-stream; charset=utf-8", streamBody(p, "a", "b")))
		s, err := startStream(testCtx(t), newAdapter(t, p, srv.URL), chatBody(t, p, true))
		if err != nil {
			t.Fatal(err)
		}
		b, ok := s.(Buffered)
		if !ok {
			t.Fatalf("%s: %T is not Buffered", p, s)
		}
		var text strings.Builder
		for {
			c, ok, err := b.TryNext()
			if !ok {
				c, err = s.Next()
			}
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			text.WriteString(c.Text)
		}
		s.Close()
		if text.String() != "ab" {
			t.Fatalf("%s: text %q", p, text.String())
		}
	}
}

// recordingTransport remembers the responses it hands out.
type recordingTransport struct {
	http.RoundTripper
	resps []*http.Response
}

func (rt *recordingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := rt.RoundTripper.RoundTrip(req)
	if resp != nil {
		rt.resps = append(rt.resps, resp)
	}
	return resp, err
}

// An open stream does not keep the upstream's response headers: the
// transport holds the response for the stream's life, the stream needs
// only its body.
func TestStreamDropsTheResponseHeaders(t *testing.T) {
	srv, _ := upstream(t, reply(200, "text/event-stream", oaiPre+oaiText("hello")+oaiFinish+oaiDone, "X-Upstream-Id", "abc"))
	rt := &recordingTransport{RoundTripper: http.DefaultTransport}
	a := newAdapter(t, "openai", srv.URL, func(c *Config) { c.Client = &http.Client{Transport: rt} })
	st, err := startStream(context.Background(), a, chatBody(t, ProtocolOpenAI, true))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if len(rt.resps) != 1 || rt.resps[0].Header != nil {
		t.Fatalf("responses %d, header kept: %v", len(rt.resps), rt.resps[0].Header)
	}
	chunks, err := drain(st)
	if err != io.EOF || textOf(chunks) != "hello" {
		t.Fatalf("chunks %+v, %v", chunks, err)
	}
}

func BenchmarkOpenAIStream(b *testing.B) {
	body := oaiPre + strings.Repeat(oaiText(" word"), 100) + oaiFinish + oaiUsageChunk + oaiDone
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		s := streamOf(b, ProtocolOpenAI, strings.NewReader(body))
		for {
			if _, err := s.Next(); err == io.EOF {
				break
			} else if err != nil {
				b.Fatal(err)
			}
		}
		s.Close()
	}
}

func BenchmarkAnthropicStream(b *testing.B) {
	body := antStart + antBlockStart + strings.Repeat(antText(" word"), 100) + antBlockStop + antDelta("end_turn", 9) + antStop
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		s := streamOf(b, ProtocolAnthropic, strings.NewReader(body))
		for {
			if _, err := s.Next(); err == io.EOF {
				break
			} else if err != nil {
				b.Fatal(err)
			}
		}
		s.Close()
	}
}
