package provider

import (
	"errors"
	"io"
	"testing"
)

// fuzzStream checks a protocol's stream decoder on arbitrary bytes: it never
// panics, every Event carries exactly one thing, and it ends in io.EOF or an
// *Error of a kind a body can cause, sticky from then on.
func fuzzStream(t *testing.T, protocol string, body []byte) {
	s := streamOf(t, protocol, string(body))
	defer s.Close()
	var end error
	for i := 0; ; i++ {
		if i > len(body)+8 {
			t.Fatalf("more events than input bytes")
		}
		ev, err := s.Next()
		if err != nil {
			end = err
			break
		}
		n := 0
		if ev.Text != "" {
			n++
		}
		if ev.FinishReason != "" {
			n++
		}
		if ev.Usage != nil {
			n++
		}
		if n != 1 {
			t.Fatalf("event %+v carries %d things", ev, n)
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
		oaiPre + oaiText("Hello") + oaiFinish + oaiUsageChunk + oaiDone,
		oaiText("a") + `data: {"error":{"message":"m","type":"server_error"}}` + "\n\n",
		`data: {"choices":[{"index":0,"delta":{"content":"x"},"finish_reason":"length"}],"usage":{"prompt_tokens":1,"completion_tokens":1}}` + "\n\n",
		oaiText("a") + `data: {"choi`,
		"data: {}\n\n",
		": ping\r\n\r\ndata: [DONE]\r\n\r\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) { fuzzStream(t, ProtocolOpenAI, body) })
}

func FuzzAnthropicStream(f *testing.F) {
	for _, s := range []string{
		antStart + antBlockStart + antPing + antText("Hello") + antBlockStop + antDelta("end_turn", 1) + antStop,
		antStart + antEv("error", `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`),
		antEv("message_delta", `{"type":"message_delta","delta":{"stop_reason":"max_tokens"},"usage":{"input_tokens":3,"output_tokens":1}}`),
		"data: {\"type\":\"content_block_delta\",\"delta\":{\"type\":\"text_delta\",\"text\":\"x\"}}\n\n",
		antStart + antText("a"),
		"event: message_start\ndata: {\"message\":null}\n\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) { fuzzStream(t, ProtocolAnthropic, body) })
}

// FuzzDecodeResponse covers both JSON answer decoders and the error-body parser.
func FuzzDecodeResponse(f *testing.F) {
	for _, s := range []string{
		`{"id":"c1","choices":[{"message":{"content":"Hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":2}}`,
		`{"id":"msg_1","type":"message","content":[{"type":"text","text":"Hi"}],"stop_reason":"end_turn","usage":{"input_tokens":3,"output_tokens":2}}`,
		`{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`,
		`{"error":{"message":"x","type":null,"code":"rate_limit_exceeded"}}`,
		`{"error":"text"}`,
		`<html>`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		for _, dec := range []func([]byte) (*Completion, *Error){decodeOpenAI, decodeAnthropic} {
			c, e := dec(body)
			if (c == nil) == (e == nil) {
				t.Fatalf("completion %v and error %v", c, e)
			}
			if c != nil && c.FinishReason == "" {
				t.Fatalf("completion without finish reason: %+v", c)
			}
		}
		parseErrorBody(body)
	})
}
