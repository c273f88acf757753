package mockproviders

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	jsonv2 "github.com/go-json-experiment/json"

	"github.com/llmgw/llmgw/api/tokens"
	"github.com/llmgw/llmgw/api/wire/anthropic"
	"github.com/llmgw/llmgw/api/wire/openai"
)

// The tools every tool test offers. The first tool of each list is one the
// mock never calls (an OpenAI custom tool, an Anthropic server tool), so
// "the first tool" must skip it.
const (
	weatherSchema = `{"type":"object","properties":{"city":{"type":"string"},"days":{"type":"integer","minimum":3},` +
		`"metric":{"type":"boolean"},"note":{"type":"string"}},"required":["city","days","metric"]}`
	timeSchema = `{"type":"object","properties":{"zone":{"type":"string"}},"required":["zone"]}`

	alphaToolsJSON = `[{"type":"custom","custom":{"name":"grammar"}},` +
		`{"type":"function","function":{"name":"get_weather","description":"weather","parameters":` + weatherSchema + `}},` +
		`{"type":"function","function":{"name":"get_time","parameters":` + timeSchema + `}}]`
	betaToolsJSON = `[{"type":"web_search_20250305","name":"web_search","max_uses":2},` +
		`{"name":"get_weather","description":"weather","input_schema":` + weatherSchema + `,"cache_control":{"type":"ephemeral"}},` +
		`{"name":"get_time","input_schema":` + timeSchema + `}]`

	weatherArgs = `{"city":"x","days":3,"metric":true}` // from weatherSchema
	timeArgs    = `{"zone":"x"}`
)

// toolChoiceJSON renders an abstract tool choice in each protocol: "" (none
// sent), auto, none, required (beta any) or a tool's name.
func toolChoiceJSON(fl Flavor, choice string) string {
	switch {
	case choice == "":
		return ""
	case fl == Alpha && (choice == "auto" || choice == "none" || choice == "required"):
		return `,"tool_choice":"` + choice + `"`
	case fl == Alpha:
		return `,"tool_choice":{"type":"function","function":{"name":"` + choice + `"}}`
	case choice == "required":
		return `,"tool_choice":{"type":"any"}`
	case choice == "auto" || choice == "none":
		return `,"tool_choice":{"type":"` + choice + `"}`
	}
	return `,"tool_choice":{"type":"tool","name":"` + choice + `"}`
}

// chatBody is a request with the given messages (a JSON array) and extra
// top-level members (each starting with a comma).
func chatBody(fl Flavor, messages string, stream bool, extra ...string) []byte {
	var b strings.Builder
	b.WriteString(`{"model":"mdl","messages":` + messages)
	if fl == Beta {
		b.WriteString(`,"max_tokens":500`)
	}
	if stream {
		b.WriteString(`,"stream":true`)
		if fl == Alpha {
			b.WriteString(`,"stream_options":{"include_usage":true}`)
		}
	}
	for _, e := range extra {
		b.WriteString(e)
	}
	b.WriteString("}")
	return []byte(b.String())
}

func toolsJSON(fl Flavor) string {
	if fl == Alpha {
		return `,"tools":` + alphaToolsJSON
	}
	return `,"tools":` + betaToolsJSON
}

// userMsg is a one-message conversation.
func userMsg(text string) string {
	return `[{"role":"user","content":` + string(mustMarshal(text)) + `}]`
}

// callAnswer is the tool call of a JSON answer (name "" when it has none).
type callAnswer struct {
	id, name, args, text string
	finish               string
	contentNull          bool
	out                  int
}

func decodeCall(t *testing.T, fl Flavor, body []byte) callAnswer {
	t.Helper()
	var c callAnswer
	switch fl {
	case Alpha:
		var r openai.ChatCompletion
		mustUnmarshal(t, string(body), &r)
		if len(r.Choices) != 1 || r.Usage == nil {
			t.Fatalf("not a chat completion with usage: %s", body)
		}
		m := r.Choices[0].Message
		c.finish, c.contentNull, c.out = r.Choices[0].FinishReason, m.Content == nil, r.Usage.CompletionTokens
		if m.Content != nil {
			c.text = *m.Content
		}
		if len(m.ToolCalls) > 1 {
			t.Fatalf("more than one call: %s", body)
		}
		if len(m.ToolCalls) == 1 {
			tc := m.ToolCalls[0]
			if tc.Type != "function" {
				t.Fatalf("call type %q", tc.Type)
			}
			c.id, c.name, c.args = tc.ID, tc.Function.Name, tc.Function.Arguments
		}
	case Beta:
		var r anthropic.MessageResponse
		mustUnmarshal(t, string(body), &r)
		if r.StopReason == nil || r.Usage == nil || r.Usage.OutputTokens == nil {
			t.Fatalf("not a message with usage: %s", body)
		}
		c.finish, c.out = *r.StopReason, *r.Usage.OutputTokens
		if len(r.Content) != 1 {
			t.Fatalf("want one block: %s", body)
		}
		b := r.Content[0]
		switch b.Type {
		case anthropic.BlockToolUse:
			c.id, c.name, c.args, c.contentNull = b.ID, b.Name, string(b.Input), true
		case anthropic.BlockText:
			c.text = b.TextOf()
		default:
			t.Fatalf("block type %q", b.Type)
		}
	}
	return c
}

func sameJSON(t *testing.T, got, want string) bool {
	t.Helper()
	var g, w any
	if err := jsonv2.Unmarshal([]byte(got), &g); err != nil {
		t.Fatalf("not JSON: %q: %v", got, err)
	}
	mustUnmarshal(t, want, &w)
	canon := func(v any) string {
		b, err := jsonv2.Marshal(v, jsonv2.Deterministic(true))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	return canon(g) == canon(w)
}

func TestToolCallJSON(t *testing.T) {
	tests := []struct {
		name      string
		choice    string
		directive string
		wantName  string // "" : a text answer
		wantArgs  string
	}{
		{"directive names tool and args", "", "@mock *:tool=get_time *:args={\"zone\": \"Europe/Paris\", \"n\": [1, 2]}", "get_time", `{"zone":"Europe/Paris","n":[1,2]}`},
		{"directive names tool, args from schema", "auto", "@mock *:tool=get_weather", "get_weather", weatherArgs},
		{"tool=first skips tools the mock never calls", "", "@mock *:tool=first", "get_weather", weatherArgs},
		{"per-flavor directive", "", "@mock alpha:tool=get_time beta:tool=get_time", "get_time", timeArgs},
		{"tool_choice required/any calls the first tool", "required", "", "get_weather", weatherArgs},
		{"tool_choice naming a tool calls it", "get_time", "", "get_time", timeArgs},
		{"named tool_choice with tool=first", "get_time", "@mock *:tool=first", "get_time", timeArgs},
		{"forced tool with directive args", "required", "@mock *:args={\"city\":\"Oslo\"}", "get_weather", `{"city":"Oslo"}`},
		{"auto without directive answers text", "auto", "", "", ""},
		{"no tool_choice, no directive: text", "", "", "", ""},
		{"tool_choice none wins over the directive", "none", "@mock *:tool=get_time *:args={\"zone\":\"UTC\"}", "", ""},
	}
	for _, fl := range flavors {
		for _, tt := range tests {
			t.Run(string(fl)+"/"+tt.name, func(t *testing.T) {
				m := newMock(t, Options{Flavor: fl})
				body := chatBody(fl, userMsg("what is the weather\n"+tt.directive), false, toolsJSON(fl), toolChoiceJSON(fl, tt.choice))
				res := m.do(t, t.Context(), body, nil)
				if res.resp.StatusCode != 200 {
					t.Fatalf("%d: %s", res.resp.StatusCode, res.body)
				}
				c := decodeCall(t, fl, res.body)
				if tt.wantName == "" {
					if c.name != "" || !strings.HasPrefix(c.text, string(fl)+"/mdl says: ") || c.finish != map[Flavor]string{Alpha: "stop", Beta: "end_turn"}[fl] {
						t.Fatalf("want a text answer: %s", res.body)
					}
					return
				}
				if c.name != tt.wantName || !sameJSON(t, c.args, tt.wantArgs) {
					t.Errorf("call %s(%s), want %s(%s)", c.name, c.args, tt.wantName, tt.wantArgs)
				}
				wantPrefix := map[Flavor]string{Alpha: "call_", Beta: "toolu_"}[fl]
				wantFinish := map[Flavor]string{Alpha: "tool_calls", Beta: "tool_use"}[fl]
				if !strings.HasPrefix(c.id, wantPrefix) || len(c.id) <= len(wantPrefix) || c.finish != wantFinish || !c.contentNull {
					t.Errorf("id %q finish %q content null %v: %s", c.id, c.finish, c.contentNull, res.body)
				}
				if fl == Alpha && !strings.Contains(string(res.body), `"message":{"role":"assistant","content":null,"tool_calls":[`) {
					t.Errorf("alpha message shape: %s", res.body)
				}
				if want := tokens.Count(c.name) + tokens.Count(c.args); c.out != want {
					t.Errorf("output tokens %d, want %d", c.out, want)
				}
				again := m.do(t, t.Context(), body, nil)
				if string(again.body) != string(res.body) {
					t.Error("same request, different bytes")
				}
			})
		}
	}
}

// streamCall is a tool-call stream read back: its event kinds in order,
// the call's id and name from its first delta, and the argument pieces.
type streamCall struct {
	kinds  []string
	id     string
	name   string
	pieces []string
}

func decodeCallStream(t *testing.T, fl Flavor, body []byte) streamCall {
	t.Helper()
	var s streamCall
	for _, e := range parseSSE(t, body) {
		switch {
		case fl == Alpha && e.data == "[DONE]":
			s.kinds = append(s.kinds, "[DONE]")
		case fl == Alpha && strings.HasPrefix(e.data, `{"error"`):
			s.kinds = append(s.kinds, "error")
		case fl == Alpha:
			var c openai.ChatCompletionChunk
			mustUnmarshal(t, e.data, &c)
			switch {
			case len(c.Choices) == 0:
				s.kinds = append(s.kinds, "usage")
			case c.Choices[0].FinishReason != nil:
				s.kinds = append(s.kinds, "finish:"+*c.Choices[0].FinishReason)
			case c.Choices[0].Delta.Role != "":
				if c.Choices[0].Delta.Content != nil || len(c.Choices[0].Delta.ToolCalls) > 0 {
					t.Fatalf("role chunk with more: %s", e.data)
				}
				s.kinds = append(s.kinds, "role")
			case len(c.Choices[0].Delta.ToolCalls) == 1:
				d := c.Choices[0].Delta.ToolCalls[0]
				if d.Index != 0 {
					t.Fatalf("tool call index %d", d.Index)
				}
				if d.ID != "" {
					if d.Type != "function" || d.Function.Name == "" || d.Function.Arguments != "" || !strings.Contains(e.data, `"arguments":""`) {
						t.Fatalf("first tool-call delta: %s", e.data)
					}
					s.kinds, s.id, s.name = append(s.kinds, "call"), d.ID, d.Function.Name
				} else {
					if d.Function.Name != "" || d.Type != "" {
						t.Fatalf("argument delta with more: %s", e.data)
					}
					s.kinds, s.pieces = append(s.kinds, "args"), append(s.pieces, d.Function.Arguments)
				}
			default:
				t.Fatalf("unexpected chunk %s", e.data)
			}
		default:
			if e.name == anthropic.EventContentBlockStart {
				var st anthropic.ContentBlockStart
				mustUnmarshal(t, e.data, &st)
				if st.ContentBlock.Type == anthropic.BlockToolUse {
					if string(st.ContentBlock.Input) != "{}" {
						t.Fatalf("tool_use start input: %s", e.data)
					}
					s.id, s.name = st.ContentBlock.ID, st.ContentBlock.Name
				}
				s.kinds = append(s.kinds, e.name+":"+st.ContentBlock.Type)
				continue
			}
			if e.name == anthropic.EventContentBlockDelta {
				var d anthropic.ContentBlockDelta
				mustUnmarshal(t, e.data, &d)
				s.kinds = append(s.kinds, d.Delta.Type)
				if d.Delta.Type == anthropic.DeltaInputJSON {
					s.pieces = append(s.pieces, d.Delta.PartialJSON)
				}
				continue
			}
			if e.name == anthropic.EventMessageDelta {
				var md anthropic.MessageDelta
				mustUnmarshal(t, e.data, &md)
				s.kinds = append(s.kinds, e.name+":"+md.Delta.StopReason)
				continue
			}
			s.kinds = append(s.kinds, e.name)
		}
	}
	return s
}

// wantCallKinds is the exact event order of a complete tool-call stream
// with n argument pieces.
func wantCallKinds(fl Flavor, n int) []string {
	if fl == Alpha {
		k := []string{"role", "call"}
		for range n {
			k = append(k, "args")
		}
		return append(k, "finish:tool_calls", "usage", "[DONE]")
	}
	k := []string{"message_start", "content_block_start:tool_use", "ping"}
	for range n {
		k = append(k, "input_json_delta")
	}
	return append(k, "content_block_stop", "message_delta:tool_use", "message_stop")
}

func TestToolCallStream(t *testing.T) {
	tests := []struct {
		name       string
		directive  string
		wantPieces int
		wantArgs   string
	}{
		{"default chunks", "@mock *:tool=get_weather", DefaultChunks, weatherArgs},
		{"chunks=2", "@mock *:tool=get_weather *:chunks=2", 2, weatherArgs},
		{"chunks=1 still sends two pieces", "@mock *:tool=get_weather *:chunks=1", 2, weatherArgs},
		{"empty arguments are two pieces", "@mock *:tool=get_time *:args={}", 2, `{}`},
		{"more chunks than characters", "@mock *:tool=get_time *:args={\"a\":1} *:chunks=50", len(`{"a":1}`), `{"a":1}`},
		{"multibyte arguments", "@mock *:tool=get_time *:args={\"zone\":\"東京都\"} *:chunks=9", 9, `{"zone":"東京都"}`},
	}
	for _, fl := range flavors {
		for _, tt := range tests {
			t.Run(string(fl)+"/"+tt.name, func(t *testing.T) {
				m := newMock(t, Options{Flavor: fl})
				msgs := userMsg("weather please\n" + tt.directive)
				js := decodeCall(t, fl, m.do(t, t.Context(), chatBody(fl, msgs, false, toolsJSON(fl)), nil).body)
				res := m.do(t, t.Context(), chatBody(fl, msgs, true, toolsJSON(fl)), nil)
				if res.resp.StatusCode != 200 || res.readErr != nil {
					t.Fatalf("%d %v: %s", res.resp.StatusCode, res.readErr, res.body)
				}
				s := decodeCallStream(t, fl, res.body)
				if want := wantCallKinds(fl, tt.wantPieces); !slices.Equal(s.kinds, want) {
					t.Fatalf("events\n got %v\nwant %v", s.kinds, want)
				}
				args := strings.Join(s.pieces, "")
				if args != js.args || !sameJSON(t, args, tt.wantArgs) {
					t.Errorf("streamed arguments %q, JSON answer %q, want %s", args, js.args, tt.wantArgs)
				}
				for _, p := range s.pieces {
					if p == "" {
						t.Errorf("empty argument piece in %q", s.pieces)
					}
				}
				if s.id != js.id || s.name != js.name {
					t.Errorf("stream call %s %s, JSON %s %s", s.id, s.name, js.id, js.name)
				}
				if !strings.Contains(string(res.body), fmt.Sprintf(`"output_tokens":%d`, js.out)) && !strings.Contains(string(res.body), fmt.Sprintf(`"completion_tokens":%d`, js.out)) {
					t.Errorf("stream usage does not report %d output tokens", js.out)
				}
			})
		}
	}
}

// TestToolCallStreamFaults: the cut faults count the call's first delta and
// each argument piece as pieces.
func TestToolCallStreamFaults(t *testing.T) {
	tests := []struct {
		name      string
		directive string
		kinds     map[Flavor][]string
		end       string // done, error or cut
		output    int64  // unreported output tokens counted by /mock/calls
	}{
		{"drop before the call", "*:drop_after=0", map[Flavor][]string{Alpha: {"role"}, Beta: {"message_start"}}, "cut", 0},
		{"drop after the first delta", "*:drop_after=1", map[Flavor][]string{Alpha: {"role", "call"},
			Beta: {"message_start", "content_block_start:tool_use", "ping"}}, "cut", 1},
		{"error after one argument piece", "*:error_after=2", map[Flavor][]string{Alpha: {"role", "call", "args", "error"},
			Beta: {"message_start", "content_block_start:tool_use", "ping", "input_json_delta", "error"}}, "error", 2},
	}
	for _, fl := range flavors {
		for _, tt := range tests {
			t.Run(string(fl)+"/"+tt.name, func(t *testing.T) {
				m := newMock(t, Options{Flavor: fl})
				// Arguments with a space in the first half: the piece sent adds a token.
				user := "weather please\n@mock *:tool=get_time *:args={\"zone\":\"a b c d\"} *:chunks=2 " + tt.directive
				res := m.do(t, t.Context(), chatBody(fl, userMsg(user), true, toolsJSON(fl)), nil)
				s := decodeCallStream(t, fl, res.body)
				if !slices.Equal(s.kinds, tt.kinds[fl]) {
					t.Fatalf("events %v, want %v", s.kinds, tt.kinds[fl])
				}
				if got := streamEnd(fl, parseSSE(t, res.body)); got != tt.end {
					t.Errorf("ended %q, want %q", got, tt.end)
				}
				if c := m.settled(t); c.Tokens.UnreportedOutputTokens != tt.output || c.Tokens.OutputTokens != 0 {
					t.Errorf("tokens %+v, want %d unreported output", c.Tokens, tt.output)
				}
			})
		}
	}
}

// conversation renders a tool conversation: a question, the assistant's
// call of get_time with id, and the result (isError marks it).
func conversation(fl Flavor, id, result string, isError bool) string {
	q := `{"role":"user","content":"what time is it"}`
	res := string(mustMarshal(result))
	if fl == Alpha {
		return `[` + q + `,{"role":"assistant","content":null,"tool_calls":[{"id":"` + id + `","type":"function","function":{"name":"get_time","arguments":"{\"zone\":\"UTC\"}"}}]},` +
			`{"role":"tool","tool_call_id":"` + id + `","content":` + res + `}]`
	}
	errFlag := ""
	if isError {
		errFlag = `,"is_error":true`
	}
	return `[` + q + `,{"role":"assistant","content":[{"type":"text","text":"Let me check."},{"type":"tool_use","id":"` + id + `","name":"get_time","input":{"zone":"UTC"}}]},` +
		`{"role":"user","content":[{"type":"tool_result","tool_use_id":"` + id + `","content":[{"type":"text","text":` + res + `}]` + errFlag + `}]}]`
}

func TestToolConversation(t *testing.T) {
	const result = "It is   12:00 in UTC right now, the sun is high and the day is long"
	for _, fl := range flavors {
		t.Run(string(fl), func(t *testing.T) {
			m := newMock(t, Options{Flavor: fl})
			// Turn 1: the directive asks for a call.
			first := decodeCall(t, fl, m.do(t, t.Context(), chatBody(fl, userMsg("what time is it\n@mock *:tool=get_time"), false, toolsJSON(fl)), nil).body)
			if first.name != "get_time" {
				t.Fatalf("turn 1: %+v", first)
			}
			// Turn 2: the result comes back; the answer reflects it, and the
			// directive of turn 1 (no longer in the last turn) is not repeated.
			body := chatBody(fl, conversation(fl, first.id, result, false), false, toolsJSON(fl), toolChoiceJSON(fl, "auto"))
			res := m.do(t, t.Context(), body, nil)
			if res.resp.StatusCode != 200 {
				t.Fatalf("turn 2: %d %s", res.resp.StatusCode, res.body)
			}
			a := decodeAnswer(t, fl, res.body)
			want := string(fl) + "/mdl says: tool result received: It is 12:00 in UTC right now, the sun is"
			if a.text != want {
				t.Fatalf("turn 2 text %q, want %q", a.text, want)
			}
			// Input: the question, the call's arguments, the result (and beta's text block).
			wantIn := 4 + 1 + tokens.Count(result)
			if fl == Beta {
				wantIn += 3
			}
			if a.in != wantIn || a.out != tokens.Count(a.text) {
				t.Errorf("usage in %d out %d, want in %d", a.in, a.out, wantIn)
			}
			// A forcing tool_choice does not loop after a result...
			forced := decodeCall(t, fl, m.do(t, t.Context(), chatBody(fl, conversation(fl, first.id, result, false), false, toolsJSON(fl), toolChoiceJSON(fl, "required")), nil).body)
			if forced.name != "" || forced.text != want {
				t.Errorf("forced choice after a result: %+v", forced)
			}
			// ...but a directive in the result's turn asks for another call.
			again := decodeCall(t, fl, m.do(t, t.Context(), chatBody(fl, conversation(fl, first.id, result+"\n@mock *:tool=get_weather", false), false, toolsJSON(fl)), nil).body)
			if again.name != "get_weather" || again.id == first.id {
				t.Errorf("second call: %+v (first %s)", again, first.id)
			}
			if fl == Beta {
				e := decodeAnswer(t, fl, m.do(t, t.Context(), chatBody(fl, conversation(fl, first.id, "timeout", true), false, toolsJSON(fl)), nil).body)
				if e.text != "beta/mdl says: tool error received: timeout" {
					t.Errorf("error result: %q", e.text)
				}
			}
		})
	}
}

func TestToolPairingErrors(t *testing.T) {
	call := func(id string) string {
		return `{"role":"assistant","content":null,"tool_calls":[{"id":"` + id + `","type":"function","function":{"name":"get_time","arguments":"{}"}}]}`
	}
	use := func(ids ...string) string {
		var b []string
		for _, id := range ids {
			b = append(b, `{"type":"tool_use","id":"`+id+`","name":"get_time","input":{}}`)
		}
		return `{"role":"assistant","content":[` + strings.Join(b, ",") + `]}`
	}
	result := func(ids ...string) string {
		var b []string
		for _, id := range ids {
			b = append(b, `{"type":"tool_result","tool_use_id":"`+id+`","content":"ok"}`)
		}
		return `{"role":"user","content":[` + strings.Join(b, ",") + `]}`
	}
	q := `{"role":"user","content":"q"}`
	tests := []struct {
		name string
		fl   Flavor
		msgs string
		want string
	}{
		{"alpha tool message first", Alpha, `[{"role":"tool","tool_call_id":"call_1","content":"r"}]`, "preceding message with 'tool_calls'"},
		{"alpha tool message after a user message", Alpha, `[` + q + `,{"role":"tool","tool_call_id":"call_1","content":"r"}]`, "preceding message with 'tool_calls'"},
		{"alpha unknown tool_call_id", Alpha, `[` + q + `,` + call("call_1") + `,{"role":"tool","tool_call_id":"call_2","content":"r"}]`, `"call_2"`},
		{"alpha same call answered twice", Alpha, `[` + q + `,` + call("call_1") + `,{"role":"tool","tool_call_id":"call_1","content":"r"},{"role":"tool","tool_call_id":"call_1","content":"r"}]`, `"call_1"`},
		{"alpha call left unanswered", Alpha, `[` + q + `,` + call("call_1") + `,` + q + `]`, "call_1 unanswered"},
		{"alpha tool message without tool_call_id", Alpha, `[` + q + `,` + call("call_1") + `,{"role":"tool","content":"r"}]`, "tool_call_id is required"},
		{"alpha tool call without id", Alpha, `[` + q + `,{"role":"assistant","tool_calls":[{"type":"function","function":{"name":"f","arguments":"{}"}}]}]`, "needs an id"},
		{"beta result without a previous tool_use", Beta, `[` + result("toolu_1") + `]`, "unexpected tool_use_id found in tool_result blocks: toolu_1"},
		{"beta result for another id", Beta, `[` + q + `,` + use("toolu_1") + `,` + result("toolu_1", "toolu_2") + `]`, "unexpected tool_use_id found in tool_result blocks: toolu_2"},
		{"beta result two turns late", Beta, `[` + q + `,` + use("toolu_1") + `,` + result("toolu_1") + `,{"role":"assistant","content":"ok"},` + result("toolu_1") + `]`, "messages.4.content"},
		{"beta tool_use left unanswered", Beta, `[` + q + `,` + use("toolu_1", "toolu_2") + `,` + result("toolu_1") + `]`, "without tool_result blocks immediately after: toolu_2"},
		{"beta tool_result without id", Beta, `[` + q + `,` + use("toolu_1") + `,{"role":"user","content":[{"type":"tool_result","content":"x"}]}]`, "tool_use_id: field required"},
		{"beta tool_use input not an object", Beta, `[` + q + `,{"role":"assistant","content":[{"type":"tool_use","id":"t","name":"f","input":[1]}]}]`, "input: must be a JSON object"},
		{"beta tool_use in a user turn", Beta, `[{"role":"user","content":[{"type":"tool_use","id":"t","name":"f","input":{}}]}]`, `"tool_use" is not a content block type of a user`},
		{"beta tool_result in an assistant turn", Beta, `[` + q + `,{"role":"assistant","content":[{"type":"tool_result","tool_use_id":"t","content":"x"}]}]`, "not a content block type of a assistant"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := newMock(t, Options{Flavor: tt.fl})
			res := m.do(t, t.Context(), chatBody(tt.fl, tt.msgs, false, toolsJSON(tt.fl)), nil)
			if res.resp.StatusCode != 400 {
				t.Fatalf("status %d: %s", res.resp.StatusCode, res.body)
			}
			typ, _, msg := errorType(t, tt.fl, res.body)
			if typ != "invalid_request_error" || !strings.Contains(msg, tt.want) {
				t.Fatalf("error %q %q, want it to contain %q", typ, msg, tt.want)
			}
		})
	}
	// The valid forms of the same conversations pass: parallel calls answered
	// in any order, assistant text beside the calls.
	valid := map[Flavor]string{
		Alpha: `[` + q + `,{"role":"assistant","content":"checking","tool_calls":[{"id":"a","type":"function","function":{"name":"get_time","arguments":"{}"}},` +
			`{"id":"b","type":"function","function":{"name":"get_time","arguments":"{}"}}]},{"role":"tool","tool_call_id":"b","content":"rb"},` +
			`{"role":"tool","tool_call_id":"a","content":[{"type":"text","text":"ra"}]}]`,
		Beta: `[` + q + `,` + use("a", "b") + `,` + result("b", "a") + `]`,
	}
	for _, fl := range flavors {
		m := newMock(t, Options{Flavor: fl})
		if res := m.do(t, t.Context(), chatBody(fl, valid[fl], false, toolsJSON(fl)), nil); res.resp.StatusCode != 200 {
			t.Errorf("%s valid parallel calls: %d %s", fl, res.resp.StatusCode, res.body)
		} else if a := decodeAnswer(t, fl, res.body); !strings.HasSuffix(a.text, "tool result received: ra") && !strings.HasSuffix(a.text, "tool result received: ok") {
			t.Errorf("%s answer %q does not reflect the last result", fl, a.text)
		}
	}
}

func TestToolRequestErrors(t *testing.T) {
	q := userMsg("q")
	tests := []struct {
		name  string
		fl    Flavor
		extra string
		user  string // overrides q's text when set
		want  string
	}{
		{"alpha directive names a tool not offered", Alpha, toolsJSON(Alpha), "q\n@mock *:tool=get_stock", "tool=get_stock names no tool the request offers (callable: get_weather, get_time)"},
		{"beta directive names a server tool", Beta, toolsJSON(Beta), "q\n@mock *:tool=web_search", "callable: get_weather, get_time"},
		{"directive without tools", Alpha, "", "q\n@mock *:tool=first", "callable: none"},
		{"args without a call", Beta, toolsJSON(Beta), "q\n@mock *:args={\"a\":1}", "args= given but the answer calls no tool"},
		{"directive disagrees with tool_choice", Alpha, toolsJSON(Alpha) + toolChoiceJSON(Alpha, "get_time"), "q\n@mock *:tool=get_weather", `tool_choice forces the tool "get_time"`},
		{"bad args directive", Alpha, toolsJSON(Alpha), "q\n@mock *:tool=get_time *:args=[1]", "args wants a JSON object"},
		{"alpha bad function name", Alpha, `,"tools":[{"type":"function","function":{"name":"has space"}}]`, "", "function.name must match"},
		{"alpha function name too long", Alpha, `,"tools":[{"type":"function","function":{"name":"` + strings.Repeat("a", 65) + `"}}]`, "", "function.name must match"},
		{"alpha duplicate tools", Alpha, `,"tools":[{"type":"function","function":{"name":"f"}},{"type":"function","function":{"name":"f"}}]`, "", "unique"},
		{"alpha unknown tool type", Alpha, `,"tools":[{"type":"retrieval"}]`, "", `"retrieval" is not one of function, custom`},
		{"alpha parameters not an object", Alpha, `,"tools":[{"type":"function","function":{"name":"f","parameters":"x"}}]`, "", "parameters must be a JSON Schema object"},
		{"alpha bad tool_choice string", Alpha, toolsJSON(Alpha) + `,"tool_choice":"always"`, "", `"always" is not one of none, auto, required`},
		{"alpha tool_choice names a missing tool", Alpha, toolsJSON(Alpha) + toolChoiceJSON(Alpha, "nope"), "", `"nope", which is not in tools`},
		{"alpha required without tools", Alpha, `,"tool_choice":"required"`, "", "only allowed when tools are specified"},
		{"beta custom tool without schema", Beta, `,"tools":[{"name":"f"}]`, "", "input_schema: a JSON Schema object is required"},
		{"beta bad tool name", Beta, `,"tools":[{"name":"a.b","input_schema":{"type":"object"}}]`, "", "custom.name: must match"},
		{"beta duplicate tools", Beta, `,"tools":[{"name":"f","input_schema":{}},{"name":"f","input_schema":{}}]`, "", "unique"},
		{"beta unknown tool_choice", Beta, toolsJSON(Beta) + `,"tool_choice":{"type":"some"}`, "", `"some" is not one of auto, any, tool, none`},
		{"beta tool_choice names a missing tool", Beta, toolsJSON(Beta) + toolChoiceJSON(Beta, "nope"), "", `"nope" is not the name of a tool`},
		{"beta thinking with a forced tool", Beta, toolsJSON(Beta) + toolChoiceJSON(Beta, "required") + `,"thinking":{"type":"enabled","budget_tokens":2048}`, "", "Thinking may not be enabled when tool_choice forces tool use"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := newMock(t, Options{Flavor: tt.fl})
			msgs := q
			if tt.user != "" {
				msgs = userMsg(tt.user)
			}
			res := m.do(t, t.Context(), chatBody(tt.fl, msgs, false, tt.extra), nil)
			if res.resp.StatusCode != 400 {
				t.Fatalf("status %d: %s", res.resp.StatusCode, res.body)
			}
			if typ, _, msg := errorType(t, tt.fl, res.body); typ != "invalid_request_error" || !strings.Contains(msg, tt.want) {
				t.Fatalf("error %q %q, want it to contain %q", typ, msg, tt.want)
			}
			if tt.user != "" {
				if c := m.calls(t); c.ByFault["invalid"] != 1 {
					t.Errorf("a rejected directive is not counted as invalid: %v", c.ByFault)
				}
			}
		})
	}
}

// TestToolCallIDsDiffer: a call's id follows the conversation, so the calls
// of two turns never share one.
func TestToolCallIDsDiffer(t *testing.T) {
	for _, fl := range flavors {
		m := newMock(t, Options{Flavor: fl})
		ids := map[string]bool{}
		for _, u := range []string{"one", "two", "three"} {
			c := decodeCall(t, fl, m.do(t, t.Context(), chatBody(fl, userMsg(u+"\n@mock *:tool=first"), false, toolsJSON(fl)), nil).body)
			ids[c.id] = true
		}
		if len(ids) != 3 {
			t.Errorf("%s: ids %v", fl, ids)
		}
	}
}
