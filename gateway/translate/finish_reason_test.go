package translate

import (
	"strings"
	"testing"
)

// frPairs are the pairs of the finish reason tests, by their files' names.
var frPairs = map[string]func() ChatPair{
	"openai_openai":       func() ChatPair { return Chat(ProtocolOpenAI) },
	"openai_anthropic":    func() ChatPair { return Chat(ProtocolAnthropic) },
	"anthropic_anthropic": func() ChatPair { return Messages(ProtocolAnthropic) },
	"anthropic_openai":    func() ChatPair { return Messages(ProtocolOpenAI) },
	"responses_responses": func() ChatPair { return Responses(ProtocolOpenAI, true) },
	"responses_openai":    func() ChatPair { return Responses(ProtocolOpenAI, false) },
	"responses_anthropic": func() ChatPair { return Responses(ProtocolAnthropic, false) },
}

// A chat.completion and a Messages answer with one reason each, as the
// providers write them.
func frChatAnswer(reason string) string {
	return `{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,` +
		`"message":{"role":"assistant","content":"hi"},"finish_reason":` + reason + `}],` +
		`"usage":{"prompt_tokens":3,"completion_tokens":1,"total_tokens":4}}`
}

func frAntAnswer(reason string) string {
	return `{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[{"type":"text","text":"hi"}],` +
		`"stop_reason":` + reason + `,"stop_sequence":null,"usage":{"input_tokens":3,"output_tokens":1}}`
}

func frResponse(status, details string) string {
	return `{"id":"resp_1","object":"response","created_at":1,"status":` + status + `,"error":null,"incomplete_details":` + details +
		`,"model":"m","output":[{"id":"msg_1","type":"message","status":"completed","role":"assistant",` +
		`"content":[{"type":"output_text","text":"hi","annotations":[]}]}],"usage":{"input_tokens":3,"output_tokens":1,"total_tokens":4}}`
}

// Every pair's JSON answer reports the provider's reason as the provider
// said it, whatever the caller's protocol calls it; "" when it said none.
// The answer's body is what it was: the reason is not written anew.
func TestAnswerFinishReason(t *testing.T) {
	tests := []struct {
		pair, name, raw string
		want            string
		// body: what the answer written says of the reason, in the
		// caller's protocol ("" not checked).
		body string
	}{
		{"openai_openai", "stop", frChatAnswer(`"stop"`), "stop", `"finish_reason":"stop"`},
		{"openai_openai", "length", frChatAnswer(`"length"`), "length", `"finish_reason":"length"`},
		{"openai_openai", "null", frChatAnswer(`null`), "", `"finish_reason":null`},
		{"openai_openai", "absent", `{"choices":[{"message":{"content":"hi"}}]}`, "", ""},
		// A reason of another type is relayed, and is none to the gateway.
		{"openai_openai", "not a string", frChatAnswer(`7`), "", `"finish_reason":7`},
		{"openai_openai", "first of two choices", `{"choices":[{"index":0,"message":{"content":"a"},"finish_reason":"tool_calls"},` +
			`{"index":1,"message":{"content":"b"},"finish_reason":"length"}]}`, "tool_calls", ""},
		{"openai_anthropic", "end_turn", frAntAnswer(`"end_turn"`), "end_turn", `"finish_reason":"stop"`},
		{"openai_anthropic", "max_tokens", frAntAnswer(`"max_tokens"`), "max_tokens", `"finish_reason":"length"`},
		{"openai_anthropic", "tool_use", frAntAnswer(`"tool_use"`), "tool_use", `"finish_reason":"tool_calls"`},
		{"openai_anthropic", "null", frAntAnswer(`null`), "", `"finish_reason":"stop"`},
		{"anthropic_anthropic", "pause_turn", frAntAnswer(`"pause_turn"`), "pause_turn", `"stop_reason":"pause_turn"`},
		{"anthropic_anthropic", "null", frAntAnswer(`null`), "", `"stop_reason":null`},
		{"anthropic_anthropic", "not a string", frAntAnswer(`{"x":1}`), "", `"stop_reason":{"x":1}`},
		{"anthropic_openai", "content_filter", frChatAnswer(`"content_filter"`), "content_filter", `"stop_reason":"refusal"`},
		{"anthropic_openai", "length", frChatAnswer(`"length"`), "length", `"stop_reason":"max_tokens"`},
		{"anthropic_openai", "null", frChatAnswer(`null`), "", `"stop_reason":"end_turn"`},
		{"anthropic_openai", "first of two choices", `{"choices":[{"index":0,"message":{"content":"a"},"finish_reason":"stop"},` +
			`{"index":1,"message":{"content":"b"},"finish_reason":"length"}]}`, "stop", `"stop_reason":"end_turn"`},
		{"responses_openai", "length", frChatAnswer(`"length"`), "length", `"incomplete_details":{"reason":"max_output_tokens"}`},
		{"responses_openai", "tool_calls", frChatAnswer(`"tool_calls"`), "tool_calls", `"status":"completed"`},
		{"responses_anthropic", "max_tokens", frAntAnswer(`"max_tokens"`), "max_tokens", `"incomplete_details":{"reason":"max_output_tokens"}`},
		{"responses_anthropic", "end_turn", frAntAnswer(`"end_turn"`), "end_turn", `"status":"completed"`},
		{"responses_responses", "completed", frResponse(`"completed"`, `null`), "completed", ""},
		{"responses_responses", "incomplete", frResponse(`"incomplete"`, `{"reason":"max_output_tokens"}`), "max_output_tokens", ""},
		{"responses_responses", "incomplete, details unreadable", frResponse(`"incomplete"`, `"cut"`), "incomplete", `"incomplete_details":"cut"`},
		{"responses_responses", "no status", `{"output":[]}`, "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.pair+"/"+tc.name, func(t *testing.T) {
			m := rsTestMeta
			a, err := frPairs[tc.pair]().Answer([]byte(tc.raw), &m)
			if err != nil {
				t.Fatalf("Answer: %v", err)
			}
			if a.FinishReason != tc.want {
				t.Errorf("FinishReason %q, want %q", a.FinishReason, tc.want)
			}
			if tc.body != "" && !strings.Contains(string(a.Body), tc.body) {
				t.Errorf("answer %s does not say %s", a.Body, tc.body)
			}
		})
	}
}

// frEvent is one SSE event of a provider stream: its name ("" none) and
// data.
type frEvent struct{ typ, data string }

// Chat-completions stream events.
var (
	frChatStart = frEvent{"", `{"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}`}
	frChatText  = frEvent{"", `{"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":null}]}`}
	frChatUsage = frEvent{"", `{"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[],"usage":{"prompt_tokens":3,"completion_tokens":1,"total_tokens":4}}`}
	frChatDone  = frEvent{"", `[DONE]`}
)

func frChatFinish(reason string) frEvent {
	return frEvent{"", `{"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{},"finish_reason":` + reason + `}]}`}
}

// frChatStream is a chat-completions stream that finishes with reason.
func frChatStream(reason string) []frEvent {
	return []frEvent{frChatStart, frChatText, frChatFinish(reason), frChatUsage, frChatDone}
}

// frAntStream is a Messages stream that stops with reason.
func frAntStream(reason string) []frEvent {
	return []frEvent{
		{"message_start", `{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[],"stop_reason":null,"usage":{"input_tokens":3,"output_tokens":1}}}`},
		{"content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`},
		{"content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"hi"}}`},
		{"content_block_stop", `{"type":"content_block_stop","index":0}`},
		{"message_delta", `{"type":"message_delta","delta":{"stop_reason":` + reason + `,"stop_sequence":null},"usage":{"output_tokens":1}}`},
		{"message_stop", `{"type":"message_stop"}`},
	}
}

// frResponsesStream is a Responses stream that ends with the event last,
// its response's status and incomplete_details.
func frResponsesStream(last, status, details string) []frEvent {
	resp := func(status, details string) string {
		return `{"id":"resp_1","object":"response","created_at":1,"status":"` + status + `","error":null,"incomplete_details":` + details + `,"model":"m","output":[]}`
	}
	return []frEvent{
		{"response.created", `{"type":"response.created","sequence_number":0,"response":` + resp("in_progress", "null") + `}`},
		{"response.output_text.delta", `{"type":"response.output_text.delta","sequence_number":1,"item_id":"msg_1","output_index":0,"content_index":0,"delta":"hi"}`},
		{last, `{"type":"` + last + `","sequence_number":2,"response":` + resp(status, details) + `}`},
	}
}

// Every pair's stream reports the provider's reason on the one chunk that
// tells the caller why the answer ended (where: what that chunk's data
// says), from Event or from End; "" on every other chunk.
func TestStreamFinishReason(t *testing.T) {
	twoChoices := []frEvent{frChatStart,
		{"", `{"choices":[{"index":1,"delta":{},"finish_reason":"length"}]}`},
		{"", `{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`},
		frChatDone}
	tests := []struct {
		pair, name string
		events     []frEvent
		want       string // "": no chunk has a reason
		where      string
	}{
		{"openai_openai", "stop", frChatStream(`"stop"`), "stop", `"finish_reason":"stop"`},
		{"openai_openai", "content_filter", frChatStream(`"content_filter"`), "content_filter", `"finish_reason":"content_filter"`},
		{"openai_openai", "none", []frEvent{frChatStart, frChatText, frChatUsage, frChatDone}, "", ""},
		{"openai_openai", "not a string", frChatStream(`7`), "", ""},
		{"openai_openai", "first choice's", twoChoices, "stop", `"index":0`},
		{"openai_openai", "index not a number", []frEvent{{"", `{"choices":[{"index":"0","delta":{},"finish_reason":"stop"}]}`}}, "", ""},
		{"openai_anthropic", "max_tokens", frAntStream(`"max_tokens"`), "max_tokens", `"finish_reason":"length"`},
		{"openai_anthropic", "end_turn", frAntStream(`"end_turn"`), "end_turn", `"finish_reason":"stop"`},
		{"anthropic_anthropic", "tool_use", frAntStream(`"tool_use"`), "tool_use", `"type":"message_delta"`},
		{"anthropic_anthropic", "null", frAntStream(`null`), "", ""},
		{"anthropic_openai", "content_filter", frChatStream(`"content_filter"`), "content_filter", `"stop_reason":"refusal"`},
		{"anthropic_openai", "tool_calls", frChatStream(`"tool_calls"`), "tool_calls", `"stop_reason":"tool_use"`},
		{"anthropic_openai", "first choice's", twoChoices, "stop", `"stop_reason":"end_turn"`},
		{"anthropic_openai", "none", []frEvent{frChatStart, frChatText, frChatUsage, frChatDone}, "", ""},
		{"responses_openai", "length", frChatStream(`"length"`), "length", `"type":"response.incomplete"`},
		{"responses_openai", "stop", frChatStream(`"stop"`), "stop", `"type":"response.completed"`},
		{"responses_anthropic", "max_tokens", frAntStream(`"max_tokens"`), "max_tokens", `"type":"response.incomplete"`},
		{"responses_anthropic", "tool_use", frAntStream(`"tool_use"`), "tool_use", `"type":"response.completed"`},
		{"responses_responses", "completed", frResponsesStream("response.completed", "completed", "null"), "completed", `"type":"response.completed"`},
		{"responses_responses", "incomplete", frResponsesStream("response.incomplete", "incomplete", `{"reason":"content_filter"}`),
			"content_filter", `"type":"response.incomplete"`},
	}
	for _, tc := range tests {
		t.Run(tc.pair+"/"+tc.name, func(t *testing.T) {
			m := rsTestMeta
			s := frPairs[tc.pair]().Stream(&m)
			var carriers []string // the data of the chunks with a reason, as written
			var reasons []string
			note := func(chunks []Chunk) {
				for _, c := range chunks {
					if c.FinishReason != "" {
						reasons = append(reasons, c.FinishReason)
						carriers = append(carriers, string(c.Data))
					}
				}
			}
			for _, e := range tc.events {
				chunks, done, err := s.Event([]byte(e.typ), []byte(e.data), nil)
				if err != nil {
					t.Fatalf("Event(%s): %v", e.data, err)
				}
				note(chunks)
				if done {
					break
				}
			}
			note(s.End(Usage{InputTokens: 3, OutputTokens: 1}, nil))
			if tc.want == "" {
				if len(reasons) != 0 {
					t.Fatalf("reasons %q on chunks %q, want none", reasons, carriers)
				}
				return
			}
			if len(reasons) != 1 || reasons[0] != tc.want {
				t.Fatalf("reasons %q, want %q on one chunk", reasons, tc.want)
			}
			if !strings.Contains(carriers[0], tc.where) {
				t.Errorf("the reason is on %s, want the chunk that says %s", carriers[0], tc.where)
			}
		})
	}
}
