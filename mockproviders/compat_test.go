package mockproviders

import (
	"strings"
	"testing"
)

// claudeCodeRequest is shaped like what a current Claude Code client sends:
// cached system blocks, adaptive thinking, custom, server and Anthropic-
// defined tools with cache_control, metadata, context_management,
// output_config, an earlier turn with thinking, text and tool_use, and the
// tool result last.
const claudeCodeRequest = `{
  "model": "claude-sonnet-4-5",
  "max_tokens": 32000,
  "system": [
    {"type": "text", "text": "You are Claude Code, Anthropic's official CLI for Claude.", "cache_control": {"type": "ephemeral"}},
    {"type": "text", "text": "You are an interactive CLI tool that helps users with software engineering tasks.", "cache_control": {"type": "ephemeral", "ttl": "1h"}}
  ],
  "messages": [
    {"role": "user", "content": [
      {"type": "text", "text": "<system-reminder>context</system-reminder>"},
      {"type": "text", "text": "fix the bug in main.go", "cache_control": {"type": "ephemeral"}}
    ]},
    {"role": "assistant", "content": [
      {"type": "thinking", "thinking": "I should read the file first.", "signature": "c2lnbmF0dXJl"},
      {"type": "redacted_thinking", "data": "b3BhcXVl"},
      {"type": "text", "text": "I'll read the file."},
      {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {"query": "go main"}},
      {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1", "content": [{"type": "web_search_result", "url": "https://go.dev", "title": "Go", "encrypted_content": "x"}]},
      {"type": "tool_use", "id": "toolu_01", "name": "Read", "input": {"file_path": "/src/main.go"}, "cache_control": {"type": "ephemeral"}}
    ]},
    {"role": "user", "content": [
      {"type": "tool_result", "tool_use_id": "toolu_01", "content": "package main\n\nfunc main() {}", "cache_control": {"type": "ephemeral"}},
      {"type": "text", "text": "<system-reminder>todo list is empty</system-reminder>"}
    ]}
  ],
  "tools": [
    {"name": "Read", "description": "Reads a file", "input_schema": {"$schema": "http://json-schema.org/draft-07/schema#", "type": "object",
      "properties": {"file_path": {"type": "string"}, "offset": {"type": "number"}}, "required": ["file_path"], "additionalProperties": false}},
    {"name": "Bash", "description": "Runs a command", "input_schema": {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]},
      "cache_control": {"type": "ephemeral"}},
    {"name": "mcp__ide__getDiagnostics", "description": "diagnostics", "input_schema": {"type": "object", "properties": {}}},
    {"type": "web_search_20250305", "name": "web_search", "max_uses": 5, "allowed_domains": ["go.dev"]},
    {"type": "text_editor_20250728", "name": "str_replace_based_edit_tool", "max_characters": 10000},
    {"type": "bash_20250124", "name": "bash"}
  ],
  "tool_choice": {"type": "auto", "disable_parallel_tool_use": false},
  "metadata": {"user_id": "user_abc_account_1_session_2"},
  "thinking": {"type": "adaptive"},
  "context_management": {"edits": [{"type": "clear_tool_uses_20250919", "trigger": {"type": "input_tokens", "value": 100000}}]},
  "output_config": {"effort": "high"},
  "service_tier": "auto",
  "temperature": 1,
  "top_p": 0.99,
  "top_k": 40,
  "stop_sequences": ["\n\nHuman:"],
  "mcp_servers": [{"type": "url", "url": "https://mcp.example.invalid/sse", "name": "x"}],
  "container": "container_1",
  "inference_geo": "us"
  STREAM
}`

func TestBetaAcceptsClaudeCodeRequest(t *testing.T) {
	for _, stream := range []bool{false, true} {
		m := newMock(t, Options{Flavor: Beta})
		body := strings.Replace(claudeCodeRequest, "STREAM", map[bool]string{false: "", true: `, "stream": true`}[stream], 1)
		res := m.do(t, t.Context(), []byte(body), map[string]string{"anthropic-beta": "context-management-2025-06-27,interleaved-thinking-2025-05-14"})
		if res.resp.StatusCode != 200 {
			t.Fatalf("stream=%v: %d %s", stream, res.resp.StatusCode, res.body)
		}
		text := ""
		if stream {
			evs := parseSSE(t, res.body)
			if streamEnd(Beta, evs) != "done" {
				t.Fatalf("stream did not end: %s", res.body)
			}
			text = strings.Join(contentPieces(t, Beta, evs), "")
		} else {
			text = decodeAnswer(t, Beta, res.body).text
		}
		if want := "beta/claude-sonnet-4-5 says: tool result received: package main func main() {}"; text != want {
			t.Errorf("stream=%v: text %q, want %q", stream, text, want)
		}
		c := m.settled(t)
		if _, ok := c.TokensByUser["user_abc_account_1_session_2"]; !ok {
			t.Errorf("metadata.user_id not used: %+v", c.TokensByUser)
		}
	}
	// The same client with a directive in its last turn gets a call of its
	// first custom tool, with arguments from its schema.
	m := newMock(t, Options{Flavor: Beta})
	body := strings.Replace(claudeCodeRequest, "todo list is empty</system-reminder>", `todo list is empty</system-reminder>\n@mock beta:tool=first`, 1)
	body = strings.Replace(body, "STREAM", "", 1)
	res := m.do(t, t.Context(), []byte(body), nil)
	if res.resp.StatusCode != 200 {
		t.Fatalf("%d %s", res.resp.StatusCode, res.body)
	}
	c := decodeCall(t, Beta, res.body)
	if c.name != "Read" || c.args != `{"file_path":"x"}` {
		t.Fatalf("call %+v", c)
	}
}

// TestAlphaAcceptsDocumentedMembers: members the mock does not implement
// are accepted (and ignored), not refused.
func TestAlphaAcceptsDocumentedMembers(t *testing.T) {
	body := `{"model":"gpt-x","messages":[{"role":"developer","content":"be brief","name":"ops"},{"role":"user","content":"hi","name":"u"}],
	  "seed":7,"logprobs":true,"top_logprobs":2,"n":1,"presence_penalty":0.5,"frequency_penalty":-0.5,"logit_bias":{"50256":-100},
	  "metadata":{"team":"a"},"store":false,"reasoning_effort":"low","parallel_tool_calls":false,
	  "prediction":{"type":"content","content":"hello"},"modalities":["text"],"service_tier":"auto","verbosity":"low",
	  "web_search_options":{"search_context_size":"low"},"prompt_cache_key":"k","safety_identifier":"s","user":"u-1",
	  "temperature":0.2,"top_p":0.9,"max_completion_tokens":100,
	  "functions":[{"name":"f","parameters":{"type":"object"}}],"function_call":"auto",
	  "tools":[{"type":"function","function":{"name":"f","strict":true,"parameters":{"type":"object","properties":{}}}}],"tool_choice":"auto"}`
	m := newMock(t, Options{Flavor: Alpha})
	res := m.do(t, t.Context(), []byte(body), nil)
	if res.resp.StatusCode != 200 {
		t.Fatalf("%d %s", res.resp.StatusCode, res.body)
	}
	if a := decodeAnswer(t, Alpha, res.body); !strings.HasPrefix(a.text, "alpha/gpt-x says: ") || a.in != 3 {
		t.Fatalf("answer %+v", a)
	}
}

func TestBetaRequestErrors(t *testing.T) {
	msgs := `,"messages":[{"role":"user","content":"q"}]`
	tests := []struct {
		name, extra, want string
	}{
		{"thinking budget too small", `,"thinking":{"type":"enabled","budget_tokens":100}`, "at least 1024"},
		{"thinking enabled without budget", `,"thinking":{"type":"enabled"}`, "at least 1024"},
		{"thinking unknown type", `,"thinking":{"type":"on"}`, `"on" is not one of enabled, adaptive, disabled`},
		{"thinking not an object", `,"thinking":"adaptive"`, "thinking: must be an object"},
		{"system image block", `,"system":[{"type":"image","source":{"type":"url","url":"https://a/b"}}]`, "system.0"},
		{"system text block without text", `,"system":[{"type":"text"}]`, "system.0"},
		{"system a number", `,"system":5`, "string or an array"},
		{"text block without text", `,"messages":[{"role":"user","content":[{"type":"text"}]}]`, "messages.0.content.0.text: field required"},
		{"metadata not an object", `,"metadata":"u"`, "invalid JSON"},
		{"top_k a string", `,"top_k":"40"`, "invalid JSON"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := newMock(t, Options{Flavor: Beta})
			extra := tt.extra
			if !strings.Contains(extra, `"messages"`) {
				extra += msgs
			}
			res := m.do(t, t.Context(), []byte(`{"model":"m","max_tokens":2000`+extra+`}`), nil)
			if res.resp.StatusCode != 400 {
				t.Fatalf("%d %s", res.resp.StatusCode, res.body)
			}
			if typ, _, msg := errorType(t, Beta, res.body); typ != "invalid_request_error" || !strings.Contains(msg, tt.want) {
				t.Fatalf("error %q %q, want %q", typ, msg, tt.want)
			}
		})
	}
	// The valid thinking forms pass.
	for _, th := range []string{`{"type":"enabled","budget_tokens":1024}`, `{"type":"adaptive"}`, `{"type":"disabled"}`, `null`} {
		m := newMock(t, Options{Flavor: Beta})
		if res := m.do(t, t.Context(), []byte(`{"model":"m","max_tokens":2000,"thinking":`+th+msgs+`}`), nil); res.resp.StatusCode != 200 {
			t.Errorf("thinking %s: %d %s", th, res.resp.StatusCode, res.body)
		}
	}
}
