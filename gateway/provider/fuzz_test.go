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
		// chunks as vendors send them: members the gateway does not read, usage details
		`data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","system_fingerprint":null,` +
			`"choices":[{"index":0,"delta":{"role":"assistant","content":"","refusal":null},"logprobs":null,"finish_reason":null}]}` + "\n\n",
		`data: {"id":"c","object":"chat.completion.chunk","choices":[],"usage":{"prompt_tokens":19,"completion_tokens":10,"total_tokens":29,` +
			`"prompt_tokens_details":{"cached_tokens":0,"audio_tokens":0},"completion_tokens_details":{"reasoning_tokens":0,"audio_tokens":0}}}` + "\n\n",
		`data: {"choices":[{"index":0,"delta":{"content":"a"}}],"choices":[]}` + "\n\n",
		"data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"\xff \\ud83d\\ude00\"}}]}\n\n",
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
		antEv("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\"a\":"}}`),
		antEv("message_delta", `{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"input_tokens":3,"cache_creation_input_tokens":1,"cache_read_input_tokens":2,"output_tokens":4}}`),
		antEv("some_new_event", `{"type":"some_new_event","x":[1]}`),
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
		`{"id":"c","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":null,"refusal":null,` +
			`"annotations":[]},"logprobs":null,"finish_reason":"length"}],"usage":{"prompt_tokens":19,"completion_tokens":10,` +
			`"total_tokens":29,"prompt_tokens_details":{"cached_tokens":3,"audio_tokens":0},"completion_tokens_details":` +
			`{"reasoning_tokens":4,"audio_tokens":0}},"service_tier":"default","system_fingerprint":null}`,
		`{"id":"msg","type":"message","content":[{"type":"text","text":"a"},{"type":"tool_use","id":"t","name":"f","input":{"x":[1]}}],` +
			`"stop_reason":"max_tokens","stop_sequence":null,"usage":{"input_tokens":3,"cache_creation_input_tokens":1,"cache_read_input_tokens":2,"output_tokens":null}}`,
		`{"Error":{"Message":"case","Type":"proxy"}}`,
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
