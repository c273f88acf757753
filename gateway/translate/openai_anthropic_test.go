package translate

import (
	"bytes"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/llmgw/llmgw/api/wire/anthropic"
)

const antTestdata = "testdata/openai_anthropic"

var antTestMeta = Meta{Alias: "chat-beta", ID: "chatcmpl-req1", Created: 1700000000}

// TestOpenAIToAnthropicRequestGolden translates each request of
// testdata/openai_anthropic/request/<name>.json; the golden file is the
// Messages request, indented for reading (the request itself is compact).
func TestOpenAIToAnthropicRequestGolden(t *testing.T) {
	for _, tc := range []struct {
		name   string
		stream bool
	}{
		{"plain_text", false},                   // a string content stays a string, max_tokens defaults
		{"system_developer", false},             // both to system, consecutive users joined, temperature clamped, name dropped
		{"system_parts", false},                 // an array system content makes system blocks; string joined into blocks
		{"tool_conversation", true},             // tool calls, parallel results in one user turn, user text after them, "" arguments
		{"images", false},                       // data URL and https URL images, detail dropped
		{"tool_choice_auto", false},             //
		{"tool_choice_required", false},         // required → any
		{"tool_choice_none", false},             // none takes no disable_parallel_tool_use
		{"tool_choice_function", false},         // a named function → tool
		{"parallel_tool_calls_false", false},    // auto added to carry disable_parallel_tool_use
		{"parallel_false_required", false},      //
		{"parallel_false_without_tools", false}, // nothing to call: dropped
		{"json_schema", false},                  // output_config.format
		{"response_format_text", false},         // nothing
		{"stop_string", false},                  // and user → metadata.user_id
		{"stop_array", false},                   // and an empty user: no metadata
		{"neutral_values", false},               // every parameter at its neutral value is carried
		{"assistant_refusal", false},            // refusals in the history are text
	} {
		t.Run(tc.name, func(t *testing.T) {
			body := readFile(t, filepath.Join(antTestdata, "request", tc.name+".json"))
			segs, err := openAIToAnthropic().Request(&ChatRequest{Body: body, Stream: tc.stream}, "claude-x")
			if err != nil {
				t.Fatal(err)
			}
			if len(segs) != 1 {
				t.Fatalf("%d segments, want 1", len(segs))
			}
			got := segs[0]
			antCheckRequest(t, got)
			pretty := jsontext.Value(bytes.Clone(got))
			if err := pretty.Indent(); err != nil {
				t.Fatal(err)
			}
			golden(t, filepath.Join(antTestdata, "request", tc.name+".golden.json"), append(pretty, '\n'))
		})
	}
}

// antCheckRequest checks what every produced request must be: compact
// valid JSON that is a Messages request with nothing the wire type lacks,
// with the model, a max_tokens and non-empty text blocks.
func antCheckRequest(t testing.TB, b []byte) {
	t.Helper()
	if !jsontext.Value(b).IsValid() {
		t.Fatalf("invalid JSON: %s", b)
	}
	compact := jsontext.Value(bytes.Clone(b))
	if err := compact.Compact(); err != nil || !bytes.Equal(compact, b) {
		t.Fatalf("not compact: %s", b)
	}
	var r anthropic.MessagesRequest
	if err := json.Unmarshal(b, &r, json.RejectUnknownMembers(true)); err != nil {
		t.Fatalf("not a Messages request: %v", err)
	}
	if r.Model != "claude-x" || r.MaxTokens == nil {
		t.Fatalf("model %q, max_tokens %v", r.Model, r.MaxTokens)
	}
	for i, m := range r.Messages {
		if i > 0 && r.Messages[i-1].Role == m.Role {
			t.Fatalf("messages[%d] has the role of the one before: %s", i, b)
		}
		if m.Content.Kind() != '[' {
			continue
		}
		var blocks []anthropic.ContentBlock
		if err := json.Unmarshal(m.Content, &blocks, json.RejectUnknownMembers(true)); err != nil {
			t.Fatalf("messages[%d].content: %v", i, err)
		}
		for _, bl := range blocks {
			if bl.Type == anthropic.BlockText && bl.TextOf() == "" {
				t.Fatalf("messages[%d] has an empty text block: %s", i, b)
			}
		}
	}
}

// TestOpenAIToAnthropicAnswerGolden reads each answer of
// testdata/openai_anthropic/answer/<name>.json; the golden file has the
// usage, the text for the gateway's own count and the body as written, or
// the failure.
func TestOpenAIToAnthropicAnswerGolden(t *testing.T) {
	for _, name := range []string{
		"text",              // escaped as the gateway escapes; text blocks joined
		"tool_use",          // content null, arguments compact
		"mixed",             // text and two calls
		"max_tokens",        // length
		"refusal",           // content_filter, content ""
		"cache_usage",       // cache writes and reads in prompt_tokens, reads cached
		"thinking_dropped",  // thinking and redacted_thinking left out
		"no_usage",          // Usage nil, Text the content and the arguments; pause_turn → stop
		"output_only_usage", // no input_tokens: no usage
		"empty_answer",      // no blocks: content ""
		"error_envelope",    // Failure with the provider's type and message
		"error_member",      // an error member without type, empty message
		"malformed",         // not JSON
		"not_message",       // JSON, not a message
	} {
		t.Run(name, func(t *testing.T) {
			raw := readFile(t, filepath.Join(antTestdata, "answer", name+".json"))
			m := antTestMeta
			a, err := openAIToAnthropic().Answer(raw, &m)
			var out bytes.Buffer
			if err != nil {
				var f *Failure
				if !errors.As(err, &f) {
					t.Fatalf("error %T %v, want a *Failure", err, err)
				}
				fmt.Fprintf(&out, "failure: malformed=%v type=%q message=%q\n", f.Malformed, f.Type, f.Message)
			} else {
				if !bytes.HasSuffix(a.Body, []byte("\n")) || !jsontext.Value(a.Body).IsValid() {
					t.Fatalf("body is not one JSON value and a newline: %q", a.Body)
				}
				if a.Usage != nil && a.Text != "" {
					t.Errorf("Text %q with Usage %v: Text is for answers without usage", a.Text, a.Usage)
				}
				fmt.Fprintf(&out, "usage: %s\ntext: %q\nbody:\n%s", antUsageString(a.Usage), a.Text, a.Body)
			}
			golden(t, filepath.Join(antTestdata, "answer", name+".golden"), out.Bytes())
		})
	}
}

func antUsageString(u *Usage) string {
	if u == nil {
		return "none"
	}
	return fmt.Sprintf("input=%d cached=%d output=%d reasoning=%d", u.InputTokens, u.CachedInputTokens, u.OutputTokens, u.ReasoningTokens)
}

// antEvent is one SSE event of a transcript.
type antEvent struct{ typ, data []byte }

// antParseSSE splits an SSE transcript into events: "event:" names the
// event, "data:" lines are joined with newlines, a blank line ends it.
func antParseSSE(b []byte) []antEvent {
	var events []antEvent
	var cur antEvent
	var hasData bool
	for line := range bytes.Lines(b) {
		line = bytes.TrimRight(line, "\r\n")
		switch {
		case len(line) == 0:
			if hasData {
				events = append(events, cur)
			}
			cur, hasData = antEvent{}, false
		case bytes.HasPrefix(line, []byte("event:")):
			cur.typ = bytes.TrimSpace(line[len("event:"):])
		case bytes.HasPrefix(line, []byte("data:")):
			d := bytes.TrimPrefix(line[len("data:"):], []byte(" "))
			if hasData {
				cur.data = append(append(cur.data, '\n'), d...)
			} else {
				cur.data = bytes.Clone(d)
			}
			hasData = true
		}
	}
	if hasData {
		events = append(events, cur)
	}
	return events
}

// antBilled is what the gateway bills in the stream tests: other numbers
// than the provider's, to show that End reports the gateway's.
var antBilled = Usage{InputTokens: 31, OutputTokens: 17, CachedInputTokens: 5, ReasoningTokens: 2}

// TestAnthropicStreamToChatGolden feeds each transcript of
// testdata/openai_anthropic/stream/<name>.sse to a stream, event by event,
// then End; the golden file lists each event's chunks (their commit flag,
// text, usage and data), the end of stream or the failure, then End's.
func TestAnthropicStreamToChatGolden(t *testing.T) {
	for _, tc := range []struct {
		sse          string
		includeUsage bool
	}{
		{"text", false},
		{"text", true},
		{"tool_call", true},       // text, then a call whose arguments come in pieces
		{"two_tool_calls", false}, // indexes 0 and 1; input counts repeated in message_delta
		{"error_event", true},
		{"unknown_event", true}, // thinking blocks and an unknown event yield nothing
		{"unnamed_events", false},
		{"no_usage", true}, // no input counts: no Chunk.Usage
		{"malformed_delta", false},
		{"malformed_unknown", false},
		{"malformed_unnamed", false},
	} {
		name := tc.sse
		if tc.includeUsage {
			name += ".include_usage"
		}
		t.Run(name, func(t *testing.T) {
			events := antParseSSE(readFile(t, filepath.Join(antTestdata, "stream", tc.sse+".sse")))
			m := antTestMeta
			m.IncludeUsage = tc.includeUsage
			s := openAIToAnthropic().Stream(&m)
			var out bytes.Buffer
			var chunks []Chunk
			ended := false
			for _, e := range events {
				fmt.Fprintf(&out, "<- %s\n", antEventLabel(e))
				var done bool
				var err error
				chunks, done, err = s.Event(e.typ, e.data, chunks[:0])
				antWriteChunks(t, &out, chunks)
				if err != nil {
					var f *Failure
					if !errors.As(err, &f) {
						t.Fatalf("error %T %v, want a *Failure", err, err)
					}
					fmt.Fprintf(&out, "failure: malformed=%v type=%q message=%q\n", f.Malformed, f.Type, f.Message)
					ended = true
					break
				}
				if done {
					out.WriteString("done\n")
					break
				}
			}
			if !ended {
				out.WriteString("<- end\n")
				antWriteChunks(t, &out, s.End(antBilled, nil))
			}
			golden(t, filepath.Join(antTestdata, "stream", name+".golden"), out.Bytes())
		})
	}
}

func antEventLabel(e antEvent) string {
	if len(e.typ) > 0 {
		return string(e.typ)
	}
	return "(unnamed)"
}

func antWriteChunks(t *testing.T, out *bytes.Buffer, chunks []Chunk) {
	t.Helper()
	for _, c := range chunks {
		antCheckChunk(t, c)
		fmt.Fprintf(out, "-> commit=%v text=%q usage=%s\n   %s\n", c.Commit, c.Text, antUsageString(c.Usage), c.Data)
	}
}

// antCheckChunk checks what every chunk must be: valid JSON, without the
// SSE framing, a commit point exactly when it has content or a tool call.
func antCheckChunk(t testing.TB, c Chunk) {
	t.Helper()
	if !jsontext.Value(c.Data).IsValid() {
		t.Fatalf("chunk data is not JSON: %q", c.Data)
	}
	var chunk struct {
		Object  string `json:"object"`
		Choices []struct {
			Delta struct {
				Content   *string          `json:"content"`
				ToolCalls []jsontext.Value `json:"tool_calls"`
			} `json:"delta"`
		} `json:"choices"`
	}
	if err := json.Unmarshal(c.Data, &chunk); err != nil || chunk.Object != "chat.completion.chunk" {
		t.Fatalf("not a chunk (%v): %s", err, c.Data)
	}
	says := false
	for _, ch := range chunk.Choices {
		says = says || (ch.Delta.Content != nil && *ch.Delta.Content != "") || len(ch.Delta.ToolCalls) > 0
	}
	if c.Commit != says {
		t.Fatalf("commit=%v for a chunk that says something=%v: %s", c.Commit, says, c.Data)
	}
}

// TestAnthropicStreamChunksSurviveEnd: End may run before the last
// event's chunks are written, so it must not overwrite them.
func TestAnthropicStreamChunksSurviveEnd(t *testing.T) {
	m := antTestMeta
	m.IncludeUsage = true
	s := openAIToAnthropic().Stream(&m)
	chunks, _, err := s.Event([]byte("message_delta"), []byte(`{"type":"message_delta","delta":{"stop_reason":"end_turn"}}`), nil)
	if err != nil || len(chunks) != 1 {
		t.Fatal(chunks, err)
	}
	before := string(chunks[0].Data)
	chunks = s.End(antBilled, chunks)
	if string(chunks[0].Data) != before {
		t.Errorf("End overwrote the last event's chunk: %s, was %s", chunks[0].Data, before)
	}
	if !strings.Contains(string(chunks[1].Data), `"choices":[],"usage":{"prompt_tokens":31`) {
		t.Errorf("usage chunk %s", chunks[1].Data)
	}
}
