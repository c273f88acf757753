package translate

import (
	"errors"
	"strings"
	"testing"
)

// antBody is a request with extra top-level members (",..." or "").
func antBody(extra string) []byte {
	return []byte(`{"model":"m","messages":[{"role":"user","content":"hi"}]` + extra + `}`)
}

// antMessagesBody is a request with these messages.
func antMessagesBody(messages string) []byte {
	return []byte(`{"model":"m","messages":` + messages + `}`)
}

const antTool = `,"tools":[{"type":"function","function":{"name":"f"}}]`

// TestOpenAIToAnthropicNotCarried: each parameter the protocol cannot
// carry is refused by name, before anything is sent.
func TestOpenAIToAnthropicNotCarried(t *testing.T) {
	long := strings.Repeat("x", 60)
	for _, tc := range []struct {
		name, param string
		body        []byte
	}{
		{"n 2", "n", antBody(`,"n":2`)},
		{"n 0", "n", antBody(`,"n":0`)},
		{"logprobs", "logprobs", antBody(`,"logprobs":true`)},
		{"top_logprobs", "top_logprobs", antBody(`,"top_logprobs":2`)},
		{"logit_bias", "logit_bias", antBody(`,"logit_bias":{"50256":-100}`)},
		{"seed", "seed", antBody(`,"seed":7`)},
		{"seed 0", "seed", antBody(`,"seed":0`)},
		{"presence_penalty", "presence_penalty", antBody(`,"presence_penalty":0.5`)},
		{"frequency_penalty", "frequency_penalty", antBody(`,"frequency_penalty":-1`)},
		{"audio", "audio", antBody(`,"audio":{"voice":"alloy","format":"mp3"}`)},
		{"modalities audio", "modalities", antBody(`,"modalities":["text","audio"]`)},
		{"prediction", "prediction", antBody(`,"prediction":{"type":"content","content":"x"}`)},
		{"service_tier", "service_tier", antBody(`,"service_tier":"flex"`)},
		{"store", "store", antBody(`,"store":true`)},
		{"metadata", "metadata", antBody(`,"metadata":{"k":"v"}`)},
		{"reasoning_effort", "reasoning_effort", antBody(`,"reasoning_effort":"low"`)},
		{"functions", "functions", antBody(`,"functions":[{"name":"f"}]`)},
		{"function_call", "function_call", antBody(`,"function_call":"auto"`)},
		{"unknown member", "web_search_options", antBody(`,"web_search_options":{}`)},
		// Names as sent: the server makes a param safe to show (redacted,
		// clipped, printable).
		{"long unknown member as sent", long, antBody(`,"` + long + `":1`)},
		{"unprintable unknown member as sent", "café\u0001", antBody(`,"café\u0001":1`)},
		{"custom tool", "tools[0].type", antBody(`,"tools":[{"type":"custom","custom":{"name":"x"}}]`)},
		{"function tool without function", "tools[0].function", antBody(`,"tools":[{"type":"function"}]`)},
		{"tool_choice string", "tool_choice", antBody(antTool + `,"tool_choice":"any"`)},
		{"tool_choice number", "tool_choice", antBody(antTool + `,"tool_choice":1`)},
		{"tool_choice allowed_tools", "tool_choice.type", antBody(antTool + `,"tool_choice":{"type":"allowed_tools","allowed_tools":{}}`)},
		{"tool_choice extra member", "tool_choice.extra", antBody(antTool + `,"tool_choice":{"type":"function","function":{"name":"f"},"extra":1}`)},
		{"json_object", "response_format.type", antBody(`,"response_format":{"type":"json_object"}`)},
		{"json_schema without schema", "response_format.json_schema.schema", antBody(`,"response_format":{"type":"json_schema","json_schema":{"name":"x"}}`)},
		{"stop number", "stop", antBody(`,"stop":5`)},
		{"stop array of numbers", "stop", antBody(`,"stop":[5]`)},
		{"input_audio part", "messages[0].content[1].type", antMessagesBody(`[{"role":"user","content":[{"type":"text","text":"a"},{"type":"input_audio","input_audio":{"data":"AA==","format":"wav"}}]}]`)},
		{"file part", "messages[0].content[0].type", antMessagesBody(`[{"role":"user","content":[{"type":"file","file":{"file_id":"f1"}}]}]`)},
		{"image in system", "messages[0].content[0].type", antMessagesBody(`[{"role":"system","content":[{"type":"image_url","image_url":{"url":"https://x/y.png"}}]},{"role":"user","content":"hi"}]`)},
		{"refusal part from user", "messages[0].content[0].type", antMessagesBody(`[{"role":"user","content":[{"type":"refusal","refusal":"no"}]}]`)},
		{"text part with cache_control", "messages[0].content[0].cache_control", antMessagesBody(`[{"role":"user","content":[{"type":"text","text":"a","cache_control":{"type":"ephemeral"}}]}]`)},
		{"image bmp", "messages[0].content[0].image_url.url", antMessagesBody(`[{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:image/bmp;base64,AA=="}}]}]`)},
		{"data URL not base64", "messages[0].content[0].image_url.url", antMessagesBody(`[{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:image/png,AA"}}]}]`)},
		{"ftp image", "messages[0].content[0].image_url.url", antMessagesBody(`[{"role":"user","content":[{"type":"image_url","image_url":{"url":"ftp://x/y.png"}}]}]`)},
		{"image part without image", "messages[0].content[0].image_url", antMessagesBody(`[{"role":"user","content":[{"type":"image_url"}]}]`)},
		{"content number", "messages[0].content", antMessagesBody(`[{"role":"user","content":5}]`)},
		{"function role", "messages[1].role", antMessagesBody(`[{"role":"user","content":"hi"},{"role":"function","name":"f","content":"x"}]`)},
		{"assistant audio", "messages[1].audio", antMessagesBody(`[{"role":"user","content":"hi"},{"role":"assistant","audio":{"id":"a1"}},{"role":"user","content":"hi"}]`)},
		{"arguments not JSON", "messages[1].tool_calls[0].function.arguments", antMessagesBody(`[{"role":"user","content":"hi"},{"role":"assistant","tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{bad"}}]}]`)},
		{"arguments not an object", "messages[1].tool_calls[1].function.arguments", antMessagesBody(`[{"role":"user","content":"hi"},{"role":"assistant","tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{}"}},{"id":"d","type":"function","function":{"name":"f","arguments":"[1]"}}]}]`)},
		{"arguments with trailing data", "messages[1].tool_calls[0].function.arguments", antMessagesBody(`[{"role":"user","content":"hi"},{"role":"assistant","tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{} {}"}}]}]`)},
		{"custom tool call", "messages[1].tool_calls[0].type", antMessagesBody(`[{"role":"user","content":"hi"},{"role":"assistant","tool_calls":[{"id":"c","type":"custom","custom":{"name":"f","input":"x"}}]}]`)},
		{"tool message without id", "messages[2].tool_call_id", antMessagesBody(`[{"role":"user","content":"hi"},{"role":"assistant","tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{}"}}]},{"role":"tool","content":"x"}]`)},
		{"wrong type", "max_tokens", antBody(`,"max_tokens":"many"`)},
		{"only a system prompt", "messages", antMessagesBody(`[{"role":"system","content":"be brief"}]`)},
		{"no messages", "messages", antMessagesBody(`[]`)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			segs, err := openAIToAnthropic().Request(&ChatRequest{Body: tc.body}, "claude-x")
			var nc *NotCarried
			if !errors.As(err, &nc) {
				t.Fatalf("got %q, %v; want a *NotCarried", segs, err)
			}
			if nc.Param != tc.param || nc.Reason == "" {
				t.Errorf("param %q reason %q, want param %q", nc.Param, nc.Reason, tc.param)
			}
		})
	}
}

// TestOpenAIToAnthropicNeutralCarried: a parameter at the value that asks
// for nothing is carried (by leaving it out), one by one.
func TestOpenAIToAnthropicNeutralCarried(t *testing.T) {
	plain, err := openAIToAnthropic().Request(&ChatRequest{Body: antBody("")}, "claude-x")
	if err != nil {
		t.Fatal(err)
	}
	for _, extra := range []string{
		`"n":1`, `"n":null`, `"logprobs":false`, `"logprobs":null`, `"top_logprobs":0`, `"top_logprobs":null`,
		`"logit_bias":{}`, `"logit_bias":null`, `"seed":null`, `"presence_penalty":0`, `"frequency_penalty":0.0`,
		`"presence_penalty":-0`, `"audio":null`, `"modalities":["text"]`, `"modalities":null`, `"prediction":null`,
		`"service_tier":"auto"`, `"service_tier":null`, `"store":false`, `"store":null`, `"metadata":{}`, `"metadata":null`,
		`"reasoning_effort":null`, `"functions":null`, `"function_call":null`, `"parallel_tool_calls":true`,
		`"parallel_tool_calls":false`, `"stream_options":{"include_usage":true}`, `"response_format":{"type":"text"}`,
		`"response_format":null`, `"tool_choice":null`, `"tools":[]`, `"stop":null`, `"stop":[]`, `"user":null`,
		`"max_tokens":null`, `"temperature":null`, `"top_p":null`,
	} {
		t.Run(extra, func(t *testing.T) {
			got, err := openAIToAnthropic().Request(&ChatRequest{Body: antBody("," + extra)}, "claude-x")
			if err != nil {
				t.Fatal(err)
			}
			if string(got[0]) != string(plain[0]) {
				t.Errorf("got  %s\nwant %s", got[0], plain[0])
			}
		})
	}
}
