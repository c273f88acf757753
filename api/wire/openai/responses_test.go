package openai

import (
	"testing"

	jsonv2 "github.com/go-json-experiment/json"
)

// TestResponsesMarshalGolden holds the bytes of the Responses shapes a
// server writes, members in the protocol's places (null error, usage
// details).
func TestResponsesMarshalGolden(t *testing.T) {
	args := `{"a":1}`
	for _, tc := range []struct {
		name string
		v    any
		want string
	}{
		{"response with text", &Response{ID: "resp_1", Object: ObjectResponse, CreatedAt: 7, Status: ResponseStatusCompleted, Model: "m",
			Output: []OutputItem{{ID: "msg_1", Type: ItemMessage, Status: "completed", Role: "assistant", Content: []ContentItem{OutputText("hi")}}},
			Usage:  &ResponsesUsage{InputTokens: 3, InputTokensDetails: &InputTokensDetails{}, OutputTokens: 1, OutputTokensDetails: &OutputTokensDetails{}, TotalTokens: 4}},
			`{"id":"resp_1","object":"response","created_at":7,"status":"completed","error":null,"incomplete_details":null,"model":"m",` +
				`"output":[{"id":"msg_1","type":"message","status":"completed","role":"assistant","content":[{"type":"output_text","text":"hi","annotations":[],"logprobs":[]}]}],` +
				`"usage":{"input_tokens":3,"input_tokens_details":{"cached_tokens":0},"output_tokens":1,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":4}}`},
		{"created", &ResponseEvent{Type: EventResponseCreated, Response: Response{ID: "resp_1", Object: ObjectResponse, Status: ResponseStatusInProgress, Model: "m", Output: []OutputItem{}}},
			`{"type":"response.created","sequence_number":0,"response":{"id":"resp_1","object":"response","created_at":0,"status":"in_progress","error":null,"incomplete_details":null,"model":"m","output":[],"usage":null}}`},
		{"call item added", &OutputItemEvent{Type: EventOutputItemAdded, SequenceNumber: 2, Item: OutputItem{ID: "fc_1", Type: ItemFunctionCall, Status: "in_progress", CallID: "call_1", Name: "f", Arguments: ptr("")}},
			`{"type":"response.output_item.added","sequence_number":2,"output_index":0,"item":{"id":"fc_1","type":"function_call","status":"in_progress","call_id":"call_1","name":"f","arguments":""}}`},
		{"message item added", &OutputItemEvent{Type: EventOutputItemAdded, SequenceNumber: 2, Item: OutputItem{ID: "msg_1", Type: ItemMessage, Status: "in_progress", Role: "assistant", Content: []ContentItem{}}},
			`{"type":"response.output_item.added","sequence_number":2,"output_index":0,"item":{"id":"msg_1","type":"message","status":"in_progress","role":"assistant","content":[]}}`},
		{"text delta", &OutputTextEvent{Type: EventOutputTextDelta, SequenceNumber: 4, ItemID: "msg_1", Delta: ptr(" he")},
			`{"type":"response.output_text.delta","sequence_number":4,"item_id":"msg_1","output_index":0,"content_index":0,"delta":" he"}`},
		{"arguments done", &FunctionCallArgumentsEvent{Type: EventFunctionCallArgumentsDone, SequenceNumber: 5, ItemID: "fc_1", Name: "f", Arguments: &args},
			`{"type":"response.function_call_arguments.done","sequence_number":5,"item_id":"fc_1","output_index":0,"name":"f","arguments":"{\"a\":1}"}`},
		{"error event", &ResponsesErrorEvent{Type: EventResponsesError, SequenceNumber: 1, Code: ptr("server_error"), Message: "x"},
			`{"type":"error","sequence_number":1,"code":"server_error","message":"x","param":null}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := jsonv2.Marshal(tc.v)
			if err != nil {
				t.Fatal(err)
			}
			if string(b) != tc.want {
				t.Errorf("got  %s\nwant %s", b, tc.want)
			}
		})
	}
}

// TestResponsesRequestDecode reads a request shaped like Codex's: every
// item form lands in InputItem, the tools and their options in place, raw
// members kept as sent.
func TestResponsesRequestDecode(t *testing.T) {
	const in = `{"model":"m","instructions":"be brief","stream":true,"store":false,"include":["reasoning.encrypted_content"],"prompt_cache_key":"k",
 "input":[{"type":"message","id":"msg_1","role":"user","content":[{"type":"input_text","text":"hi"},{"type":"input_image","image_url":"https://x.invalid/a.png","detail":"low"}]},
  {"role":"assistant","content":"short form"},
  {"type":"reasoning","id":"rs_1","summary":[],"encrypted_content":"e"},
  {"type":"function_call","id":"fc_1","call_id":"call_1","name":"f","arguments":"{}"},
  {"type":"function_call_output","call_id":"call_1","output":"done"}],
 "tools":[{"type":"function","name":"f","strict":false,"parameters":{"type":"object"}},{"type":"web_search","external_web_access":false}],
 "tool_choice":{"type":"function","name":"f"},"text":{"format":{"type":"json_schema","name":"s","schema":{"type":"object"},"strict":true}},
 "reasoning":{"effort":"high","summary":"auto"},"max_output_tokens":100,"client_metadata":{"thread_id":"t"}}`
	var r ResponsesRequest
	if err := jsonv2.Unmarshal([]byte(in), &r); err != nil {
		t.Fatal(err)
	}
	var items []InputItem
	if err := jsonv2.Unmarshal(r.Input, &items); err != nil {
		t.Fatal(err)
	}
	var parts []ContentItem
	if err := jsonv2.Unmarshal(items[0].Content, &parts); err != nil {
		t.Fatal(err)
	}
	var choice ResponsesToolChoice
	if err := jsonv2.Unmarshal(r.ToolChoice, &choice); err != nil {
		t.Fatal(err)
	}
	switch {
	case string(r.Instructions) != `"be brief"` || *r.Stream != true || *r.Store || r.Include[0] != "reasoning.encrypted_content" || *r.MaxOutputTokens != 100:
		t.Errorf("top level %+v", r)
	case len(items) != 5 || items[1].Type != "" || items[1].Role != "assistant" || items[2].Type != ItemReasoning || string(items[2].EncryptedContent) != `"e"`:
		t.Errorf("items %+v", items)
	case *items[3].Arguments != "{}" || items[3].CallID != "call_1" || string(items[4].Output) != `"done"`:
		t.Errorf("call items %+v %+v", items[3], items[4])
	case len(parts) != 2 || *parts[0].Text != "hi" || parts[1].ImageURL != "https://x.invalid/a.png" || parts[1].Detail != "low":
		t.Errorf("parts %+v", parts)
	case len(r.Tools) != 2 || r.Tools[0].Name != "f" || *r.Tools[0].Strict || r.Tools[1].Type != "web_search":
		t.Errorf("tools %+v", r.Tools)
	case choice.Type != "function" || choice.Name != "f" || r.Text.Format.Name != "s" || !*r.Text.Format.Strict || string(r.Reasoning.Effort) != `"high"`:
		t.Errorf("choice %+v format %+v reasoning %+v", choice, r.Text.Format, r.Reasoning)
	case string(r.ClientMetadata) != `{"thread_id":"t"}`:
		t.Errorf("client_metadata %s", r.ClientMetadata)
	}
}
