package mockproviders

import (
	"strconv"
	"strings"
	"testing"

	"github.com/llmgw/llmgw/api/tokens"
	"github.com/llmgw/llmgw/api/wire/openai"
)

const responsesPath = "/v1/responses"

// respBody is a Responses request with input (a JSON value) and extra
// top-level members (each starting with a comma).
func respBody(input string, extra ...string) []byte {
	return []byte(`{"model":"mdl","input":` + input + strings.Join(extra, "") + `}`)
}

func respText(s string) string { return string(mustMarshal(s)) }

// respTools offers a custom tool and a hosted one first, which the mock
// never calls, then two function tools.
const respTools = `,"tools":[{"type":"custom","name":"apply_patch","format":{"type":"grammar"}},{"type":"web_search","external_web_access":false},` +
	`{"type":"function","name":"get_weather","description":"weather","strict":false,"parameters":` + weatherSchema + `},` +
	`{"type":"function","name":"get_time","parameters":` + timeSchema + `}]`

// respPost posts a Responses body to a new alpha mock's m and returns the
// decoded response, failing unless the status is want.
func respPost(t *testing.T, m *mock, body []byte, want int) (result, openai.Response) {
	t.Helper()
	res := m.doAt(t, t.Context(), responsesPath, body, nil)
	if res.resp.StatusCode != want {
		t.Fatalf("status %d, want %d: %s", res.resp.StatusCode, want, res.body)
	}
	var r openai.Response
	if want == 200 && !strings.Contains(res.resp.Header.Get("Content-Type"), "event-stream") {
		mustUnmarshal(t, string(res.body), &r)
	}
	return res, r
}

// outputText is the text of a response's one message item.
func outputText(t *testing.T, r openai.Response) string {
	t.Helper()
	if len(r.Output) != 1 || r.Output[0].Type != openai.ItemMessage || len(r.Output[0].Content) != 1 ||
		r.Output[0].Content[0].Type != openai.PartOutputText || r.Output[0].Content[0].Text == nil {
		t.Fatalf("want one message item with one output_text: %+v", r.Output)
	}
	return *r.Output[0].Content[0].Text
}

// TestResponsesMatchChat: the same conversation sent as chat completions
// and as Responses gets the same text and the same usage.
func TestResponsesMatchChat(t *testing.T) {
	tests := []struct {
		name       string
		chat       string // messages
		input      string
		extra      string
		chatExtra  string
		maxTokens  int
		wantStatus string
	}{
		{"string input", userMsg("Tell me about rivers."), respText("Tell me about rivers."), "", "", 0, "completed"},
		{"instructions and items", `[{"role":"system","content":"Be terse."},{"role":"developer","content":"Use words."},{"role":"user","content":"Tell me"},{"role":"assistant","content":"Rivers flow."},{"role":"user","content":"more"}]`,
			`[{"type":"message","role":"developer","content":[{"type":"input_text","text":"Use words."}]},{"role":"user","content":"Tell me"},` +
				`{"type":"message","role":"assistant","content":[{"type":"output_text","text":"Rivers flow.","annotations":[]}]},{"type":"message","role":"user","content":[{"type":"input_text","text":"more"}]}]`,
			`,"instructions":"Be terse."`, "", 0, "completed"},
		{"directive", userMsg("Hi\n@mock *:chunks=3 alpha:cached_tokens=1 alpha:reasoning_tokens=4"), respText("Hi\n@mock *:chunks=3 alpha:cached_tokens=1 alpha:reasoning_tokens=4"), "", "", 0, "completed"},
		{"image", `[{"role":"user","content":[{"type":"text","text":"what is it"},{"type":"image_url","image_url":{"url":"https://x.invalid/a.png"}}]}]`,
			`[{"role":"user","content":[{"type":"input_text","text":"what is it"},{"type":"input_image","image_url":"https://x.invalid/a.png","detail":"auto"}]}]`, "", "", 0, "completed"},
		{"cut by max_output_tokens", userMsg("Hi\n@mock *:chunks=30"), respText("Hi\n@mock *:chunks=30"), `,"max_output_tokens":16`, `,"max_tokens":16`, 16, "incomplete"},
		{"json schema", userMsg("weather"), respText("weather"),
			`,"text":{"format":{"type":"json_schema","name":"w","strict":true,"schema":` + timeSchema + `}}`,
			`,"response_format":{"type":"json_schema","json_schema":{"name":"w","schema":` + timeSchema + `}}`, 0, "completed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := newMock(t, Options{Flavor: Alpha})
			chat := decodeAnswer(t, Alpha, m.do(t, t.Context(), chatBody(Alpha, tt.chat, false, tt.chatExtra), nil).body)
			_, r := respPost(t, m, respBody(tt.input, tt.extra), 200)
			if r.Object != openai.ObjectResponse || r.Status != tt.wantStatus || r.Model != "mdl" || r.CreatedAt != mockCreated || !strings.HasPrefix(r.ID, "resp_") {
				t.Fatalf("response %+v", r)
			}
			if got := outputText(t, r); got != chat.text {
				t.Errorf("text %q, chat says %q", got, chat.text)
			}
			u := r.Usage
			if u == nil || u.InputTokensDetails == nil || u.OutputTokensDetails == nil {
				t.Fatalf("usage %+v: want both details", u)
			}
			if u.InputTokens != chat.in || u.OutputTokens != chat.out || u.TotalTokens != chat.in+chat.out {
				t.Errorf("usage %+v, chat %d in %d out", u, chat.in, chat.out)
			}
			if tt.maxTokens > 0 && (u.OutputTokens != tt.maxTokens || r.IncompleteDetails == nil || r.IncompleteDetails.Reason != "max_output_tokens" || r.Output[0].Status != "incomplete") {
				t.Errorf("cut answer: %+v %+v", r.IncompleteDetails, r.Output[0])
			}
			if tt.name == "directive" && (u.InputTokensDetails.CachedTokens != 1 || u.OutputTokensDetails.ReasoningTokens != 4) {
				t.Errorf("details %+v %+v", u.InputTokensDetails, u.OutputTokensDetails)
			}
		})
	}
}

// respEvent is a decoded Responses stream event, with its raw data.
type respEvent struct {
	name string
	head openai.ResponsesEventHead
	data string
}

// respEvents parses a Responses stream and checks what every event
// shares: a name equal to its type and sequence numbers 0, 1, 2...
func respEvents(t *testing.T, body []byte) []respEvent {
	t.Helper()
	var out []respEvent
	for i, e := range parseSSE(t, body) {
		var h openai.ResponsesEventHead
		mustUnmarshal(t, e.data, &h)
		if h.Type != e.name || h.SequenceNumber != i {
			t.Fatalf("event %d: name %q type %q sequence_number %d", i, e.name, h.Type, h.SequenceNumber)
		}
		out = append(out, respEvent{name: e.name, head: h, data: e.data})
	}
	return out
}

func eventNames(evs []respEvent) string {
	var names []string
	for _, e := range evs {
		names = append(names, strings.TrimPrefix(e.name, "response."))
	}
	return strings.Join(names, " ")
}

func TestResponsesStream(t *testing.T) {
	tests := []struct {
		name      string
		body      []byte
		wantNames string
	}{
		{"text", respBody(respText("Tell me\n@mock alpha:chunks=3"), `,"stream":true`),
			"created in_progress output_item.added content_part.added output_text.delta output_text.delta output_text.delta " +
				"output_text.done content_part.done output_item.done completed"},
		{"cut text", respBody(respText("Tell me\n@mock alpha:chunks=30"), `,"stream":true,"max_output_tokens":16`),
			"created in_progress output_item.added content_part.added" + strings.Repeat(" output_text.delta", 16) +
				" output_text.done content_part.done output_item.done incomplete"},
		{"tool call", respBody(respText("weather?\n@mock *:tool=get_weather *:chunks=3"), `,"stream":true`, respTools),
			"created in_progress output_item.added function_call_arguments.delta function_call_arguments.delta function_call_arguments.delta " +
				"function_call_arguments.done output_item.done completed"},
		{"no usage", respBody(respText("Hi\n@mock alpha:no_usage=1 alpha:chunks=1"), `,"stream":true`),
			"created in_progress output_item.added content_part.added output_text.delta output_text.done content_part.done output_item.done completed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := newMock(t, Options{Flavor: Alpha})
			// The JSON answer to the same request, without stream, is what the
			// stream must add up to.
			jsonBody := []byte(strings.Replace(string(tt.body), `,"stream":true`, "", 1))
			_, want := respPost(t, m, jsonBody, 200)
			res, _ := respPost(t, m, tt.body, 200)
			if ct := res.resp.Header.Get("Content-Type"); ct != "text/event-stream" {
				t.Fatalf("content type %q", ct)
			}
			evs := respEvents(t, res.body)
			if got := eventNames(evs); got != tt.wantNames {
				t.Fatalf("events\n got %s\nwant %s", got, tt.wantNames)
			}
			var deltas strings.Builder
			var final openai.ResponseEvent
			for _, e := range evs {
				switch e.name {
				case openai.EventResponseCreated, openai.EventResponseInProgress:
					var ev openai.ResponseEvent
					mustUnmarshal(t, e.data, &ev)
					if ev.Response.Status != "in_progress" || ev.Response.ID != want.ID || len(ev.Response.Output) != 0 || ev.Response.Usage != nil ||
						!strings.Contains(e.data, `"output":[]`) || !strings.Contains(e.data, `"usage":null`) {
						t.Errorf("%s: %s", e.name, e.data)
					}
				case openai.EventOutputItemAdded:
					var ev openai.OutputItemEvent
					mustUnmarshal(t, e.data, &ev)
					if ev.Item.Status != "in_progress" || ev.Item.ID != want.Output[0].ID || ev.Item.Type != want.Output[0].Type {
						t.Errorf("item added %s", e.data)
					}
					if ev.Item.Type == openai.ItemMessage && !strings.Contains(e.data, `"content":[]`) {
						t.Errorf("message item added without empty content: %s", e.data)
					}
					if ev.Item.Type == openai.ItemFunctionCall && (ev.Item.Arguments == nil || *ev.Item.Arguments != "" || ev.Item.CallID != want.Output[0].CallID) {
						t.Errorf("call item added %s", e.data)
					}
				case openai.EventContentPartAdded:
					if !strings.Contains(e.data, `"part":{"type":"output_text","text":"","annotations":[],"logprobs":[]}`) {
						t.Errorf("part added %s", e.data)
					}
				case openai.EventOutputTextDelta, openai.EventFunctionCallArgumentsDelta:
					var ev openai.OutputTextEvent
					mustUnmarshal(t, e.data, &ev)
					if ev.Delta == nil || ev.ItemID != want.Output[0].ID {
						t.Fatalf("delta %s", e.data)
					}
					deltas.WriteString(*ev.Delta)
				case openai.EventOutputTextDone:
					var ev openai.OutputTextEvent
					mustUnmarshal(t, e.data, &ev)
					if ev.Text == nil || *ev.Text != deltas.String() {
						t.Errorf("text done %s, deltas %q", e.data, deltas.String())
					}
				case openai.EventFunctionCallArgumentsDone:
					var ev openai.FunctionCallArgumentsEvent
					mustUnmarshal(t, e.data, &ev)
					if ev.Arguments == nil || *ev.Arguments != deltas.String() || ev.Name != "get_weather" {
						t.Errorf("arguments done %s, deltas %q", e.data, deltas.String())
					}
				case openai.EventOutputItemDone:
					var ev openai.OutputItemEvent
					mustUnmarshal(t, e.data, &ev)
					if string(mustMarshal(ev.Item)) != string(mustMarshal(want.Output[0])) {
						t.Errorf("item done %s, JSON answer has %s", e.data, mustMarshal(want.Output[0]))
					}
				case openai.EventResponseCompleted, openai.EventResponseIncomplete:
					mustUnmarshal(t, e.data, &final)
				}
			}
			// The final response is the JSON answer, byte for byte.
			if got := string(mustMarshal(final.Response)); got != string(mustMarshal(want)) {
				t.Errorf("final response\n got %s\nwant %s", got, mustMarshal(want))
			}
			c := m.calls(t)
			if tt.name == "no usage" {
				if final.Response.Usage != nil || c.Tokens.UnreportedOutputTokens == 0 {
					t.Errorf("no_usage: usage %+v, tokens %+v", final.Response.Usage, c.Tokens)
				}
			} else if u := final.Response.Usage; u == nil || c.Tokens.InputTokens != int64(2*u.InputTokens) || c.Tokens.OutputTokens != int64(2*u.OutputTokens) {
				t.Errorf("usage %+v; /mock/calls counted %+v for the JSON answer and the stream", u, c.Tokens)
			}
		})
	}
}

func TestResponsesFaults(t *testing.T) {
	m := newMock(t, Options{Flavor: Alpha})
	// status= answers OpenAI's error body.
	res, _ := respPost(t, m, respBody(respText("x\n@mock alpha:status=429 alpha:retry_after=2")), 429)
	if typ, code, _ := errorType(t, Alpha, res.body); typ != "rate_limit_exceeded" || code != "rate_limit_exceeded" || res.resp.Header.Get("Retry-After") != "2" {
		t.Errorf("429: %s %v", res.body, res.resp.Header)
	}
	// error_after in a stream: the pieces, then response.failed.
	res, _ = respPost(t, m, respBody(respText("x\n@mock alpha:chunks=3 alpha:error_after=2"), `,"stream":true`), 200)
	evs := respEvents(t, res.body)
	if got := eventNames(evs); got != "created in_progress output_item.added content_part.added output_text.delta output_text.delta failed" {
		t.Fatalf("events %s", got)
	}
	var failed openai.ResponseEvent
	mustUnmarshal(t, evs[len(evs)-1].data, &failed)
	if failed.Response.Status != "failed" || failed.Response.Error == nil || failed.Response.Error.Code != "server_error" ||
		!strings.HasPrefix(failed.Response.Error.Message, "mock fault:") || failed.Response.Usage != nil {
		t.Errorf("failed: %s", evs[len(evs)-1].data)
	}
	// error_after without stream: a 500.
	respPost(t, m, respBody(respText("x\n@mock alpha:error_after=1")), 500)
	// drop_after: the stream is cut, no terminal event.
	res = m.doAt(t, t.Context(), responsesPath, respBody(respText("x\n@mock alpha:chunks=3 alpha:drop_after=1"), `,"stream":true`), nil)
	if res.readErr == nil || strings.Contains(string(res.body), "response.completed") || !strings.Contains(string(res.body), "response.output_text.delta") {
		t.Errorf("drop_after: read error %v, body %s", res.readErr, res.body)
	}
	// A directive for beta only changes nothing here.
	respPost(t, m, respBody(respText("x\n@mock beta:status=503")), 200)
	c := m.calls(t)
	if c.ByPath[responsesPath] != 5 || c.ByFault["status=429"] != 1 || c.ByFault["error_after=2"] != 1 || c.ByStatus["500"] != 1 {
		t.Errorf("calls %+v", c)
	}
}

// TestResponsesToolLoop is what Codex does: the directive asks for a call,
// the call comes back as input with its output (and a reasoning item), and
// the answer to that is text that repeats the output; /mock/calls has the
// output the mock received.
func TestResponsesToolLoop(t *testing.T) {
	const output = "Chunk ID: 1\nProcess exited with code 0\nOutput:\nllmgw-ok\n"
	m := newMock(t, Options{Flavor: Alpha})
	user := `{"type":"message","role":"user","content":[{"type":"input_text","text":"weather?\n@mock *:tool=get_weather *:args={\"city\": \"Paris\", \"days\": 3, \"metric\": true}"}]}`
	_, first := respPost(t, m, respBody(`[`+user+`]`, respTools), 200)
	if len(first.Output) != 1 {
		t.Fatalf("output %+v", first.Output)
	}
	call := first.Output[0]
	if call.Type != openai.ItemFunctionCall || call.Name != "get_weather" || call.Arguments == nil || *call.Arguments != `{"city":"Paris","days":3,"metric":true}` ||
		!strings.HasPrefix(call.CallID, "call_") || !strings.HasPrefix(call.ID, "fc_") || call.Status != "completed" {
		t.Fatalf("call %+v", call)
	}
	if first.Usage.OutputTokens != tokens.Count(call.Name)+tokens.Count(*call.Arguments) {
		t.Errorf("call output tokens %d", first.Usage.OutputTokens)
	}
	reasoning := `{"type":"reasoning","id":"rs_1","summary":[],"encrypted_content":"b3BhcXVl"}`
	callItem := string(mustMarshal(openai.InputItem{Type: call.Type, ID: call.ID, Status: call.Status, CallID: call.CallID, Name: call.Name, Arguments: call.Arguments}))
	out := `{"type":"function_call_output","call_id":"` + call.CallID + `","output":` + respText(output) + `}`
	input := `[` + user + `,` + reasoning + `,` + callItem + `,` + out + `]`
	_, second := respPost(t, m, respBody(input, respTools, `,"tool_choice":"required"`), 200)
	want := "alpha/mdl says: tool result received: Chunk ID: 1 Process exited with code 0 O" // 40 characters
	if got := outputText(t, second); got != want {
		t.Errorf("answer %q, want %q", got, want)
	}
	// Input: the question (its directive line is ordinary text now that
	// the turn is not the last), the call's arguments, the output; the
	// reasoning item counts nothing.
	question := tokens.Count("weather?\n@mock *:tool=get_weather *:args={\"city\": \"Paris\", \"days\": 3, \"metric\": true}")
	if wantIn := question + 1 + tokens.Count(output); second.Usage.InputTokens != wantIn {
		t.Errorf("input tokens %d, want %d", second.Usage.InputTokens, wantIn)
	}
	// The output as a list of parts, marked as in Codex's image outputs.
	parts := `{"type":"function_call_output","call_id":"` + call.CallID + `","output":[{"type":"input_text","text":"done"},{"type":"input_image","image_url":"data:image/png;base64,iVBORw0KGgo="}]}`
	_, third := respPost(t, m, respBody(`[`+user+`,`+callItem+`,`+parts+`]`, respTools), 200)
	if got := outputText(t, third); got != "alpha/mdl says: tool result received: done" || third.Usage.InputTokens != question+1+1+ImageInputTokens {
		t.Errorf("parts output: %q, %d input tokens", got, third.Usage.InputTokens)
	}
	c := m.calls(t)
	wantResults := []ToolResult{{Path: responsesPath, CallID: call.CallID, Content: output}, {Path: responsesPath, CallID: call.CallID, Content: "done"}}
	if string(mustMarshal(c.ToolResults)) != string(mustMarshal(wantResults)) {
		t.Errorf("tool_results %+v, want %+v", c.ToolResults, wantResults)
	}
}

// codexRequest is shaped like what Codex 0.171 sends: developer and user
// message items with ids, function tools with strict, a namespace of
// tools, web_search, and its members of no concern to a model
// (client_metadata, include, store, prompt_cache_key, reasoning).
const codexRequest = `{"model":"gpt-5.5","stream":true,
 "input":[
  {"type":"message","id":"msg_1","role":"developer","content":[{"type":"input_text","text":"You are a coding agent."}]},
  {"type":"message","id":"msg_2","role":"user","content":[{"type":"input_text","text":"<environment_context><cwd>/w</cwd></environment_context>"}]},
  {"type":"message","id":"msg_3","role":"user","content":[{"type":"input_text","text":"Write the marker.\n@mock *:tool=exec_command *:args={\"cmd\": \"echo ok\"}"}]}],
 "tools":[
  {"type":"function","name":"exec_command","description":"Runs a command","strict":false,"parameters":{"type":"object","properties":{"cmd":{"type":"string"},"workdir":{"type":"string"}},"required":["cmd"],"additionalProperties":false}},
  {"type":"namespace","name":"multi_agent_v1","description":"agents","tools":[{"type":"function","name":"close_agent","strict":false,"parameters":{"type":"object","properties":{}}}]},
  {"type":"web_search","external_web_access":false}],
 "tool_choice":"auto","parallel_tool_calls":true,"reasoning":{"effort":"medium","summary":"auto"},"store":false,
 "include":["reasoning.encrypted_content"],"prompt_cache_key":"01a2","text":{"verbosity":"low"},
 "client_metadata":{"thread_id":"01a2","x-codex-turn-metadata":"{}"}}`

func TestResponsesAcceptsCodexRequest(t *testing.T) {
	m := newMock(t, Options{Flavor: Alpha})
	res, _ := respPost(t, m, []byte(codexRequest), 200)
	evs := respEvents(t, res.body)
	var done openai.OutputItemEvent
	for _, e := range evs {
		if e.name == openai.EventOutputItemDone {
			mustUnmarshal(t, e.data, &done)
		}
	}
	if done.Item.Name != "exec_command" || done.Item.Arguments == nil || *done.Item.Arguments != `{"cmd":"echo ok"}` {
		t.Fatalf("call %+v in %s", done.Item, res.body)
	}
	if evs[len(evs)-1].name != openai.EventResponseCompleted {
		t.Errorf("last event %s", evs[len(evs)-1].name)
	}
}

func TestResponsesBadRequests(t *testing.T) {
	call := `{"type":"function_call","call_id":"call_1","name":"get_time","arguments":"{}"}`
	tests := []struct {
		name, body, param, want string
	}{
		{"no input", `{"model":"m"}`, "input", "Missing required parameter"},
		{"empty input", `{"model":"m","input":[]}`, "input", "empty"},
		{"input number", `{"model":"m","input":5}`, "input", "string or an array"},
		{"no model", `{"input":"x"}`, "model", "model is required"},
		{"item without type or role", `{"model":"m","input":[{"content":"x"}]}`, "input[0].type", "needs a type"},
		{"bad role", `{"model":"m","input":[{"role":"robot","content":"x"}]}`, "input[0].role", "robot"},
		{"output_text from the user", `{"model":"m","input":[{"role":"user","content":[{"type":"output_text","text":"x"}]}]}`, "input[0].content[0].type", "not allowed"},
		{"input_text from the assistant", `{"model":"m","input":[{"role":"assistant","content":[{"type":"input_text","text":"x"}]}]}`, "input[0].content[0].type", "not allowed"},
		{"image without url", `{"model":"m","input":[{"role":"user","content":[{"type":"input_image"}]}]}`, "input[0].content[0]", "image_url or file_id"},
		{"image bad url", `{"model":"m","input":[{"role":"user","content":[{"type":"input_image","image_url":"ftp://x"}]}]}`, "input[0].content[0].image_url.url", "http(s)"},
		{"image bad detail", `{"model":"m","input":[{"role":"user","content":[{"type":"input_image","image_url":"https://x.invalid/a.png","detail":"huge"}]}]}`, "input[0].content[0].detail", "huge"},
		{"file without data", `{"model":"m","input":[{"role":"user","content":[{"type":"input_file","filename":"a.pdf"}]}]}`, "input[0].content[0]", "file_id, file_data or file_url"},
		{"call without call_id", `{"model":"m","input":[{"type":"function_call","name":"f","arguments":"{}"}]}`, "input[0]", "call_id, name and arguments"},
		{"output without call_id", `{"model":"m","input":[{"type":"function_call_output","output":"x"}]}`, "input[0].call_id", "call_id is required"},
		{"output of no call", `{"model":"m","input":[{"type":"function_call_output","call_id":"call_9","output":"x"}]}`, "input", "No tool call found for function call output with call_id call_9"},
		{"call without output", `{"model":"m","input":[{"role":"user","content":"x"},` + call + `]}`, "input", "No tool output found for function call call_1"},
		{"max_output_tokens below 16", `{"model":"m","input":"x","max_output_tokens":15}`, "max_output_tokens", ">= 16"},
		{"previous_response_id", `{"model":"m","input":"x","previous_response_id":"resp_1"}`, "previous_response_id", "not found"},
		{"conversation", `{"model":"m","input":"x","conversation":"conv_1"}`, "conversation", "stores no conversations"},
		{"instructions array", `{"model":"m","input":"x","instructions":["x"]}`, "instructions", "must be a string"},
		{"bad tool name", `{"model":"m","input":"x","tools":[{"type":"function","name":"a b"}]}`, "tools[0].name", "must match"},
		{"tool without type", `{"model":"m","input":"x","tools":[{"name":"a"}]}`, "tools[0].type", "required"},
		{"duplicate tools", `{"model":"m","input":"x","tools":[{"type":"function","name":"a"},{"type":"function","name":"a"}]}`, "tools", "unique"},
		{"bad parameters", `{"model":"m","input":"x","tools":[{"type":"function","name":"a","parameters":[1]}]}`, "tools[0].parameters", "JSON Schema object"},
		{"tool_choice of no tool", `{"model":"m","input":"x","tools":[{"type":"function","name":"a"}],"tool_choice":{"type":"function","name":"b"}}`, "tool_choice", `"b"`},
		{"tool_choice word", `{"model":"m","input":"x","tool_choice":"always"}`, "tool_choice", "always"},
		{"required without tools", `{"model":"m","input":"x","tool_choice":"required"}`, "tool_choice", "only allowed when tools"},
		{"json_schema without name", `{"model":"m","input":"x","text":{"format":{"type":"json_schema","schema":{"type":"object"}}}}`, "text.format.name", "name"},
		{"bad format", `{"model":"m","input":"x","text":{"format":{"type":"yaml"}}}`, "text.format.type", "yaml"},
		{"bad directive", `{"model":"m","input":"x\n@mock alpha:explode=1"}`, "messages", "unknown key"},
		{"directive tool not offered", `{"model":"m","input":"x\n@mock alpha:tool=nope"}`, "messages", "names no tool"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := newMock(t, Options{Flavor: Alpha})
			res, _ := respPost(t, m, []byte(tt.body), 400)
			var e openai.ErrorResponse
			mustUnmarshal(t, string(res.body), &e)
			if e.Error.Type != "invalid_request_error" || e.Error.Param == nil || *e.Error.Param != tt.param || !strings.Contains(e.Error.Message, tt.want) {
				t.Errorf("error %s: want param %q and a message with %q", res.body, tt.param, tt.want)
			}
		})
	}
}

// TestResponsesAuth: /v1/responses takes alpha's Bearer key.
func TestResponsesAuth(t *testing.T) {
	m := newMock(t, Options{Flavor: Alpha, RequireKey: "k1"})
	for _, tt := range []struct {
		hdr  map[string]string
		want int
	}{{nil, 401}, {map[string]string{"Authorization": "Bearer k2"}, 401}, {map[string]string{"x-api-key": "k1"}, 401}, {map[string]string{"Authorization": "Bearer k1"}, 200}} {
		if res := m.doAt(t, t.Context(), responsesPath, respBody(respText("x")), tt.hdr); res.resp.StatusCode != tt.want {
			t.Errorf("headers %v: %d, want %d", tt.hdr, res.resp.StatusCode, tt.want)
		}
	}
}

// TestResponsesItemsIgnored: items the mock does not model (reasoning,
// item_reference, hosted tool calls) change neither the answer nor the
// count.
func TestResponsesItemsIgnored(t *testing.T) {
	m := newMock(t, Options{Flavor: Alpha})
	_, plain := respPost(t, m, respBody(`[{"role":"user","content":"hi"}]`), 200)
	for i, item := range []string{
		`{"type":"reasoning","id":"rs_1","summary":[{"type":"summary_text","text":"thinking"}],"encrypted_content":"x"}`,
		`{"type":"item_reference","id":"msg_0"}`,
		`{"type":"web_search_call","id":"ws_1","status":"completed","action":{"type":"search","query":"q"}}`,
	} {
		_, r := respPost(t, m, respBody(`[`+item+`,{"role":"user","content":"hi"}]`), 200)
		if outputText(t, r) != outputText(t, plain) || r.Usage.InputTokens != plain.Usage.InputTokens {
			t.Errorf("item %d changed the answer: %q %d", i, outputText(t, r), r.Usage.InputTokens)
		}
	}
	// A custom tool call and its output are a call and a result.
	_, r := respPost(t, m, respBody(`[{"role":"user","content":"hi"},{"type":"custom_tool_call","call_id":"c1","name":"apply_patch","input":"*** Begin Patch"},`+
		`{"type":"custom_tool_call_output","call_id":"c1","output":"Success"}]`), 200)
	if got := outputText(t, r); got != "alpha/mdl says: tool result received: Success" || r.Usage.InputTokens != 1+3+1 {
		t.Errorf("custom tool loop: %q %d", got, r.Usage.InputTokens)
	}
}

// TestResponsesStreamSequenceAfterCut: sequence numbers stay consecutive up
// to a cut too (respEvents checks them).
func TestResponsesStreamSequenceAfterCut(t *testing.T) {
	m := newMock(t, Options{Flavor: Alpha})
	for _, n := range []int{0, 1, 3} {
		res, _ := respPost(t, m, respBody(respText("x\n@mock *:tool=get_time *:chunks=3 alpha:error_after="+strconv.Itoa(n)), `,"stream":true`, respTools), 200)
		evs := respEvents(t, res.body)
		if evs[len(evs)-1].name != openai.EventResponseFailed || len(evs) != 2+n+1 {
			t.Errorf("error_after=%d: %s", n, eventNames(evs))
		}
	}
}
