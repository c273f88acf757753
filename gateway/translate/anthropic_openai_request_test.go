package translate

import (
	"bytes"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/llmgw/llmgw/api/wire/openai"
)

const aoTestdata = "testdata/anthropic_openai"

// aoRequest translates body for the model "gpt-x".
func aoRequest(body []byte, stream bool) ([][]byte, error) {
	return Messages(ProtocolOpenAI).Request(&ChatRequest{Body: body, Stream: stream}, "gpt-x")
}

// TestAnthropicToOpenAIRequestGolden translates each request of
// testdata/anthropic_openai/request/<name>.json; the golden file is the
// chat-completions request, indented for reading (the request itself is
// compact).
func TestAnthropicToOpenAIRequestGolden(t *testing.T) {
	for _, tc := range []struct {
		name   string
		stream bool
	}{
		// Claude Code: system blocks with cache_control, thirteen tools (one
		// with defer_loading, as Claude Code 2.1.337 sends),
		// thinking adaptive, context_management, output_config.effort,
		// metadata, thinking blocks in the history, a system message inside
		// messages, max_tokens 128000, a stream.
		{"claude_code", true},
		// Parallel calls, their results (one an error of two text blocks)
		// before the user's text, a call without input, a result without
		// content; custom and strict tools; stop sequences, temperature.
		{"tool_conversation", false},
		{"consecutive_users", false},         // one turn in three user messages: the tool result first
		{"images", false},                    // base64 → data URL, url as it is; cache_control dropped
		{"tool_choice_any", false},           // required, parallel_tool_calls false
		{"tool_choice_tool", false},          // a named function; a tool without schema gets an empty one
		{"tool_choice_none", false},          //
		{"tool_choice_without_tools", false}, // nothing to choose: tool_choice and parallel left out
		{"json_schema", false},               // response_format json_schema named "output"; effort dropped
		{"dropped_hints", true},              // every hint dropped; neutral mcp_servers, container; empty system
		{"empty_turns", false},               // an empty user turn, an assistant turn of only thinking, an empty system message
	} {
		t.Run(tc.name, func(t *testing.T) {
			body := readFile(t, filepath.Join(aoTestdata, "request", tc.name+".json"))
			segs, err := aoRequest(body, tc.stream)
			if err != nil {
				t.Fatal(err)
			}
			got := bytes.Join(segs, nil)
			aoCheckToolPairs(t, aoCheckRequest(t, got, tc.stream))
			pretty := jsontext.Value(bytes.Clone(got))
			if err := pretty.Indent(); err != nil {
				t.Fatal(err)
			}
			golden(t, filepath.Join(aoTestdata, "request", tc.name+".golden.json"), append(pretty, '\n'))
		})
	}
}

// aoPartTypes are the content part types OpenAI takes in each role.
var aoPartTypes = map[string]map[string]bool{
	openai.RoleSystem: {openai.PartText: true},
	openai.RoleUser:   {openai.PartText: true, openai.PartImage: true},
	openai.RoleTool:   {openai.PartText: true},
}

// aoCheckRequest checks what every produced request must be: compact
// valid JSON that is a chat-completions request with nothing the wire
// type lacks, with the model; content parts OpenAI takes in their role;
// tool call arguments that are JSON objects; a stream that asks for usage.
func aoCheckRequest(t testing.TB, b []byte, stream bool) *openai.ChatCompletionRequest {
	t.Helper()
	if !jsontext.Value(b).IsValid() {
		t.Fatalf("invalid JSON: %s", b)
	}
	compact := jsontext.Value(bytes.Clone(b))
	if err := compact.Compact(); err != nil || !bytes.Equal(compact, b) {
		t.Fatalf("not compact: %s", b)
	}
	var r openai.ChatCompletionRequest
	if err := json.Unmarshal(b, &r, json.RejectUnknownMembers(true)); err != nil {
		t.Fatalf("not a chat-completions request: %v", err)
	}
	if r.Model != "gpt-x" {
		t.Fatalf("model %q", r.Model)
	}
	if stream != (r.Stream != nil && *r.Stream && r.StreamOptions != nil && r.StreamOptions.IncludeUsage != nil && *r.StreamOptions.IncludeUsage) {
		t.Fatalf("stream %v: stream %v, stream_options %v", stream, r.Stream, r.StreamOptions)
	}
	for i, m := range r.Messages {
		for _, c := range m.ToolCalls {
			if v := jsontext.Value(c.Function.Arguments); !v.IsValid() || v.Kind() != '{' {
				t.Fatalf("messages[%d] arguments %q", i, c.Function.Arguments)
			}
		}
		if m.Content.Kind() != '[' {
			continue
		}
		var parts []openai.ContentPart
		if err := json.Unmarshal(m.Content, &parts, json.RejectUnknownMembers(true)); err != nil {
			t.Fatalf("messages[%d].content: %v", i, err)
		}
		for _, p := range parts {
			if !aoPartTypes[m.Role][p.Type] {
				t.Fatalf("messages[%d] (%s) has a %s part", i, m.Role, p.Type)
			}
		}
	}
	return &r
}

// aoCheckToolPairs checks that every tool message comes right after the
// assistant message whose call it answers, and that every call is
// answered, as OpenAI requires (of a conversation whose Anthropic form
// pairs its calls and results, as the Anthropic API requires).
func aoCheckToolPairs(t testing.TB, r *openai.ChatCompletionRequest) {
	t.Helper()
	var open map[string]bool // the calls the last assistant message made, unanswered
	for i, m := range r.Messages {
		switch m.Role {
		case openai.RoleTool:
			if !open[m.ToolCallID] {
				t.Fatalf("messages[%d] answers %q, not an open call", i, m.ToolCallID)
			}
			delete(open, m.ToolCallID)
			continue
		case openai.RoleAssistant:
			if len(open) > 0 {
				t.Fatalf("messages[%d] follows calls left unanswered", i)
			}
			open = map[string]bool{}
			for _, c := range m.ToolCalls {
				open[c.ID] = true
			}
			continue
		}
		if len(open) > 0 {
			t.Fatalf("messages[%d] follows calls left unanswered", i)
		}
		open = nil
	}
}

// TestAnthropicToOpenAINotCarried: each parameter chat-completions cannot
// carry is refused by name, before anything is sent.
func TestAnthropicToOpenAINotCarried(t *testing.T) {
	body := func(extra string) []byte {
		return []byte(`{"model":"m","max_tokens":10,"messages":[{"role":"user","content":"hi"}]` + extra + `}`)
	}
	messages := func(msgs string) []byte { return []byte(`{"model":"m","max_tokens":10,"messages":` + msgs + `}`) }
	user := func(blocks string) []byte { return messages(`[{"role":"user","content":[` + blocks + `]}]`) }
	const tool = `,"tools":[{"name":"f","input_schema":{"type":"object"}}]`
	for _, tc := range []struct {
		name, param string
		body        []byte
	}{
		{"top_k", "top_k", body(`,"top_k":5`)},
		{"mcp_servers", "mcp_servers", body(`,"mcp_servers":[{"type":"url","url":"https://mcp.example.com/sse","name":"x"}]`)},
		{"container", "container", body(`,"container":"container_1"`)},
		{"unknown member", "inference_geo", body(`,"inference_geo":"us"`)},
		{"unknown member output_format", "output_format", body(`,"output_format":{"type":"json_schema","schema":{}}`)},
		{"web search tool", "tools[0].type", body(`,"tools":[{"type":"web_search_20250305","name":"web_search","max_uses":5}]`)},
		{"bash tool", "tools[1].type", body(`,"tools":[{"name":"f","input_schema":{"type":"object"}},{"type":"bash_20250124","name":"bash"}]`)},
		{"tool member", "tools[0].eager_input_streaming", body(`,"tools":[{"name":"f","input_schema":{"type":"object"},"eager_input_streaming":true}]`)},
		{"tool_choice type", "tool_choice.type", body(tool + `,"tool_choice":{"type":"some"}`)},
		{"output format type", "output_config.format.type", body(`,"output_config":{"format":{"type":"text"}}`)},
		{"output format without schema", "output_config.format.schema", body(`,"output_config":{"format":{"type":"json_schema"}}`)},
		{"output_config member", "output_config.task_budget", body(`,"output_config":{"task_budget":{"total":1}}`)},
		{"wrong type", "temperature", body(`,"temperature":"hot"`)},
		{"document block", "messages[0].content[1].type", user(`{"type":"text","text":"read"},{"type":"document","source":{"type":"text","media_type":"text/plain","data":"x"},"title":"t"}`)},
		{"search_result block", "messages[0].content[0].type", user(`{"type":"search_result","source":"https://example.com","title":"t","content":[{"type":"text","text":"x"}]}`)},
		{"server tool use in history", "messages[1].content[0].type", messages(`[{"role":"user","content":"hi"},{"role":"assistant","content":[{"type":"server_tool_use","id":"srvtoolu_1","name":"web_search","input":{"query":"x"}}]}]`)},
		{"unknown block", "messages[0].content[0].type", user(`{"type":"hologram"}`)},
		{"block without type", "messages[0].content[0].type", user(`{"text":"x"}`)},
		{"block member", "messages[0].content[0].colour", user(`{"type":"text","text":"x","colour":"red"}`)},
		{"file image", "messages[0].content[0].source.type", user(`{"type":"image","source":{"type":"file","file_id":"file_1"}}`)},
		{"image without source", "messages[0].content[0].source", user(`{"type":"image"}`)},
		{"image in a tool result", "messages[2].content[0].content[1].type", messages(`[{"role":"user","content":"shot"},` +
			`{"role":"assistant","content":[{"type":"tool_use","id":"t","name":"f","input":{}}]},` +
			`{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":[{"type":"text","text":"a"},{"type":"image","source":{"type":"url","url":"https://x/y.png"}}]}]}]`)},
		{"tool result without id", "messages[0].content[0].tool_use_id", user(`{"type":"tool_result","content":"x"}`)},
		{"tool_use in a user message", "messages[0].content[0].type", user(`{"type":"tool_use","id":"t","name":"f","input":{}}`)},
		{"tool_result in an assistant message", "messages[0].content[0].type", messages(`[{"role":"assistant","content":[{"type":"tool_result","tool_use_id":"t"}]}]`)},
		{"image in an assistant message", "messages[0].content[0].type", messages(`[{"role":"assistant","content":[{"type":"image","source":{"type":"url","url":"https://x/y.png"}}]}]`)},
		{"image in a system prompt", "system[0].type", body(`,"system":[{"type":"image","source":{"type":"url","url":"https://x/y.png"}}]`)},
		{"tool_use input not an object", "messages[0].content[0].input", messages(`[{"role":"assistant","content":[{"type":"tool_use","id":"t","name":"f","input":[1]}]}]`)},
		{"role", "messages[0].role", messages(`[{"role":"tool","content":"x"}]`)},
		{"content number", "messages[0].content", messages(`[{"role":"user","content":5}]`)},
		{"system number", "system", body(`,"system":5`)},
		{"not JSON", "", []byte(`{"model":`)},
		{"not an object", "", []byte(`[1]`)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			segs, err := aoRequest(tc.body, false)
			var nc *NotCarried
			if !errors.As(err, &nc) {
				t.Fatalf("got %s, %v; want a *NotCarried", bytes.Join(segs, nil), err)
			}
			if nc.Param != tc.param || nc.Reason == "" {
				t.Errorf("param %q reason %q, want param %q", nc.Param, nc.Reason, tc.param)
			}
		})
	}
}

// A large base64 image is sent from the caller's bytes, not copied: a
// request holds one copy of its images.
func TestAnthropicToOpenAIRequestSharesImages(t *testing.T) {
	data := strings.Repeat("iVBORw0KGgo", 100_000) // 1.1 MB
	small := strings.Repeat("R0lG", 10)
	escaped := strings.Repeat(`ab\/`, 2000) // written with escapes: not the bytes sent, which are encoded
	body := []byte(`{"model":"m","max_tokens":10,"messages":[{"role":"user","content":[` +
		`{"type":"image","source":{"type":"base64","media_type":"image/png","data":"` + data + `"}},` +
		`{"type":"image","source":{"type":"base64","media_type":"image/gif","data":"` + small + `"}},` +
		`{"type":"image","source":{"type":"base64","media_type":"image/webp","data":"` + escaped + `"}},` +
		`{"type":"text","text":"compare"}]}]}`)
	segs, err := aoRequest(body, false)
	if err != nil {
		t.Fatal(err)
	}
	got := bytes.Join(segs, nil)
	aoCheckRequest(t, got, false)
	if !bytes.Contains(got, []byte(`"url":"data:image/png;base64,`+data+`"`)) || !bytes.Contains(got, []byte(`"url":"data:image/gif;base64,`+small+`"`)) ||
		!bytes.Contains(got, []byte(`"url":"data:image/webp;base64,`+strings.ReplaceAll(escaped, `\/`, "/")+`"`)) {
		t.Fatal("the images are not the data URLs of the caller's data")
	}
	shared, written := 0, 0
	for _, s := range segs {
		if within(s, body) {
			shared += len(s)
		} else {
			written += len(s)
		}
	}
	if shared != len(data) || written > 512+len(escaped) {
		t.Errorf("%d B shared with the caller's body, %d B written; want the large image's %d B shared", shared, written, len(data))
	}
}
