package mockproviders

import (
	"net/http"
	"strconv"
	"strings"
	"testing"

	jsonv2 "github.com/go-json-experiment/json"

	"github.com/llmgw/llmgw/api/wire/anthropic"
)

// claudeCode21Request is shaped like the first request of Claude Code
// 2.1.x: the user turn (a system reminder, then the prompt with its
// directive), then per-turn system text as a message of role system
// (the per-turn-control beta), cached system blocks, adaptive thinking
// with display omitted, a deferred tool, metadata.user_id holding JSON,
// context_management and output_config.effort.
const claudeCode21Request = `{"model":"claude-opus-5-5","max_tokens":128000,"stream":STREAM,
 "messages":[
  {"role":"user","content":[{"type":"text","text":"<system-reminder>\nAttribution.\n</system-reminder>\n"},
    {"type":"text","text":"Write the marker.\n@mock *:tool=Bash *:args={\"command\": \"echo ok\", \"description\": \"Write\"}"}]},
  {"role":"system","content":[{"type":"text","text":"# Environment\nPrimary working directory: /w","cache_control":{"type":"ephemeral"}}]}],
 "system":[{"type":"text","text":"x-anthropic-billing-header: cc_version=2.1.337;"},
  {"type":"text","text":"You are Claude Code.","cache_control":{"type":"ephemeral","ttl":"1h"}}],
 "tools":[{"name":"Bash","description":"Runs a command","input_schema":{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object",
    "properties":{"command":{"type":"string"},"description":{"type":"string"}},"required":["command"]}},
  {"name":"DeferredToolPlaceholder","description":"deferred","input_schema":{"type":"object","properties":{}},"defer_loading":true}],
 "metadata":{"user_id":"{\"device_id\":\"d\",\"session_id\":\"s\"}"},
 "thinking":{"type":"adaptive","display":"omitted"},
 "context_management":{"edits":[{"type":"clear_thinking_20251015","keep":"all"}]},
 "output_config":{"effort":"medium"}}`

// TestClaudeCode21Loop runs the loop Claude Code runs: the first request
// gets the directive's tool_use (to /v1/messages?beta=true with its
// headers); the second, whose last user turn holds the tool_result (and
// where the system message comes after it), gets text that repeats the
// result — the first turn's directive is not in the last turn any more, so
// it does not ask for the call again — and /mock/calls has the result.
func TestClaudeCode21Loop(t *testing.T) {
	hdr := map[string]string{"anthropic-version": "2023-06-01", "x-api-key": "k",
		"anthropic-beta": "claude-code-20250219,interleaved-thinking-2025-05-14,context-management-2025-06-27,per-turn-control-2026-07-01,effort-2025-11-24"}
	for _, stream := range []bool{false, true} {
		t.Run("stream="+strconv.FormatBool(stream), func(t *testing.T) {
			m := newMock(t, Options{Flavor: Beta, RequireKey: "k"})
			body := strings.Replace(claudeCode21Request, "STREAM", strconv.FormatBool(stream), 1)
			res := m.doAt(t, t.Context(), "/v1/messages?beta=true", []byte(body), hdr)
			if res.resp.StatusCode != 200 {
				t.Fatalf("turn 1: %d %s", res.resp.StatusCode, res.body)
			}
			if stream && (streamEnd(Beta, parseSSE(t, res.body)) != "done" || !strings.Contains(string(res.body), `"type":"tool_use"`)) {
				t.Fatalf("turn 1 stream: %s", res.body)
			}
			// The same request without stream names the call's id.
			first := decodeCall(t, Beta, m.do(t, t.Context(), []byte(strings.Replace(claudeCode21Request, "STREAM", "false", 1)), hdr).body)
			if first.name != "Bash" || first.args != `{"command":"echo ok","description":"Write"}` {
				t.Fatalf("turn 1: %+v", first)
			}
			second := strings.Replace(body, `{"role":"system"`, `{"role":"assistant","content":[{"type":"tool_use","id":"`+first.id+`","name":"Bash","input":{"command":"echo ok"}}]},`+
				`{"role":"user","content":[{"type":"tool_result","tool_use_id":"`+first.id+`","content":"ok","is_error":false,"cache_control":{"type":"ephemeral"}}]},`+
				`{"role":"system"`, 1)
			res = m.doAt(t, t.Context(), "/v1/messages?beta=true", []byte(second), hdr)
			if res.resp.StatusCode != 200 {
				t.Fatalf("turn 2: %d %s", res.resp.StatusCode, res.body)
			}
			text := ""
			if stream {
				text = strings.Join(contentPieces(t, Beta, parseSSE(t, res.body)), "")
			} else {
				text = decodeAnswer(t, Beta, res.body).text
			}
			if text != "beta/claude-opus-5-5 says: tool result received: ok" {
				t.Errorf("turn 2 text %q", text)
			}
			c := m.calls(t)
			want := []ToolResult{{Path: "/v1/messages", CallID: first.id, Content: "ok"}}
			if string(mustMarshal(c.ToolResults)) != string(mustMarshal(want)) {
				t.Errorf("tool_results %+v, want %+v", c.ToolResults, want)
			}
		})
	}
}

// TestBetaSystemMessages: a message of role system is system text, in
// order after the system member: the answer and the count are those of the
// same text in the system member, and it is not the turn directives are
// read from.
func TestBetaSystemMessages(t *testing.T) {
	tests := []struct {
		name, system, messages string
		equiv                  string // the same request with the text in system
	}{
		{"string after the user turn", "", `[{"role":"user","content":"Hi"},{"role":"system","content":"Be terse."}]`,
			`"system":"Be terse.","messages":[{"role":"user","content":"Hi"}]`},
		{"blocks after the system member", `"system":[{"type":"text","text":"A."}],`,
			`[{"role":"system","content":[{"type":"text","text":"B c.","cache_control":{"type":"ephemeral"}}]},{"role":"user","content":"Hi"}]`,
			`"system":[{"type":"text","text":"A."},{"type":"text","text":"B c."}],"messages":[{"role":"user","content":"Hi"}]`},
		{"between turns", "", `[{"role":"user","content":"Hi"},{"role":"assistant","content":"Yo"},{"role":"system","content":"Now."},{"role":"user","content":"Go"}]`,
			`"system":"Now.","messages":[{"role":"user","content":"Hi"},{"role":"assistant","content":"Yo"},{"role":"user","content":"Go"}]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := newMock(t, Options{Flavor: Beta})
			got := decodeAnswer(t, Beta, m.do(t, t.Context(), []byte(`{"model":"m","max_tokens":100,`+tt.system+`"messages":`+tt.messages+`}`), nil).body)
			want := decodeAnswer(t, Beta, m.do(t, t.Context(), []byte(`{"model":"m","max_tokens":100,`+tt.equiv+`}`), nil).body)
			if got.text != want.text || got.in != want.in || got.out != want.out {
				t.Errorf("got %q %d/%d, want %q %d/%d", got.text, got.in, got.out, want.text, want.in, want.out)
			}
		})
	}
	// A directive in a system message is prose; the user turn's applies.
	m := newMock(t, Options{Flavor: Beta})
	res := m.do(t, t.Context(), []byte(`{"model":"m","max_tokens":100,"messages":[{"role":"user","content":"Hi\n@mock beta:status=503"},{"role":"system","content":"@mock beta:status=429"}]}`), nil)
	if res.resp.StatusCode != 503 {
		t.Errorf("status %d, want the user turn's 503", res.resp.StatusCode)
	}
}

// TestCountTokens: /v1/messages/count_tokens answers the input tokens the
// same request to /v1/messages reports (without cached_tokens), with
// directive lines removed and not applied.
func TestCountTokens(t *testing.T) {
	tests := []struct {
		name, body string
	}{
		{"plain", `{"model":"m","messages":[{"role":"user","content":"Tell me about rivers."}]}`},
		{"system and system message", `{"model":"m","system":"You are terse.","messages":[{"role":"user","content":"Hi there"},{"role":"system","content":"Env: linux"}]}`},
		{"directive not applied", `{"model":"m","messages":[{"role":"user","content":"Hi there\n@mock beta:status=503 beta:delay_ms=10"}]}`},
		{"image and tools", `{"model":"m","tools":` + betaToolsJSON + `,"messages":[{"role":"user","content":[{"type":"text","text":"what"},` +
			`{"type":"image","source":{"type":"url","url":"https://x.invalid/a.png"}}]}]}`},
		{"tool result", `{"model":"m","messages":[{"role":"user","content":"time?"},{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"get_time","input":{"zone":"UTC"}}]},` +
			`{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"noon in UTC"}]}],"thinking":{"type":"adaptive"},"context_management":{"edits":[]}}`},
		{"claude code 2.1", strings.Replace(claudeCode21Request, "STREAM", "true", 1)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := newMock(t, Options{Flavor: Beta, RequireKey: "k"})
			key := map[string]string{"x-api-key": "k"}
			res := m.doAt(t, t.Context(), countTokensPath+"?beta=true", []byte(tt.body), key)
			if res.resp.StatusCode != 200 || res.resp.Header.Get("Content-Type") != "application/json" {
				t.Fatalf("count_tokens: %d %s", res.resp.StatusCode, res.body)
			}
			var got anthropic.CountTokensResponse
			mustUnmarshal(t, string(res.body), &got)
			// What /v1/messages bills for it, without the directive's faults.
			msgBody := strings.Replace(tt.body, `{"model":"m",`, `{"model":"m","max_tokens":100,`, 1)
			msgBody = strings.NewReplacer(` beta:status=503`, ``, `"stream":true`, `"stream":false`).Replace(msgBody)
			billed := m.do(t, t.Context(), []byte(msgBody), key)
			if billed.resp.StatusCode != 200 {
				t.Fatalf("messages: %d %s", billed.resp.StatusCode, billed.body)
			}
			if want := decodeCallOrAnswerInput(t, billed.body); got.InputTokens != want || want == 0 {
				t.Errorf("count_tokens %d, /v1/messages input_tokens %d", got.InputTokens, want)
			}
			c := m.calls(t)
			if c.ByPath[countTokensPath] != 1 || c.ByStatus["200"] != 2 {
				t.Errorf("calls %+v", c)
			}
		})
	}
}

// decodeCallOrAnswerInput is usage.input_tokens of a Messages answer (text
// or tool call).
func decodeCallOrAnswerInput(t *testing.T, body []byte) int {
	t.Helper()
	var r anthropic.MessageResponse
	mustUnmarshal(t, string(body), &r)
	if r.Usage == nil || r.Usage.InputTokens == nil {
		t.Fatalf("no usage: %s", body)
	}
	return *r.Usage.InputTokens
}

func TestCountTokensErrors(t *testing.T) {
	tests := []struct {
		name   string
		method string
		hdr    map[string]string
		body   string
		status int
		want   string
	}{
		{"no key", http.MethodPost, nil, `{"model":"m","messages":[{"role":"user","content":"x"}]}`, 401, "authentication_error"},
		{"wrong key", http.MethodPost, map[string]string{"x-api-key": "other"}, `{"model":"m","messages":[{"role":"user","content":"x"}]}`, 401, "authentication_error"},
		{"no messages", http.MethodPost, map[string]string{"x-api-key": "k"}, `{"model":"m","messages":[]}`, 400, "invalid_request_error"},
		{"no model", http.MethodPost, map[string]string{"x-api-key": "k"}, `{"messages":[{"role":"user","content":"x"}]}`, 400, "invalid_request_error"},
		{"bad role", http.MethodPost, map[string]string{"x-api-key": "k"}, `{"model":"m","messages":[{"role":"tool","content":"x"}]}`, 400, "invalid_request_error"},
		{"GET", http.MethodGet, map[string]string{"x-api-key": "k"}, ``, 405, "invalid_request_error"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := newMock(t, Options{Flavor: Beta, RequireKey: "k"})
			req, err := http.NewRequestWithContext(t.Context(), tt.method, m.URL+countTokensPath, strings.NewReader(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			for k, v := range tt.hdr {
				req.Header.Set(k, v)
			}
			resp, err := m.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var e anthropic.ErrorResponse
			if resp.StatusCode != tt.status {
				t.Fatalf("status %d, want %d", resp.StatusCode, tt.status)
			}
			if err := jsonv2.UnmarshalRead(resp.Body, &e); err != nil || e.Error.Type != tt.want {
				t.Errorf("error %+v (%v), want type %s", e, err, tt.want)
			}
		})
	}
}

// TestToolResultsRecorded: /mock/calls keeps the tool results each call's
// last turn carried — every parallel result, is_error, cut to
// maxToolResultBytes — the last maxToolResults of them, and reset clears
// them.
func TestToolResultsRecorded(t *testing.T) {
	alphaCalls := `{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"get_time","arguments":"{}"}},` +
		`{"id":"c2","type":"function","function":{"name":"get_time","arguments":"{}"}}]}`
	long := strings.Repeat("é", maxToolResultBytes) // 2 bytes each: the cut keeps whole characters
	tests := []struct {
		name string
		fl   Flavor
		path string
		body []byte
		want []ToolResult
	}{
		{"alpha parallel results", Alpha, "/v1/chat/completions", chatBody(Alpha, `[{"role":"user","content":"t?"},`+alphaCalls+
			`,{"role":"tool","tool_call_id":"c1","content":"one"},{"role":"tool","tool_call_id":"c2","content":[{"type":"text","text":"two"},{"type":"text","text":"2"}]}]`, false),
			[]ToolResult{{CallID: "c1", Content: "one"}, {CallID: "c2", Content: "two\n2"}}},
		{"alpha results of an earlier turn", Alpha, "/v1/chat/completions", chatBody(Alpha, `[{"role":"user","content":"t?"},`+alphaCalls+
			`,{"role":"tool","tool_call_id":"c1","content":"one"},{"role":"tool","tool_call_id":"c2","content":"two"},{"role":"user","content":"thanks"}]`, false), nil},
		{"beta error result", Beta, "/v1/messages", chatBody(Beta, conversation(Beta, "toolu_1", "boom", true), false),
			[]ToolResult{{CallID: "toolu_1", Content: "boom", IsError: true}}},
		{"beta long result", Beta, "/v1/messages", chatBody(Beta, conversation(Beta, "toolu_1", long, false), false),
			[]ToolResult{{CallID: "toolu_1", Content: long[:maxToolResultBytes]}}},
		{"responses", Alpha, responsesPath, respBody(`[{"role":"user","content":"t?"},{"type":"function_call","call_id":"c9","name":"get_time","arguments":"{}"},` +
			`{"type":"function_call_output","call_id":"c9","output":"nine"}]`), []ToolResult{{CallID: "c9", Content: "nine"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := newMock(t, Options{Flavor: tt.fl})
			if res := m.doAt(t, t.Context(), tt.path, tt.body, nil); res.resp.StatusCode != 200 {
				t.Fatalf("%d %s", res.resp.StatusCode, res.body)
			}
			for i := range tt.want {
				tt.want[i].Path = tt.path
			}
			if got := m.calls(t).ToolResults; string(mustMarshal(got)) != string(mustMarshal(tt.want)) {
				t.Errorf("tool_results\n got %+v\nwant %+v", got, tt.want)
			}
		})
	}
	m := newMock(t, Options{Flavor: Beta})
	for i := range maxToolResults + 5 {
		m.do(t, t.Context(), chatBody(Beta, conversation(Beta, "toolu_1", "result "+strconv.Itoa(i), false), false), nil)
	}
	got := m.calls(t).ToolResults
	if len(got) != maxToolResults || got[0].Content != "result 5" || got[len(got)-1].Content != "result "+strconv.Itoa(maxToolResults+4) {
		t.Errorf("%d kept, first %+v", len(got), got[0])
	}
	if resp, err := m.Client().Post(m.URL+"/mock/reset", "", nil); err != nil || resp.StatusCode != 204 {
		t.Fatalf("reset: %v", err)
	}
	if got := m.calls(t).ToolResults; got != nil {
		t.Errorf("after reset: %+v", got)
	}
}
