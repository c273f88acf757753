package provider

import (
	"bytes"
	"errors"
	"io"
	"testing"
)

// fuzzStream reads arbitrary bytes as a protocol's event stream, through
// its translator: it never panics, ends in io.EOF or an *Error of a kind a
// body can cause (KindStream, KindProtocol), its upstream text clipped,
// sticky from then on; the chunks before are each bounded by the input.
func fuzzStream(t *testing.T, protocol string, body []byte) {
	s := streamOf(t, protocol, bytes.NewReader(body))
	defer s.Close()
	var end error
	for i := 0; ; i++ {
		if i > len(body)+8 {
			t.Fatalf("more chunks than input bytes")
		}
		c, err := s.Next()
		if err != nil {
			end = err
			break
		}
		if c.Text != "" && !c.Commit {
			t.Fatalf("chunk with text %q is no commit point", c.Text)
		}
	}
	if end != io.EOF {
		var e *Error
		if !errors.As(end, &e) || (e.Kind != KindStream && e.Kind != KindProtocol) || e.Provider != "p" {
			t.Fatalf("stream ended with %T %v", end, end)
		}
		if len(e.Message) > maxMessageLen+3 || len(e.Type) > maxTypeLen+3 {
			t.Fatalf("unclipped upstream text: %+v", e)
		}
	}
	if _, err := s.Next(); err != end {
		t.Fatalf("not sticky: %v then %v", end, err)
	}
}

func FuzzOpenAIStream(f *testing.F) {
	for _, s := range []string{
		streamBody(ProtocolOpenAI, "Hello", " world"),
		oaiText("a") + `data: {"error":{"message":"m","type":"server_error"}}` + "\n\n",
		`data: {"choices":[{"index":0,"delta":{"content":"x"},"finish_reason":"length"}],"usage":{"prompt_tokens":1,"completion_tokens":1}}` + "\n\n",
		oaiText("a") + `data: {"choi`,
		"data: {}\n\n",
		": ping\r\n\r\ndata: [DONE]\r\n\r\n",
		`data: {"id":"c","object":"chat.completion.chunk","choices":[],"usage":{"prompt_tokens":19,"completion_tokens":10,"total_tokens":29,` +
			`"prompt_tokens_details":{"cached_tokens":0,"audio_tokens":0},"completion_tokens_details":{"reasoning_tokens":0,"audio_tokens":0}}}` + "\n\n",
		`data: {"choices":[{"index":0,"delta":{"content":"a"}}],"choices":[]}` + "\n\n",
		"data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"\xff \\ud83d\\ude00\"}}]}\n\n",
		"data: {\"choices\":\ndata: []}\n\nevent: x\ndata: [DONE]\n\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) { fuzzStream(t, ProtocolOpenAI, body) })
}

func FuzzAnthropicStream(f *testing.F) {
	for _, s := range []string{
		streamBody(ProtocolAnthropic, "Hello", " world"),
		antStart + antEv("error", `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`),
		antEv("message_delta", `{"type":"message_delta","delta":{"stop_reason":"max_tokens"},"usage":{"input_tokens":3,"output_tokens":1}}`),
		"data: {\"type\":\"content_block_delta\",\"delta\":{\"type\":\"text_delta\",\"text\":\"x\"}}\n\n",
		antStart + antText("a"),
		"event: message_start\ndata: {\"message\":null}\n\n",
		antEv("content_block_start", `{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"t","name":"f","input":{}}}`) +
			antEv("content_block_delta", `{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"a\":"}}`),
		antEv("message_delta", `{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"input_tokens":3,"cache_creation_input_tokens":1,"cache_read_input_tokens":2,"output_tokens":4}}`),
		antEv("some_new_event", `{"type":"some_new_event","x":[1]}`),
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) { fuzzStream(t, ProtocolAnthropic, body) })
}

// FuzzErrorBody: the error-body parser reads anything without panicking,
// and a text that is no JSON is its own message.
func FuzzErrorBody(f *testing.F) {
	for _, s := range []string{
		`{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`,
		`{"error":{"message":"x","type":null,"code":"rate_limit_exceeded"}}`,
		`{"error":{"message":"x","code":429}}`,
		`{"error":"text"}`,
		`{"message":"text"}`,
		`{"Error":{"Message":"case","Type":"proxy"}}`,
		`<html>`,
		``,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		typ, msg := parseErrorBody(body)
		if len(body) > 0 && body[0] == '<' && (typ != "" || msg != string(body)) {
			t.Fatalf("not-JSON body %q read as %q, %q", body, typ, msg)
		}
	})
}
