package translate

import (
	"bytes"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/llmgw/llmgw/api/wire/anthropic"
	"github.com/llmgw/llmgw/api/wire/openai"
)

const rsRequestTestdata = "testdata/responses_request"

// rsPairs are the two translations, by the folder of their golden files.
var rsPairs = []struct {
	dir  string
	pair func() ChatPair
}{
	{"testdata/responses_openai", func() ChatPair { return Responses(ProtocolOpenAI, false) }},
	{"testdata/responses_anthropic", func() ChatPair { return Responses(ProtocolAnthropic, false) }},
}

// rsTranslate translates body with a new pair of dir's protocol for the
// model "m", and checks what every translated request must be.
func rsTranslate(t testing.TB, dir string, p ChatPair, body []byte, stream bool) ([]byte, error) {
	t.Helper()
	segs, err := p.Request(&ChatRequest{Body: body, Stream: stream}, "m")
	if err != nil {
		return nil, err
	}
	got := bytes.Join(segs, nil)
	if strings.HasSuffix(dir, "anthropic") {
		rsCheckAntRequest(t, got, stream)
	} else {
		rsCheckChatRequest(t, got, stream)
	}
	return got, nil
}

// rsCheckChatRequest checks a translated chat-completions request:
// compact JSON of the wire type (nothing it lacks), model m, content parts
// of the types OpenAI takes in each role, every tool message answering a
// call made before it, a stream asking for usage.
func rsCheckChatRequest(t testing.TB, b []byte, stream bool) {
	t.Helper()
	var r openai.ChatCompletionRequest
	if err := json.Unmarshal(b, &r, json.RejectUnknownMembers(true)); err != nil {
		t.Fatalf("not a chat-completions request: %v: %s", err, b)
	}
	if r.Model != "m" || len(r.Messages) == 0 {
		t.Fatalf("request %s", b)
	}
	if stream != (r.Stream != nil && *r.Stream) || stream != (r.StreamOptions != nil && *r.StreamOptions.IncludeUsage) {
		t.Fatalf("stream %v: %s", stream, b)
	}
	calls := map[string]bool{}
	for i, m := range r.Messages {
		if m.Content.Kind() == '[' {
			var parts []openai.ContentPart
			if err := json.Unmarshal(m.Content, &parts, json.RejectUnknownMembers(true)); err != nil {
				t.Fatalf("messages[%d] parts: %v", i, err)
			}
			for _, p := range parts {
				if p.Type == openai.PartImage && m.Role != openai.RoleUser || p.Type == openai.PartRefusal && m.Role != openai.RoleAssistant {
					t.Fatalf("messages[%d]: a %s part in a %s message", i, p.Type, m.Role)
				}
			}
		}
		for _, c := range m.ToolCalls {
			calls[c.ID] = true
		}
		if m.Role == openai.RoleTool && !calls[m.ToolCallID] {
			t.Fatalf("messages[%d] answers %q, which no call before it made", i, m.ToolCallID)
		}
	}
}

// rsCheckAntRequest checks a translated Messages request: compact JSON of
// the wire type, model m, max_tokens set, turns alternating, every
// tool_result answering a tool_use of the turn before it, no empty text
// block.
func rsCheckAntRequest(t testing.TB, b []byte, stream bool) {
	t.Helper()
	var r anthropic.MessagesRequest
	if err := json.Unmarshal(b, &r, json.RejectUnknownMembers(true)); err != nil {
		t.Fatalf("not a Messages request: %v: %s", err, b)
	}
	if r.Model != "m" || r.MaxTokens == nil || r.Stream != stream || len(r.Messages) == 0 {
		t.Fatalf("request %s", b)
	}
	prev := map[string]bool{}
	for i, m := range r.Messages {
		if i > 0 && m.Role == r.Messages[i-1].Role {
			t.Fatalf("messages[%d]: two %s turns in a row", i, m.Role)
		}
		var blocks []anthropic.ContentBlock
		if m.Content.Kind() == '[' {
			if err := json.Unmarshal(m.Content, &blocks, json.RejectUnknownMembers(true)); err != nil {
				t.Fatalf("messages[%d] blocks: %v", i, err)
			}
		}
		uses := map[string]bool{}
		for _, bl := range blocks {
			switch bl.Type {
			case anthropic.BlockText:
				if bl.TextOf() == "" {
					t.Fatalf("messages[%d]: an empty text block", i)
				}
			case anthropic.BlockToolUse:
				if bl.Input.Kind() != '{' {
					t.Fatalf("messages[%d]: tool_use input %s", i, bl.Input)
				}
				uses[bl.ID] = true
			case anthropic.BlockToolResult:
				if !prev[bl.ToolUseID] {
					t.Fatalf("messages[%d]: a tool_result for %q, which the turn before did not call", i, bl.ToolUseID)
				}
			}
		}
		prev = uses
	}
}

// TestResponsesRequestGolden translates each request of
// testdata/responses_request/<name>.json with both translations; the
// golden files (testdata/responses_{openai,anthropic}/request/<name>.golden.json)
// are the provider's request, indented for reading.
func TestResponsesRequestGolden(t *testing.T) {
	for _, tc := range []struct {
		name   string
		stream bool
	}{
		// Codex: instructions, developer and user messages, reasoning
		// items with encrypted_content (dropped), exec_command's call and
		// output, an assistant message, an apply_patch custom tool call and
		// its output; function tools and the apply_patch grammar tool;
		// tool_choice auto, parallel_tool_calls false, reasoning, store
		// false, include, prompt_cache_key, text.verbosity; a stream.
		{"codex", true},
		// Two parallel calls, their outputs (one of parts), the answer, a
		// follow-up, a call without arguments and an empty output; a named
		// tool_choice, strict, a tool without parameters, temperature
		// above Anthropic's range, top_p, max_output_tokens.
		{"tool_conversation", false},
		// A system message, a base64 image and a URL one (detail low and
		// original), text.format json_schema.
		{"images", false},
		// Every dropped member, each set to something: the request carries
		// none of them.
		{"dropped_hints", true},
	} {
		body := readFile(t, filepath.Join(rsRequestTestdata, tc.name+".json"))
		for _, pp := range rsPairs {
			t.Run(filepath.Base(pp.dir)+"/"+tc.name, func(t *testing.T) {
				got, err := rsTranslate(t, pp.dir, pp.pair(), body, tc.stream)
				if err != nil {
					t.Fatal(err)
				}
				pretty := jsontext.Value(bytes.Clone(got))
				if err := pretty.Indent(); err != nil {
					t.Fatal(err)
				}
				golden(t, filepath.Join(pp.dir, "request", tc.name+".golden.json"), append(pretty, '\n'))
			})
		}
	}
}

// TestResponsesCodexCustomTool: the apply_patch grammar tool becomes a
// function of one required string, input, whose description holds the
// grammar; its call in the history has that input as its arguments.
func TestResponsesCodexCustomTool(t *testing.T) {
	body := readFile(t, filepath.Join(rsRequestTestdata, "codex.json"))
	segs, err := Responses(ProtocolOpenAI, false).Request(&ChatRequest{Body: body, Stream: true}, "m")
	if err != nil {
		t.Fatal(err)
	}
	var r openai.ChatCompletionRequest
	if err := json.Unmarshal(bytes.Join(segs, nil), &r); err != nil {
		t.Fatal(err)
	}
	var schema struct {
		Properties struct {
			Input struct{ Type, Description string }
		}
		Required             []string
		AdditionalProperties bool
	}
	found := false
	for _, tl := range r.Tools {
		if tl.Function.Name != "apply_patch" {
			continue
		}
		found = true
		if err := json.Unmarshal(tl.Function.Parameters, &schema, json.MatchCaseInsensitiveNames(true)); err != nil {
			t.Fatal(err)
		}
	}
	if !found || schema.Properties.Input.Type != "string" || len(schema.Required) != 1 || schema.Required[0] != "input" || schema.AdditionalProperties ||
		!strings.Contains(schema.Properties.Input.Description, "lark grammar:\nstart: begin_patch hunk+ end_patch") {
		t.Fatalf("apply_patch %v %+v", found, schema)
	}
	var call *openai.ToolCall
	for i := range r.Messages {
		for j := range r.Messages[i].ToolCalls {
			if c := &r.Messages[i].ToolCalls[j]; c.Function.Name == "apply_patch" {
				call = c
			}
		}
	}
	var args struct{ Input string }
	if call == nil || json.Unmarshal([]byte(call.Function.Arguments), &args, json.MatchCaseInsensitiveNames(true)) != nil ||
		!strings.HasPrefix(args.Input, "*** Begin Patch\n*** Update File: lexer/lexer.go") {
		t.Fatalf("apply_patch call %+v", call)
	}
}

// rsBody is a minimal request with extra top-level members (each starting
// with a comma).
func rsBody(extra string) []byte {
	return []byte(`{"model":"gpt-x","input":"hi"` + extra + `}`)
}

// rsInputBody is a request with input items.
func rsInputBody(items string) []byte {
	return []byte(`{"model":"gpt-x","input":` + items + `}`)
}

// TestResponsesNotCarried: each request is refused by both translations
// (or by the one named), naming the parameter.
// TestResponsesLeftOutTools: OpenAI's hosted tools and namespaces are left
// out of a translated request (Codex offers web_search and a namespace
// with every request), the function tools beside them kept; a tool_choice
// naming a hosted tool is still refused (TestResponsesNotCarried).
func TestResponsesLeftOutTools(t *testing.T) {
	for _, tools := range []string{
		`{"type":"web_search","external_web_access":false}`,
		`{"type":"web_search_preview"}`,
		`{"type":"file_search","vector_store_ids":["vs_1"]}`,
		`{"type":"computer_use_preview","display_width":1024,"display_height":768,"environment":"browser"}`,
		`{"type":"code_interpreter","container":{"type":"auto"}}`,
		`{"type":"image_generation"}`,
		`{"type":"namespace","name":"ns","description":"d","tools":[{"type":"function","name":"g","parameters":{"type":"object"}}]}`,
	} {
		body := rsBody(`,"tools":[{"type":"function","name":"keep_me","parameters":{"type":"object"}},` + tools + `]`)
		for _, pp := range rsPairs {
			proto := strings.TrimPrefix(filepath.Base(pp.dir), "responses_")
			t.Run(proto+"/"+tools, func(t *testing.T) {
				segs, err := pp.pair().Request(&ChatRequest{Body: body}, "m")
				if err != nil {
					t.Fatal(err)
				}
				out := string(bytes.Join(segs, nil))
				if strings.Count(out, `"name":"`) != 1 || !strings.Contains(out, `"name":"keep_me"`) {
					t.Fatalf("translated tools: %s", out)
				}
			})
		}
	}
}

func TestResponsesNotCarried(t *testing.T) {
	for _, tc := range []struct {
		name  string
		body  []byte
		only  string // "openai" or "anthropic": refused by that one only
		param string
	}{
		{"previous_response_id", rsBody(`,"previous_response_id":"resp_1"`), "", "previous_response_id"},
		{"conversation id", rsBody(`,"conversation":"conv_1"`), "", "conversation"},
		{"conversation object", rsBody(`,"conversation":{"id":"conv_1"}`), "", "conversation"},
		{"background", rsBody(`,"background":true`), "", "background"},
		{"truncation auto", rsBody(`,"truncation":"auto"`), "", "truncation"},
		{"prompt", rsBody(`,"prompt":{"id":"pmpt_1","version":"2"}`), "", "prompt"},
		{"top_logprobs", rsBody(`,"top_logprobs":3`), "", "top_logprobs"},
		{"unknown member", rsBody(`,"frobnicate":1`), "", "frobnicate"},
		{"unknown nested member", rsBody(`,"reasoning":{"effort":"low","budget":3}`), "", "reasoning.budget"},
		{"instructions not a string", rsBody(`,"instructions":[{"role":"system","content":"x"}]`), "", "instructions"},
		{"mcp tool", rsBody(`,"tools":[{"type":"mcp","server_label":"x","server_url":"https://x.invalid"}]`), "", "tools[0].type"},
		{"local_shell tool", rsBody(`,"tools":[{"type":"local_shell"}]`), "", "tools[0].type"},
		{"unknown function member", rsBody(`,"tools":[{"type":"function","name":"f","defer_loading":true}]`), "", "tools[0].defer_loading"},
		{"custom format type", rsBody(`,"tools":[{"type":"custom","name":"c","format":{"type":"regexish"}}]`), "", "tools[0].format.type"},
		{"tool_choice allowed_tools", rsBody(`,"tools":[{"type":"function","name":"f"}],"tool_choice":{"type":"allowed_tools","mode":"auto","tools":[{"type":"function","name":"f"}]}`), "", "tool_choice.type"},
		{"tool_choice hosted", rsBody(`,"tools":[{"type":"function","name":"f"}],"tool_choice":{"type":"web_search_preview"}`), "", "tool_choice.type"},
		{"tool_choice unknown", rsBody(`,"tool_choice":"sometimes"`), "", "tool_choice"},
		{"format type", rsBody(`,"text":{"format":{"type":"xml"}}`), "", "text.format.type"},
		{"format without schema", rsBody(`,"text":{"format":{"type":"json_schema","name":"s"}}`), "", "text.format.schema"},
		{"json_object to Anthropic", rsBody(`,"text":{"format":{"type":"json_object"}}`), "anthropic", "text.format.type"},
		{"item_reference", rsInputBody(`[{"role":"user","content":"a"},{"type":"item_reference","id":"msg_1"}]`), "", "input[1]"},
		{"web_search_call item", rsInputBody(`[{"type":"web_search_call","id":"ws_1","status":"completed","action":{"type":"search","query":"q"}}]`), "", "input[0].type"},
		{"local_shell_call item", rsInputBody(`[{"type":"local_shell_call","id":"ls_1","call_id":"c","status":"completed","action":{"type":"exec","command":["ls"]}}]`), "", "input[0].type"},
		{"input_file", rsInputBody(`[{"role":"user","content":[{"type":"input_file","file_id":"file_1"}]}]`), "", "input[0].content[0].type"},
		{"image by file_id", rsInputBody(`[{"role":"user","content":[{"type":"input_image","file_id":"file_1"}]}]`), "", "input[0].content[0].file_id"},
		{"unknown part member", rsInputBody(`[{"role":"user","content":[{"type":"input_text","text":"a","cache_control":{}}]}]`), "", "input[0].content[0].cache_control"},
		{"unknown role", rsInputBody(`[{"role":"critic","content":"a"}]`), "", "input[0].role"},
		{"item without type or role", rsInputBody(`[{"content":"a"}]`), "", "input[0].type"},
		{"call without call_id", rsInputBody(`[{"type":"function_call","name":"f","arguments":"{}"}]`), "", "input[0]"},
		{"output without call_id", rsInputBody(`[{"type":"function_call_output","output":"x"}]`), "", "input[0].call_id"},
		{"input of another type", rsInputBody(`7`), "", "input"},
		{"image in a system message", rsInputBody(`[{"role":"system","content":[{"type":"input_image","image_url":"https://x.invalid/a.png"}]},{"role":"user","content":"a"}]`), "", "input[0].content[0]"},
		{"image in a tool output to chat", rsInputBody(`[{"type":"function_call","call_id":"c","name":"f","arguments":"{}"},{"type":"function_call_output","call_id":"c","output":[{"type":"input_image","image_url":"https://x.invalid/a.png"}]}]`), "openai", "input[1].output[0]"},
		{"image type to Anthropic", rsInputBody(`[{"role":"user","content":[{"type":"input_image","image_url":"data:image/bmp;base64,Qk0="}]}]`), "anthropic", "input[0].content[0].image_url"},
		{"image URL scheme to Anthropic", rsInputBody(`[{"role":"user","content":[{"type":"input_image","image_url":"ftp://x.invalid/a.png"}]}]`), "anthropic", "input[0].content[0].image_url"},
		{"arguments not an object to Anthropic", rsInputBody(`[{"type":"function_call","call_id":"c","name":"f","arguments":"[1]"},{"type":"function_call_output","call_id":"c","output":"x"}]`), "anthropic", "input[0].arguments"},
		{"only system to Anthropic", rsInputBody(`[{"role":"developer","content":"a"}]`), "anthropic", "input"},
	} {
		for _, pp := range rsPairs {
			proto := strings.TrimPrefix(filepath.Base(pp.dir), "responses_")
			t.Run(proto+"/"+tc.name, func(t *testing.T) {
				_, err := rsTranslate(t, pp.dir, pp.pair(), tc.body, false)
				if tc.only != "" && tc.only != proto {
					if err != nil {
						t.Fatalf("refused by %s: %v", proto, err)
					}
					return
				}
				var nc *NotCarried
				if !errors.As(err, &nc) || nc.Param != tc.param || nc.Reason == "" {
					t.Fatalf("error %v, want a *NotCarried of %s", err, tc.param)
				}
			})
		}
	}
}

// TestResponsesDroppedMembers: a request with a dropped member set
// translates to the same request as one without it.
func TestResponsesDroppedMembers(t *testing.T) {
	for _, extra := range []string{
		`,"store":true`, `,"reasoning":{"effort":"high","summary":"detailed"}`, `,"include":["reasoning.encrypted_content","message.output_text.logprobs"]`,
		`,"prompt_cache_key":"k"`, `,"prompt_cache_retention":"24h"`, `,"safety_identifier":"s"`, `,"user":"u"`, `,"metadata":{"a":"b"}`,
		`,"client_metadata":{"thread_id":"t"}`, `,"service_tier":"flex"`, `,"truncation":"disabled"`, `,"text":{"verbosity":"low"}`,
		`,"stream_options":{"include_obfuscation":false}`, `,"max_tool_calls":2`, `,"parallel_tool_calls":true`, `,"background":false`,
		`,"top_logprobs":0`, `,"previous_response_id":null`, `,"conversation":null`, `,"prompt":null`, `,"text":{"format":{"type":"text"}}`,
		`,"input":[{"type":"reasoning","id":"rs_1","summary":[{"type":"summary_text","text":"s"}],"encrypted_content":"e"},{"role":"user","content":"hi"}]`,
	} {
		for _, pp := range rsPairs {
			t.Run(filepath.Base(pp.dir)+"/"+extra[1:], func(t *testing.T) {
				want, err := rsTranslate(t, pp.dir, pp.pair(), rsBody(""), false)
				if err != nil {
					t.Fatal(err)
				}
				body := rsBody(extra)
				if strings.HasPrefix(extra, `,"input"`) {
					body = []byte(`{"model":"gpt-x"` + extra + `}`)
				}
				got, err := rsTranslate(t, pp.dir, pp.pair(), body, false)
				if err != nil || !bytes.Equal(got, want) {
					t.Fatalf("got %s (%v), want %s", got, err, want)
				}
			})
		}
	}
}

// TestResponsesToolChoice: tool_choice and parallel_tool_calls false as
// each protocol has them; without tools, neither.
func TestResponsesToolChoice(t *testing.T) {
	const tools = `,"tools":[{"type":"function","name":"f"},{"type":"custom","name":"patch"}]`
	for _, tc := range []struct {
		extra, chat, ant string
	}{
		{tools + `,"tool_choice":"auto"`, `"tool_choice":"auto"`, `"tool_choice":{"type":"auto"}`},
		{tools + `,"tool_choice":"required","parallel_tool_calls":false`, `"tool_choice":"required","parallel_tool_calls":false`, `"tool_choice":{"type":"any","disable_parallel_tool_use":true}`},
		{tools + `,"tool_choice":"none","parallel_tool_calls":false`, `"tool_choice":"none","parallel_tool_calls":false`, `"tool_choice":{"type":"none"}`},
		{tools + `,"parallel_tool_calls":false`, `"parallel_tool_calls":false`, `"tool_choice":{"type":"auto","disable_parallel_tool_use":true}`},
		{tools + `,"tool_choice":{"type":"function","name":"f"}`, `"tool_choice":{"type":"function","function":{"name":"f"}}`, `"tool_choice":{"type":"tool","name":"f"}`},
		{tools + `,"tool_choice":{"type":"custom","name":"patch"}`, `"tool_choice":{"type":"function","function":{"name":"patch"}}`, `"tool_choice":{"type":"tool","name":"patch"}`},
		{`,"tool_choice":"required","parallel_tool_calls":false`, ``, ``},
	} {
		t.Run(tc.extra, func(t *testing.T) {
			for i, want := range []string{tc.chat, tc.ant} {
				got, err := rsTranslate(t, rsPairs[i].dir, rsPairs[i].pair(), rsBody(tc.extra), false)
				if err != nil {
					t.Fatal(err)
				}
				hasChoice := bytes.Contains(got, []byte(`"tool_choice"`)) || bytes.Contains(got, []byte(`"parallel_tool_calls"`))
				if want == "" && hasChoice || want != "" && !bytes.Contains(got, []byte(want)) {
					t.Errorf("%s: got %s, want %s", rsPairs[i].dir, got, want)
				}
			}
		})
	}
}

// TestResponsesJSONObjectToChat: json_object has an equivalent in
// chat-completions.
func TestResponsesJSONObjectToChat(t *testing.T) {
	got, err := rsTranslate(t, rsPairs[0].dir, rsPairs[0].pair(), rsBody(`,"text":{"format":{"type":"json_object"}}`), false)
	if err != nil || !bytes.Contains(got, []byte(`"response_format":{"type":"json_object"}`)) {
		t.Fatalf("%s %v", got, err)
	}
}
