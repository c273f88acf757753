package provider

import (
	"context"
	"io"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// streamOf decodes body as the given protocol's stream, without HTTP.
func streamOf(t testing.TB, protocol, body string) Stream {
	a, err := New(Config{Name: "p", Protocol: protocol, BaseURL: "http://127.0.0.1:1", Credential: testCredential})
	if err != nil {
		t.Fatal(err)
	}
	var b *base
	var dec decoder
	switch v := a.(type) {
	case *openAI:
		b, dec = v.base, &oaiDecoder{}
	case *anthropic:
		b, dec = v.base, &antDecoder{}
	}
	return newStream(context.Background(), b, io.NopCloser(strings.NewReader(body)), dec)
}

func text(s string) Event   { return Event{Text: s} }
func finish(s string) Event { return Event{FinishReason: s} }
func usage(in, out int) Event {
	return Event{Usage: &Usage{InputTokens: in, OutputTokens: out}}
}

const oaiPre = `data: {"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}` + "\n\n"

func oaiText(s string) string {
	return `data: {"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"` + s + `"},"finish_reason":null}]}` + "\n\n"
}

const (
	oaiFinish     = `data: {"id":"c","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}` + "\n\n"
	oaiUsageChunk = `data: {"id":"c","choices":[],"usage":{"prompt_tokens":5,"completion_tokens":2,"total_tokens":7}}` + "\n\n"
	oaiDone       = "data: [DONE]\n\n"
)

func antEv(name, data string) string { return "event: " + name + "\ndata: " + data + "\n\n" }

var (
	antStart      = antEv("message_start", `{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","content":[],"usage":{"input_tokens":5,"output_tokens":1}}}`)
	antBlockStart = antEv("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`)
	antPing       = antEv("ping", `{"type": "ping"}`)
	antBlockStop  = antEv("content_block_stop", `{"type":"content_block_stop","index":0}`)
	antStop       = antEv("message_stop", `{"type":"message_stop"}`)
)

func antText(s string) string {
	return antEv("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"`+s+`"}}`)
}

func antDelta(reason string, out int) string {
	return antEv("message_delta", `{"type":"message_delta","delta":{"stop_reason":"`+reason+`","stop_sequence":null},"usage":{"output_tokens":`+strconv.Itoa(out)+`}}`)
}

func TestStreamDecoding(t *testing.T) {
	tests := []struct {
		name     string
		protocol string
		body     string
		want     []Event
		kind     Kind // "" means a clean io.EOF
		errType  string
	}{
		{"openai normal", ProtocolOpenAI, oaiPre + oaiText("Hello") + oaiText(" world") + oaiFinish + oaiUsageChunk + oaiDone,
			[]Event{text("Hello"), text(" world"), finish("stop"), usage(5, 2)}, "", ""},
		{"openai no usage", ProtocolOpenAI, oaiPre + oaiText("Hi") + oaiFinish + oaiDone,
			[]Event{text("Hi"), finish("stop")}, "", ""},
		{"openai text, finish and usage in one chunk", ProtocolOpenAI,
			`data: {"choices":[{"index":0,"delta":{"content":"x"},"finish_reason":"length"}],"usage":{"prompt_tokens":1,"completion_tokens":1}}` + "\n\n" + oaiDone,
			[]Event{text("x"), finish("length"), usage(1, 1)}, "", ""},
		{"openai comments, CRLF and other choices ignored", ProtocolOpenAI,
			": keep-alive\r\n\r\n" + strings.ReplaceAll(oaiText("a"), "\n", "\r\n") +
				`data: {"choices":[{"index":1,"delta":{"content":"other"}}]}` + "\n\n" + oaiDone,
			[]Event{text("a")}, "", ""},
		{"openai nothing after DONE is read", ProtocolOpenAI, oaiText("a") + oaiDone + "data: {broken\n\n",
			[]Event{text("a")}, "", ""},
		{"openai error event", ProtocolOpenAI,
			oaiPre + oaiText("a") + `data: {"error":{"message":"The server had an error","type":"server_error","param":null,"code":null}}` + "\n\n",
			[]Event{text("a")}, KindStream, "server_error"},
		{"openai truncated", ProtocolOpenAI, oaiPre + oaiText("a") + oaiFinish,
			[]Event{text("a"), finish("stop")}, KindStream, ""},
		{"openai cut mid-event", ProtocolOpenAI, oaiText("a") + `data: {"choi`,
			[]Event{text("a")}, KindStream, ""},
		{"openai malformed JSON", ProtocolOpenAI, oaiText("a") + "data: {nope}\n\n" + oaiDone,
			[]Event{text("a")}, KindProtocol, ""},
		{"openai empty body", ProtocolOpenAI, "", nil, KindStream, ""},

		{"anthropic normal", ProtocolAnthropic, antStart + antBlockStart + antPing + antText("Hello") + antText(" world") + antBlockStop + antDelta("end_turn", 2) + antStop,
			[]Event{text("Hello"), text(" world"), finish("stop"), usage(5, 2)}, "", ""},
		{"anthropic max_tokens is length", ProtocolAnthropic, antStart + antText("a") + antDelta("max_tokens", 1) + antStop,
			[]Event{text("a"), finish("length"), usage(5, 1)}, "", ""},
		{"anthropic stop_sequence is stop", ProtocolAnthropic, antStart + antText("a") + antDelta("stop_sequence", 1) + antStop,
			[]Event{text("a"), finish("stop"), usage(5, 1)}, "", ""},
		{"anthropic no usage", ProtocolAnthropic,
			antEv("message_start", `{"type":"message_start","message":{"id":"m","content":[]}}`) + antText("a") +
				antEv("message_delta", `{"type":"message_delta","delta":{"stop_reason":"end_turn"}}`) + antStop,
			[]Event{text("a"), finish("stop")}, "", ""},
		{"anthropic input in message_delta", ProtocolAnthropic,
			antEv("message_start", `{"type":"message_start","message":{"content":[]}}`) + antText("a") +
				antEv("message_delta", `{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"input_tokens":9,"output_tokens":1}}`) + antStop,
			[]Event{text("a"), finish("stop"), usage(9, 1)}, "", ""},
		{"anthropic unnamed events use data type", ProtocolAnthropic,
			strings.ReplaceAll(antStart+antText("a")+antDelta("end_turn", 1), "event: ", "x-ignored: ") + "data: {\"type\":\"message_stop\"}\n\n",
			[]Event{text("a"), finish("stop"), usage(5, 1)}, "", ""},
		{"anthropic block start text and non-text deltas", ProtocolAnthropic,
			antStart + antEv("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":"pre"}}`) +
				antEv("content_block_delta", `{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{}"}}`) +
				antEv("some_future_event", `{"type":"some_future_event"}`) + antStop,
			[]Event{text("pre")}, "", ""},
		{"anthropic error event", ProtocolAnthropic,
			antStart + antText("a") + antEv("error", `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`),
			[]Event{text("a")}, KindStream, "overloaded_error"},
		{"anthropic EOF before message_stop", ProtocolAnthropic, antStart + antText("a") + antDelta("end_turn", 1),
			[]Event{text("a"), finish("stop"), usage(5, 1)}, KindStream, ""},
		{"anthropic malformed JSON", ProtocolAnthropic, antStart + antEv("content_block_delta", `{"delta":`),
			nil, KindProtocol, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := streamOf(t, tc.protocol, tc.body)
			defer s.Close()
			got, err := drain(s)
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("events\n got %s\nwant %s", fmtEvents(got), fmtEvents(tc.want))
			}
			if tc.kind == "" {
				if err != io.EOF {
					t.Fatalf("end = %v, want io.EOF", err)
				}
			} else {
				e := asError(t, err)
				if e.Kind != tc.kind || e.Type != tc.errType || e.Provider != "p" {
					t.Fatalf("end = %+v, want kind %s type %q", e, tc.kind, tc.errType)
				}
			}
			if _, err2 := s.Next(); err2 != err {
				t.Fatalf("error not sticky: %v then %v", err, err2)
			}
		})
	}
}

func fmtEvents(evs []Event) string {
	var b strings.Builder
	for _, e := range evs {
		switch {
		case e.Usage != nil:
			b.WriteString("usage(" + strconv.Itoa(e.Usage.InputTokens) + "," + strconv.Itoa(e.Usage.OutputTokens) + ") ")
		case e.FinishReason != "":
			b.WriteString("finish(" + e.FinishReason + ") ")
		default:
			b.WriteString("text(" + e.Text + ") ")
		}
	}
	return b.String()
}

func TestNextAfterClose(t *testing.T) {
	s := streamOf(t, ProtocolOpenAI, oaiText("a")+oaiText("b")+oaiDone)
	if _, err := s.Next(); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s.Close()
	if _, err := s.Next(); asError(t, err).Kind != KindCanceled {
		t.Fatalf("Next after Close: %v", err)
	}
}

func BenchmarkOpenAIStream(b *testing.B) {
	body := oaiPre + strings.Repeat(oaiText(" word"), 100) + oaiFinish + oaiUsageChunk + oaiDone
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		s := streamOf(b, ProtocolOpenAI, body)
		if _, err := drain(s); err != io.EOF {
			b.Fatal(err)
		}
		s.Close()
	}
}

func BenchmarkAnthropicStream(b *testing.B) {
	body := antStart + antBlockStart + strings.Repeat(antText(" word"), 100) + antBlockStop + antDelta("end_turn", 9) + antStop
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		s := streamOf(b, ProtocolAnthropic, body)
		if _, err := drain(s); err != io.EOF {
			b.Fatal(err)
		}
		s.Close()
	}
}

func TestCancelHidesBufferedEvents(t *testing.T) {
	a, _ := New(Config{Name: "p", Protocol: ProtocolOpenAI, BaseURL: "http://127.0.0.1:1"})
	ctx, cancel := context.WithCancel(context.Background())
	s := newStream(ctx, a.(*openAI).base, io.NopCloser(strings.NewReader(oaiText("a")+oaiText("b")+oaiDone)), &oaiDecoder{})
	defer s.Close()
	if ev, err := s.Next(); err != nil || ev.Text != "a" {
		t.Fatal(ev, err)
	}
	cancel()
	if _, err := s.Next(); asError(t, err).Kind != KindCanceled {
		t.Fatalf("after cancel: %v", err)
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
	st, err := a.Stream(context.Background(), &Request{Model: "m", Messages: []Message{{Role: "user", Content: "hi"}}})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if len(rt.resps) != 1 || rt.resps[0].Header != nil {
		t.Fatalf("responses %d, header kept: %v", len(rt.resps), rt.resps[0].Header)
	}
	ev, err := st.Next()
	if err != nil || ev.Text != "hello" {
		t.Fatalf("first event %+v, %v", ev, err)
	}
}

// A reused OpenAI decoder gives each chunk its own events: nothing of an
// earlier chunk (its choices, delta, finish or usage) carries over.
func TestOpenAIDecoderReuse(t *testing.T) {
	var d oaiDecoder
	var q queue
	for _, c := range []struct {
		chunk string
		want  []Event
	}{
		{`{"choices":[{"index":0,"delta":{"content":"a"},"finish_reason":"stop"},{"index":1,"delta":{"content":"b"}}],"usage":{"prompt_tokens":1,"completion_tokens":2}}`,
			[]Event{text("a"), finish("stop"), usage(1, 2)}},
		{`{"choices":[{"index":0,"delta":{}},{"index":1}]}`, nil},
		{`{"choices":[{"index":1,"delta":{"content":"c"}},{"index":0,"delta":null,"finish_reason":null}],"usage":null}`, nil},
		{`{"choices":[{"index":0,"delta":{"content":"d"}}]}`, []Event{text("d")}},
		{`{}`, nil},
	} {
		if _, e := d.decode(nil, []byte(c.chunk), &q); e != nil {
			t.Fatalf("decode(%s): %v", c.chunk, e)
		}
		var got []Event
		for ev, ok := q.pop(); ok; ev, ok = q.pop() {
			got = append(got, ev)
		}
		if fmtEvents(got) != fmtEvents(c.want) {
			t.Errorf("decode(%s) = %s, want %s", c.chunk, fmtEvents(got), fmtEvents(c.want))
		}
	}
}
