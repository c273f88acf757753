package provider

import (
	"net/http"
	"testing"
)

var fullRequest = &Request{
	Model: "m-1",
	Messages: []Message{
		{"system", "Be brief."},
		{"system", "Answer in English."},
		{"user", "Hello"},
		{"user", "again"},
		{"assistant", "Hi."},
		{"user", "Bye"},
	},
	MaxTokens:   ptr(100),
	Temperature: ptr(0.0),
	TopP:        ptr(0.5),
	Stop:        []string{"END", "\n\n"},
	User:        "user-7",
}

var minimalRequest = &Request{Model: "m-1", Messages: []Message{{"user", "Hello"}}}

func TestRequestTranslation(t *testing.T) {
	tests := []struct {
		name     string
		protocol string
		req      *Request
		stream   bool
		path     string
		body     string
	}{
		{
			"openai minimal", ProtocolOpenAI, minimalRequest, false, "/v1/chat/completions",
			`{"model":"m-1","messages":[{"role":"user","content":"Hello"}]}`,
		},
		{
			"openai minimal stream asks for usage", ProtocolOpenAI, minimalRequest, true, "/v1/chat/completions",
			`{"model":"m-1","messages":[{"role":"user","content":"Hello"}],"stream":true,"stream_options":{"include_usage":true}}`,
		},
		{
			"openai full keeps roles and zero temperature", ProtocolOpenAI, fullRequest, false, "/v1/chat/completions",
			`{"model":"m-1","messages":[{"role":"system","content":"Be brief."},{"role":"system","content":"Answer in English."},` +
				`{"role":"user","content":"Hello"},{"role":"user","content":"again"},{"role":"assistant","content":"Hi."},{"role":"user","content":"Bye"}],` +
				`"max_tokens":100,"temperature":0,"top_p":0.5,"stop":["END","\n\n"],"user":"user-7"}`,
		},
		{
			"anthropic minimal gets default max_tokens", ProtocolAnthropic, minimalRequest, false, "/v1/messages",
			`{"model":"m-1","messages":[{"role":"user","content":"Hello"}],"max_tokens":4096}`,
		},
		{
			"anthropic full: system hoisted, same roles merged, stop and user mapped", ProtocolAnthropic, fullRequest, true, "/v1/messages",
			`{"model":"m-1","system":"Be brief.\n\nAnswer in English.","messages":[{"role":"user","content":"Hello\n\nagain"},` +
				`{"role":"assistant","content":"Hi."},{"role":"user","content":"Bye"}],"max_tokens":100,"temperature":0,"top_p":0.5,` +
				`"stop_sequences":["END","\n\n"],"metadata":{"user_id":"user-7"},"stream":true}`,
		},
		{
			"anthropic clamps OpenAI-range temperature", ProtocolAnthropic,
			&Request{Model: "m", Messages: []Message{{"user", "x"}}, Temperature: ptr(1.7)}, false, "/v1/messages",
			`{"model":"m","messages":[{"role":"user","content":"x"}],"max_tokens":4096,"temperature":1}`,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			okBody, ct := `{"choices":[{"message":{"content":"x"}}]}`, "application/json"
			if tc.protocol == ProtocolAnthropic {
				okBody = `{"type":"message","content":[{"type":"text","text":"x"}]}`
			}
			if tc.stream {
				ct, okBody = "text/event-stream", "data: [DONE]\n\nevent: message_stop\ndata: {}\n\n"
			}
			srv, got := upstream(t, reply(200, ct, okBody))
			a := newAdapter(t, tc.protocol, srv.URL)
			var err error
			if tc.stream {
				var s Stream
				if s, err = a.Stream(testCtx(t), tc.req); err == nil {
					s.Close()
				}
			} else {
				_, err = a.Complete(testCtx(t), tc.req)
			}
			if err != nil {
				t.Fatal(err)
			}
			r := <-got
			if r.method != http.MethodPost || r.path != tc.path {
				t.Errorf("request line %s %s, want POST %s", r.method, r.path, tc.path)
			}
			if r.body != tc.body {
				t.Errorf("body\n got %s\nwant %s", r.body, tc.body)
			}
			wantHeaders := map[string]string{"Content-Type": "application/json", "Accept": "application/json"}
			if tc.stream {
				wantHeaders["Accept"] = "text/event-stream"
			}
			if tc.protocol == ProtocolOpenAI {
				wantHeaders["Authorization"] = "Bearer " + testCredential
				wantHeaders["X-Api-Key"] = ""
				wantHeaders["Anthropic-Version"] = ""
			} else {
				wantHeaders["Authorization"] = ""
				wantHeaders["X-Api-Key"] = testCredential
				wantHeaders["Anthropic-Version"] = "2023-06-01"
			}
			for k, v := range wantHeaders {
				if g := r.header.Get(k); g != v {
					t.Errorf("header %s = %q, want %q", k, g, v)
				}
			}
		})
	}
}

func TestNoCredentialSendsNoAuthHeader(t *testing.T) {
	for _, p := range []string{ProtocolOpenAI, ProtocolAnthropic} {
		t.Run(p, func(t *testing.T) {
			srv, got := upstream(t, reply(500, "", ""))
			a := newAdapter(t, p, srv.URL, func(c *Config) { c.Credential = "" })
			a.Complete(testCtx(t), minimalRequest)
			h := (<-got).header
			if h.Get("Authorization") != "" || h.Get("X-Api-Key") != "" {
				t.Fatalf("auth header sent without a credential: %v", h)
			}
		})
	}
}

func TestDecodeOpenAIResponse(t *testing.T) {
	tests := []struct {
		name string
		body string
		want *Completion
		kind Kind
	}{
		{"normal", `{"id":"c1","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"Hi there"},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":2,"total_tokens":5}}`,
			&Completion{ID: "c1", Text: "Hi there", FinishReason: "stop", Usage: Usage{InputTokens: 3, OutputTokens: 2}, HasUsage: true}, ""},
		{"length", `{"id":"c2","choices":[{"message":{"content":"Hi"},"finish_reason":"length"}]}`,
			&Completion{ID: "c2", Text: "Hi", FinishReason: "length"}, ""},
		{"content filter", `{"choices":[{"message":{"content":""},"finish_reason":"content_filter"}]}`,
			&Completion{FinishReason: "content_filter"}, ""},
		{"null content and finish", `{"choices":[{"message":{"content":null},"finish_reason":null}]}`,
			&Completion{FinishReason: "stop"}, ""},
		{"unknown fields ignored", `{"choices":[{"message":{"content":"a","refusal":null},"logprobs":null}],"system_fingerprint":"x"}`,
			&Completion{Text: "a", FinishReason: "stop"}, ""},
		{"no choices", `{"id":"c","choices":[]}`, nil, KindProtocol},
		{"malformed", `{"choices":[`, nil, KindProtocol},
		{"not an object", `"hello"`, nil, KindProtocol},
		{"error in 200", `{"error":{"message":"boom","type":"server_error"}}`, nil, KindProtocol},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, e := decodeOpenAI([]byte(tc.body))
			checkDecoded(t, c, e, tc.want, tc.kind)
		})
	}
}

func TestDecodeAnthropicResponse(t *testing.T) {
	tests := []struct {
		name string
		body string
		want *Completion
		kind Kind
	}{
		{"normal", `{"id":"msg_1","type":"message","role":"assistant","content":[{"type":"text","text":"Hi there"}],"stop_reason":"end_turn","usage":{"input_tokens":3,"output_tokens":2}}`,
			&Completion{ID: "msg_1", Text: "Hi there", FinishReason: "stop", Usage: Usage{InputTokens: 3, OutputTokens: 2}, HasUsage: true}, ""},
		{"text blocks joined, others skipped", `{"type":"message","content":[{"type":"text","text":"a"},{"type":"thinking","thinking":"hm"},{"type":"text","text":"b"}],"stop_reason":"stop_sequence"}`,
			&Completion{Text: "ab", FinishReason: "stop"}, ""},
		{"max_tokens is length", `{"type":"message","content":[],"stop_reason":"max_tokens"}`,
			&Completion{FinishReason: "length"}, ""},
		{"refusal is content_filter", `{"type":"message","content":[],"stop_reason":"refusal"}`,
			&Completion{FinishReason: "content_filter"}, ""},
		{"cache tokens count as input", `{"type":"message","content":[],"stop_reason":"end_turn","usage":{"input_tokens":3,"cache_read_input_tokens":4,"cache_creation_input_tokens":1,"output_tokens":2}}`,
			&Completion{FinishReason: "stop", Usage: Usage{InputTokens: 8, CachedInputTokens: 4, OutputTokens: 2}, HasUsage: true}, ""},
		{"partial usage is no usage", `{"type":"message","content":[],"usage":{"input_tokens":3}}`,
			&Completion{FinishReason: "stop"}, ""},
		{"not a message", `{"id":"x"}`, nil, KindProtocol},
		{"error in 200", `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`, nil, KindProtocol},
		{"malformed", `{"type":"message","content":[{]}`, nil, KindProtocol},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, e := decodeAnthropic([]byte(tc.body))
			checkDecoded(t, c, e, tc.want, tc.kind)
		})
	}
}

func checkDecoded(t *testing.T, c *Completion, e *Error, want *Completion, kind Kind) {
	t.Helper()
	if kind != "" {
		if e == nil || e.Kind != kind {
			t.Fatalf("got %+v, %v; want kind %s", c, e, kind)
		}
		return
	}
	if e != nil {
		t.Fatal(e)
	}
	if *c != *want {
		t.Fatalf("got %+v, want %+v", *c, *want)
	}
}

func TestCompleteEndToEnd(t *testing.T) {
	tests := []struct {
		protocol, body string
	}{
		{ProtocolOpenAI, `{"id":"c1","choices":[{"message":{"content":"Hi there"},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":2}}`},
		{ProtocolAnthropic, `{"id":"c1","type":"message","content":[{"type":"text","text":"Hi there"}],"stop_reason":"end_turn","usage":{"input_tokens":3,"output_tokens":2}}`},
	}
	for _, tc := range tests {
		t.Run(tc.protocol, func(t *testing.T) {
			srv, _ := upstream(t, reply(200, "application/json", tc.body))
			a := newAdapter(t, tc.protocol, srv.URL)
			if a.Name() != "up-"+tc.protocol {
				t.Errorf("Name() = %q", a.Name())
			}
			c, err := a.Complete(testCtx(t), minimalRequest)
			if err != nil {
				t.Fatal(err)
			}
			want := Completion{ID: "c1", Text: "Hi there", FinishReason: "stop", Usage: Usage{InputTokens: 3, OutputTokens: 2}, HasUsage: true}
			if *c != want {
				t.Fatalf("got %+v", *c)
			}
		})
	}
}
