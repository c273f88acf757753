package translate

import (
	"bytes"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/llmgw/llmgw/api/wire/anthropic"
)

var aoTestMeta = Meta{Alias: "claude-alias", ID: "msg_req1", Created: 1700000000}

// TestAnthropicToOpenAIAnswerGolden reads each answer of
// testdata/anthropic_openai/answer/<name>.json; the golden file has the
// usage, the text for the gateway's own count and the Messages answer as
// written, or the failure.
func TestAnthropicToOpenAIAnswerGolden(t *testing.T) {
	for _, tc := range []struct {
		name string
		fail bool
	}{
		{"text", false},                // a text block, escaped as the gateway escapes; end_turn
		{"tool_calls", false},          // two tool_use blocks, inputs compact objects; tool_use
		{"mixed", false},               // text and a call with empty arguments ({}); function_call → tool_use
		{"refusal", false},             // the refusal as text; refusal
		{"length", false},              // max_tokens
		{"cache_usage", false},         // input_tokens without the cached, cache_read_input_tokens the cached
		{"no_usage", false},            // zero usage written, Text the content and arguments; null finish → end_turn
		{"empty_answer", false},        // no blocks
		{"error_envelope", true},       // the provider's type and message
		{"arguments_not_object", true}, // the route fails before anything is sent
		{"arguments_truncated", true},
		{"no_choices", true},
		{"malformed", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			raw := readFile(t, filepath.Join(aoTestdata, "answer", tc.name+".json"))
			m := aoTestMeta
			a, err := Messages(ProtocolOpenAI).Answer(raw, &m)
			if (err != nil) != tc.fail {
				t.Fatalf("answer %+v, error %v; want failure %v", a, err, tc.fail)
			}
			var out bytes.Buffer
			if err != nil {
				out.WriteString(failureString(t, err))
			} else {
				aoCheckAnswer(t, a)
				fmt.Fprintf(&out, "usage: %s\ntext: %q\nbody:\n%s", usageString(a.Usage), a.Text, a.Body)
			}
			golden(t, filepath.Join(aoTestdata, "answer", tc.name+".golden"), out.Bytes())
		})
	}
}

// aoCheckAnswer checks what every written answer must be: one JSON value
// and a newline, a Messages answer with the gateway's id and the alias,
// tool_use inputs that are objects, usage counts that add up to what the
// gateway reports, and Text only without usage.
func aoCheckAnswer(t testing.TB, a *Answer) {
	t.Helper()
	if !bytes.HasSuffix(a.Body, []byte("\n")) || !jsontext.Value(a.Body).IsValid() {
		t.Fatalf("body is not one JSON value and a newline: %q", a.Body)
	}
	var msg anthropic.MessageResponse
	if err := json.Unmarshal(a.Body, &msg, json.RejectUnknownMembers(true)); err != nil {
		t.Fatalf("not a Messages answer: %v: %s", err, a.Body)
	}
	if msg.ID != aoTestMeta.ID || msg.Type != "message" || msg.Role != "assistant" || msg.Model != aoTestMeta.Alias || msg.StopReason == nil || msg.Usage == nil {
		t.Fatalf("answer %s", a.Body)
	}
	for _, b := range msg.Content {
		if b.Type == anthropic.BlockToolUse && b.Input.Kind() != '{' {
			t.Fatalf("tool_use input %s", b.Input)
		}
	}
	if a.Usage != nil {
		u := msg.Usage
		if a.Text != "" || *u.InputTokens+*u.CacheReadInputTokens != a.Usage.InputTokens || *u.CacheReadInputTokens != min(a.Usage.CachedInputTokens, a.Usage.InputTokens) || *u.OutputTokens != a.Usage.OutputTokens {
			t.Fatalf("usage %s, text %q for %s", usageString(a.Usage), a.Text, a.Body)
		}
	}
}

// TestAnthropicToOpenAIStreamGolden feeds each transcript of
// testdata/anthropic_openai/stream/<name>.sse to a stream, event by event,
// then End; the golden file lists each event's chunks (their event name,
// commit flag, text, usage and data), the end of stream or the failure,
// then End's chunks. The events written must make a well-formed Messages
// stream.
func TestAnthropicToOpenAIStreamGolden(t *testing.T) {
	for _, name := range []string{
		"text",                // message_start, one text block, usage chunk not written
		"tool_call",           // text, then a call whose arguments come in pieces
		"two_tool_calls",      // parallel calls told apart by index; usage on the finish chunk
		"cache_usage",         // the provider's counts reported; End writes the billed ones
		"reasoning",           // reasoning dropped; a refusal is text; content_filter → refusal
		"calls_without_index", // a server numbering every call 0: a new id is a new call
		"empty",               // nothing but [DONE]: End writes a whole empty message
		"error_chunk",
		"malformed",
	} {
		t.Run(name, func(t *testing.T) {
			m := aoTestMeta
			s := Messages(ProtocolOpenAI).Stream(&m)
			var out bytes.Buffer
			var all, chunks []Chunk
			failed := false
			for _, data := range oaiEvents(readFile(t, filepath.Join(aoTestdata, "stream", name+".sse"))) {
				fmt.Fprintf(&out, "<- %.60s\n", data)
				var done bool
				var err error
				chunks, done, err = s.Event(nil, data, chunks[:0])
				aoWriteChunks(&out, chunks)
				all = aoKeep(all, chunks)
				if err != nil {
					out.WriteString(failureString(t, err))
					failed = true
					break
				}
				if done {
					out.WriteString("done\n")
					break
				}
			}
			if !failed {
				out.WriteString("<- end\n")
				end := s.End(antBilled, nil)
				aoWriteChunks(&out, end)
				all = aoKeep(all, end)
				aoCheckEvents(t, all, true)
			} else {
				aoCheckEvents(t, all, false)
			}
			golden(t, filepath.Join(aoTestdata, "stream", name+".golden"), out.Bytes())
		})
	}
}

func aoWriteChunks(out *bytes.Buffer, chunks []Chunk) {
	for _, c := range chunks {
		data := string(c.Data)
		if c.Data == nil {
			data = "(not sent)"
		}
		fmt.Fprintf(out, "-> %s commit=%v text=%q usage=%s\n   %s\n", c.Event, c.Commit, c.Text, usageString(c.Usage), data)
	}
}

// aoKeep appends copies of chunks to all (their data is the stream's
// buffer, which the next event reuses).
func aoKeep(all, chunks []Chunk) []Chunk {
	for _, c := range chunks {
		c.Data = bytes.Clone(c.Data)
		all = append(all, c)
	}
	return all
}

// aoEventIn is what aoCheckEvents reads of an event.
type aoEventIn struct {
	Type         string                  `json:"type"`
	Index        *int                    `json:"index"`
	ContentBlock *anthropic.ContentBlock `json:"content_block"`
	Delta        *struct {
		Type        string  `json:"type"`
		Text        *string `json:"text"`
		PartialJSON *string `json:"partial_json"`
		StopReason  *string `json:"stop_reason"`
		// StopSequence is always null: chat-completions does not say
		// which sequence stopped an answer.
		StopSequence jsontext.Value `json:"stop_sequence"`
	} `json:"delta"`
	Message *anthropic.MessageResponse `json:"message"`
	Usage   *anthropic.Usage           `json:"usage"`
}

// aoCheckEvents checks that the chunks of one stream make a well-formed
// Messages stream: each written chunk's data is a JSON object whose type
// is its event name; message_start first; blocks opened in index order,
// each closed once, deltas only to blocks opened, of their kind; a commit
// point exactly at a tool_use block's start and at a delta that says
// something; and, when the stream ended (whole), message_delta then
// message_stop last with every block closed.
func aoCheckEvents(t testing.TB, chunks []Chunk, whole bool) {
	t.Helper()
	var names []string
	kinds := map[int]string{} // the type of each block opened
	open := -1
	for _, c := range chunks {
		if c.Data == nil {
			if c.Event != "" || c.Commit || c.Text != "" || c.Usage == nil {
				t.Fatalf("a chunk without data: %+v", c)
			}
			continue
		}
		var e aoEventIn
		if err := json.Unmarshal(c.Data, &e, json.RejectUnknownMembers(true)); err != nil {
			t.Fatalf("event %s: %v: %s", c.Event, err, c.Data)
		}
		if e.Type != c.Event {
			t.Fatalf("event %s has type %s", c.Event, e.Type)
		}
		if len(names) == 0 && e.Type != anthropic.EventMessageStart {
			t.Fatalf("first event %s", e.Type)
		}
		names = append(names, e.Type)
		commit := false
		switch e.Type {
		case anthropic.EventMessageStart:
			if len(names) != 1 || e.Message == nil || e.Message.ID != aoTestMeta.ID || e.Message.Model != aoTestMeta.Alias || len(e.Message.Content) != 0 {
				t.Fatalf("message_start %s (event %d)", c.Data, len(names))
			}
		case anthropic.EventContentBlockStart:
			if open >= 0 || e.Index == nil || *e.Index != len(kinds) || e.ContentBlock == nil {
				t.Fatalf("content_block_start %s with block %d open, %d opened", c.Data, open, len(kinds))
			}
			open = *e.Index
			kinds[open] = e.ContentBlock.Type
			commit = e.ContentBlock.Type == anthropic.BlockToolUse
		case anthropic.EventContentBlockDelta:
			kind, ok := kinds[*e.Index]
			want := map[string]string{anthropic.BlockText: anthropic.DeltaText, anthropic.BlockToolUse: anthropic.DeltaInputJSON}[kind]
			if !ok || e.Delta == nil || e.Delta.Type != want {
				t.Fatalf("content_block_delta %s to a %s block", c.Data, kind)
			}
			commit = (e.Delta.Text != nil && *e.Delta.Text != "") || (e.Delta.PartialJSON != nil && *e.Delta.PartialJSON != "")
		case anthropic.EventContentBlockStop:
			if e.Index == nil || *e.Index != open {
				t.Fatalf("content_block_stop %s with block %d open", c.Data, open)
			}
			open = -1
		case anthropic.EventMessageDelta:
			if open >= 0 || e.Delta == nil || e.Delta.StopReason == nil || string(e.Delta.StopSequence) != "null" ||
				e.Usage == nil || e.Usage.InputTokens == nil || e.Usage.CacheReadInputTokens == nil || e.Usage.OutputTokens == nil {
				t.Fatalf("message_delta %s with block %d open", c.Data, open)
			}
		case anthropic.EventMessageStop:
		default:
			t.Fatalf("event %s", e.Type)
		}
		if c.Commit != commit {
			t.Fatalf("commit=%v for %s", c.Commit, c.Data)
		}
	}
	n := len(names)
	if whole && (n < 3 || names[n-2] != anthropic.EventMessageDelta || names[n-1] != anthropic.EventMessageStop) {
		t.Fatalf("a stream ending %v", names)
	}
	if !whole && n > 0 && (names[n-1] == anthropic.EventMessageStop) {
		t.Fatalf("a failed stream ending %v", names)
	}
}

// The commit point is the first content or the first tool call's start;
// what a stream says before (its role, reasoning, empty content) is not.
func TestAnthropicToOpenAIStreamCommit(t *testing.T) {
	chunk := func(delta string) string {
		return `{"id":"c","choices":[{"index":0,"delta":` + delta + `,"finish_reason":null}]}`
	}
	for _, tc := range []struct {
		name, data string
		events     string // the events written, by name
		commit     bool
		text       string
	}{
		{"role", chunk(`{"role":"assistant","content":""}`), "message_start", false, ""},
		{"reasoning", chunk(`{"reasoning_content":"hmm"}`), "message_start", false, ""},
		{"content", chunk(`{"content":"Hi"}`), "message_start content_block_start content_block_delta", true, "Hi"},
		{"refusal", chunk(`{"refusal":"No."}`), "message_start content_block_start content_block_delta", true, "No."},
		{"call head", chunk(`{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"f","arguments":""}}]}`), "message_start content_block_start", true, ""},
		{"call whole", chunk(`{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"f","arguments":"{}"}}]}`), "message_start content_block_start content_block_delta", true, "{}"},
		{"other choice", `{"choices":[{"index":1,"delta":{"content":"x"}}]}`, "message_start", false, ""},
		{"usage only", `{"choices":[],"usage":{"prompt_tokens":1,"completion_tokens":2}}`, "message_start (usage)", false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := aoTestMeta
			chunks, done, err := Messages(ProtocolOpenAI).Stream(&m).Event(nil, []byte(tc.data), nil)
			if err != nil || done {
				t.Fatal(done, err)
			}
			var names []string
			commit, text := false, ""
			for _, c := range chunks {
				name := c.Event
				if c.Data == nil {
					name = "(usage)"
				}
				names = append(names, name)
				commit = commit || c.Commit
				text += c.Text
			}
			if got := strings.Join(names, " "); got != tc.events || commit != tc.commit || text != tc.text {
				t.Errorf("events %q commit %v text %q; want %q %v %q", got, commit, text, tc.events, tc.commit, tc.text)
			}
		})
	}
}

// End may run before the last event's chunks are written, so it must not
// overwrite them.
func TestAnthropicToOpenAIStreamChunksSurviveEnd(t *testing.T) {
	m := aoTestMeta
	s := Messages(ProtocolOpenAI).Stream(&m)
	chunks, _, err := s.Event(nil, []byte(`{"choices":[{"index":0,"delta":{"content":"Hi"},"finish_reason":"stop"}]}`), nil)
	if err != nil || len(chunks) != 3 {
		t.Fatal(chunks, err)
	}
	var before []string
	for _, c := range chunks {
		before = append(before, string(c.Data))
	}
	chunks = s.End(antBilled, chunks)
	for i, b := range before {
		if string(chunks[i].Data) != b {
			t.Errorf("End overwrote chunk %d: %s, was %s", i, chunks[i].Data, b)
		}
	}
	want := `{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"input_tokens":26,"cache_read_input_tokens":5,"output_tokens":17}}`
	if len(chunks) != 6 || string(chunks[4].Data) != want {
		t.Errorf("End wrote %d chunks, message_delta %s; want %s", len(chunks)-3, chunks[min(4, len(chunks)-1)].Data, want)
	}
}

// TestAnthropicToOpenAIAnswerArguments: a tool call's arguments become the
// tool_use input when they are one JSON object (compact; empty arguments
// are {}), and make the answer a failure otherwise.
func TestAnthropicToOpenAIAnswerArguments(t *testing.T) {
	for _, tc := range []struct {
		name, args string
		want       string // the input written; "" for a failure
	}{
		{"object", `{"a":1}`, `{"a":1}`},
		{"spaced", " {\n \"a\" : [1, 2] }\t", `{"a":[1,2]}`},
		{"empty", ``, `{}`},
		{"blank", `  `, `{}`},
		{"escaped as the gateway escapes", `{"a":"<\u00e9>"}`, `{"a":"\u003cé\u003e"}`},
		{"invalid UTF-8 replaced", "{\"a\":\"\xff\"}", `{"a":"` + "\ufffd" + `"}`},
		{"array", `[1]`, ""},
		{"string", `"x"`, ""},
		{"truncated", `{"a":`, ""},
		{"two objects", `{}{}`, ""},
		{"a member twice", `{"a":1,"a":2}`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			raw, err := json.Marshal(map[string]any{"choices": []any{map[string]any{"message": map[string]any{
				"tool_calls": []any{map[string]any{"id": "c", "type": "function", "function": map[string]any{"name": "f", "arguments": tc.args}}},
			}}}}, jsontext.AllowInvalidUTF8(true))
			if err != nil {
				t.Fatal(err)
			}
			m := aoTestMeta
			a, err := Messages(ProtocolOpenAI).Answer(raw, &m)
			if tc.want == "" {
				if err == nil {
					t.Fatalf("answer %s, want a failure", a.Body)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var msg struct {
				Content []struct {
					Input jsontext.Value `json:"input"`
				} `json:"content"`
			}
			if err := json.Unmarshal(a.Body, &msg); err != nil || len(msg.Content) != 1 {
				t.Fatalf("answer %s: %v", a.Body, err)
			}
			if got := string(msg.Content[0].Input); got != tc.want {
				t.Errorf("input %s, want %s", got, tc.want)
			}
		})
	}
}
