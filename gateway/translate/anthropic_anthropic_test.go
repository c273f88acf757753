package translate

import (
	"bytes"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-json-experiment/json/jsontext"
)

const aaTestdata = "testdata/anthropic_anthropic"

var aaTestMeta = Meta{Alias: "claude-alias", ID: "msg_req1", Created: 1700000000}

// TestAnthropicPassthroughRequest: the body sent is the caller's, byte for
// byte, but for model's value; and it is the caller's bytes, not a copy
// (only the new model is written).
func TestAnthropicPassthroughRequest(t *testing.T) {
	claudeCode := readFile(t, filepath.Join(aaTestdata, "request", "claude_code.json"))
	for _, tc := range []struct {
		name, in, model, want string
	}{
		{"claude code", string(claudeCode), "claude-opus-4-5",
			strings.Replace(string(claudeCode), `"model":"claude-code-alias"`, `"model":"claude-opus-4-5"`, 1)},
		{"model last, spaced", `{ "messages" : [] , "model" : "a" }`, "m", `{ "messages" : [] , "model" : "m" }`},
		{"model added", `{"messages":[],"stream":true}`, "m", `{"messages":[],"stream":true,"model":"m"}`},
		{"model added to an empty object", `{}`, "m", `{"model":"m"}`},
		{"model escaped", `{"model":"a"}`, "m\"<é>\\", `{"model":"m\"<é>\\"}`},
		{"name written with an escape", `{"mod\u0065l":"a","x":1}`, "m", `{"mod\u0065l":"m","x":1}`},
		{"nested model untouched", `{"metadata":{"model":"a"},"model":"b"}`, "m", `{"metadata":{"model":"a"},"model":"m"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body := []byte(tc.in)
			segs, err := Messages(ProtocolAnthropic).Request(&ChatRequest{Body: body, Stream: true}, tc.model)
			if err != nil {
				t.Fatal(err)
			}
			if got := string(bytes.Join(segs, nil)); got != tc.want {
				t.Errorf("sent %s\nwant %s", got, tc.want)
			}
			written := 0
			for _, s := range segs {
				if !within(s, body) {
					written += len(s)
				}
			}
			if max := len(quoted(tc.model)) + len(`,"model":`); written > max {
				t.Errorf("%d B written, not the caller's (at most %d)", written, max)
			}
		})
	}
}

// A body the server should not have let through is an error, not a
// request.
func TestAnthropicPassthroughRequestRejectsNonObjects(t *testing.T) {
	for _, in := range []string{`[1]`, `"model"`, `{"model":"a"`, `{"model":"a","model":"b"}`, ``} {
		if segs, err := Messages(ProtocolAnthropic).Request(&ChatRequest{Body: []byte(in)}, "m"); err == nil {
			t.Errorf("Request(%s) = %q, want an error", in, bytes.Join(segs, nil))
		}
	}
}

// TestAnthropicPassthroughAnswerGolden reads each answer of
// testdata/anthropic_anthropic/answer/<name>.json; the golden file has the
// usage, the text for the gateway's own count and the body as written, or
// the failure. An answer is relayed as the provider sent it but for model:
// the test checks that on the decoded body too.
func TestAnthropicPassthroughAnswerGolden(t *testing.T) {
	for _, tc := range []struct {
		name string
		fail bool
	}{
		{"text", false},              // members the gateway does not know kept; escapes as sent
		{"tool_use", false},          // cache writes and reads count in the prompt, reads cached
		{"no_usage", false},          // Text: thinking, text, server and client tool inputs (compact)
		{"output_only_usage", false}, // no input_tokens: no usage, Text
		{"no_model", false},          // the alias added
		{"error_envelope", true},     // the provider's type and message
		{"error_type_only", true},
		{"not_message", true},
		{"content_malformed", true},
		{"usage_malformed", true},
		{"truncated", true},
		{"trailing", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			raw := readFile(t, filepath.Join(aaTestdata, "answer", tc.name+".json"))
			m := aaTestMeta
			a, err := Messages(ProtocolAnthropic).Answer(raw, &m)
			if (err != nil) != tc.fail {
				t.Fatalf("answer %+v, error %v; want failure %v", a, err, tc.fail)
			}
			var out bytes.Buffer
			if err != nil {
				out.WriteString(failureString(t, err))
			} else {
				if !bytes.HasSuffix(a.Body, []byte("\n")) || !jsontext.Value(a.Body).IsValid() {
					t.Fatalf("body is not one JSON value and a newline: %q", a.Body)
				}
				if (a.Usage == nil) == (a.Text == "") {
					t.Errorf("usage %s, text %q: Text is for answers without usage", usageString(a.Usage), a.Text)
				}
				want := oaiWant(t, raw, func(m map[string]any) { m["model"] = aaTestMeta.Alias })
				if got := canonical(t, a.Body); got != want {
					t.Errorf("body\n%s\nwant (in meaning)\n%s", got, want)
				}
				fmt.Fprintf(&out, "usage: %s\ntext: %q\nbody:\n%s", usageString(a.Usage), a.Text, a.Body)
			}
			golden(t, filepath.Join(aaTestdata, "answer", tc.name+".golden"), out.Bytes())
		})
	}
}

// TestAnthropicPassthroughStreamGolden feeds each transcript of
// testdata/anthropic_anthropic/stream/<name>.sse to a stream, event by
// event, then End; the golden file lists each event's chunks, the end of
// stream or the failure, then End's (none). Each relayed event is checked
// against the one it came from: its bytes, but for message_start, whose
// message has the alias as its model.
func TestAnthropicPassthroughStreamGolden(t *testing.T) {
	for _, name := range []string{
		"text",           // the input counts of message_start, the output of message_delta; ping relayed
		"tool_use",       // commit at the tool_use start; an empty partial_json says nothing
		"thinking_cache", // thinking commits and counts; message_delta's input counts win, its null kept out
		"unknown_event",  // server tool use commits; unknown members and events relayed
		"unnamed_events", // names read from the data
		"error_event",
		"malformed",
		"message_start_without_message",
	} {
		t.Run(name, func(t *testing.T) {
			m := aaTestMeta
			s := Messages(ProtocolAnthropic).Stream(&m)
			var out bytes.Buffer
			var chunks []Chunk
			ended := false
			for _, e := range antParseSSE(readFile(t, filepath.Join(aaTestdata, "stream", name+".sse"))) {
				fmt.Fprintf(&out, "<- %s\n", antEventLabel(e))
				var done bool
				var err error
				chunks, done, err = s.Event(e.typ, e.data, chunks[:0])
				for _, c := range chunks {
					aaCheckRelayed(t, e, c)
					fmt.Fprintf(&out, "-> %s commit=%v text=%q usage=%s\n   %s\n", c.Event, c.Commit, c.Text, usageString(c.Usage), c.Data)
				}
				if err != nil {
					out.WriteString(failureString(t, err))
					ended = true
					break
				}
				if len(chunks) != 1 {
					t.Fatalf("%d chunks for one event, want 1", len(chunks))
				}
				if done {
					out.WriteString("done\n")
					break
				}
			}
			if !ended {
				if end := s.End(antBilled, nil); len(end) != 0 {
					t.Errorf("End added %d chunks", len(end))
				}
			}
			golden(t, filepath.Join(aaTestdata, "stream", name+".golden"), out.Bytes())
		})
	}
}

// aaCheckRelayed checks a relayed chunk against its event: named as the
// event (or as its data's type), its data the event's bytes, but for
// message_start, the same in meaning with the alias as the message's
// model.
func aaCheckRelayed(t *testing.T, e antEvent, c Chunk) {
	t.Helper()
	name := string(e.typ)
	if name == "" {
		name, _ = decodeObject(t, e.data)["type"].(string)
	}
	if c.Event != name {
		t.Errorf("event %q relayed as %q", name, c.Event)
	}
	if name != "message_start" {
		if !bytes.Equal(c.Data, e.data) {
			t.Errorf("relayed %s\nwant %s", c.Data, e.data)
		}
		return
	}
	want := oaiWant(t, e.data, func(m map[string]any) { m["message"].(map[string]any)["model"] = aaTestMeta.Alias })
	if got := canonical(t, c.Data); got != want {
		t.Errorf("relayed %s\nwant (in meaning) %s", got, want)
	}
}

// TestAnthropicPassthroughStreamUsage: the counts are reported on the
// chunk that completes them, in the gateway's semantics (the prompt's
// tokens include cache writes and reads); a later event's member replaces
// an earlier one, a member it leaves out or sends null does not.
func TestAnthropicPassthroughStreamUsage(t *testing.T) {
	start := func(usage string) string {
		return `{"type":"message_start","message":{"model":"c","content":[],"usage":` + usage + `}}`
	}
	delta := func(usage string) string {
		return `{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":` + usage + `}`
	}
	for _, tc := range []struct {
		name   string
		events []string
		want   string // the usage of the last event's chunk
	}{
		{"start and delta", []string{start(`{"input_tokens":10,"output_tokens":1}`), delta(`{"output_tokens":7}`)}, "input=10 cached=0 output=7 reasoning=0"},
		{"start's output is no answer", []string{start(`{"input_tokens":10,"output_tokens":1}`)}, "none"},
		{"cache", []string{start(`{"input_tokens":2,"cache_creation_input_tokens":30,"cache_read_input_tokens":400,"output_tokens":1}`), delta(`{"output_tokens":7}`)}, "input=432 cached=400 output=7 reasoning=0"},
		{"delta's counts win", []string{start(`{"input_tokens":2,"cache_read_input_tokens":400}`), delta(`{"input_tokens":3,"cache_read_input_tokens":500,"output_tokens":7}`)}, "input=503 cached=500 output=7 reasoning=0"},
		{"null kept out", []string{start(`{"input_tokens":2,"cache_read_input_tokens":400}`), delta(`{"input_tokens":null,"cache_read_input_tokens":null,"output_tokens":7}`)}, "input=402 cached=400 output=7 reasoning=0"},
		{"input only in the delta", []string{start(`{}`), delta(`{"input_tokens":3,"output_tokens":7}`)}, "input=3 cached=0 output=7 reasoning=0"},
		{"no input at all", []string{start(`{"output_tokens":1}`), delta(`{"output_tokens":7}`)}, "none"},
		{"no usage in the delta", []string{start(`{"input_tokens":2}`), `{"type":"message_delta","delta":{"stop_reason":"end_turn"}}`}, "none"},
		{"second delta reports again", []string{start(`{"input_tokens":2}`), delta(`{"output_tokens":7}`), delta(`{"output_tokens":9}`)}, "input=2 cached=0 output=9 reasoning=0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := aaTestMeta
			s := Messages(ProtocolAnthropic).Stream(&m)
			var chunks []Chunk
			for _, ev := range tc.events {
				var err error
				if chunks, _, err = s.Event(nil, []byte(ev), chunks[:0]); err != nil {
					t.Fatal(err)
				}
			}
			if got := usageString(chunks[len(chunks)-1].Usage); got != tc.want {
				t.Errorf("usage %s, want %s", got, tc.want)
			}
		})
	}
}

// TestAnthropicPassthroughCommit: an event is the commit point when it
// says something: a tool call's start, a delta with text, input or
// thinking, a block that starts with text; and its text is what the caller
// is billed for.
func TestAnthropicPassthroughCommit(t *testing.T) {
	for _, tc := range []struct {
		name, data string
		commit     bool
		text       string
	}{
		{"text delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hi"}}`, true, "Hi"},
		{"empty text delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":""}}`, false, ""},
		{"input piece", `{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\"a\""}}`, true, `{"a"`},
		{"empty input piece", `{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":""}}`, false, ""},
		{"thinking", `{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"hmm"}}`, true, "hmm"},
		{"signature", `{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"abc"}}`, false, ""},
		{"unknown delta", `{"type":"content_block_delta","index":0,"delta":{"type":"citations_delta","citation":{}}}`, false, ""},
		{"tool_use start", `{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"t","name":"f","input":{}}}`, true, ""},
		{"server_tool_use start", `{"type":"content_block_start","index":0,"content_block":{"type":"server_tool_use","id":"t","name":"web_search","input":{}}}`, true, ""},
		{"empty text start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`, false, ""},
		{"text start with text", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":"Hi"}}`, true, "Hi"},
		{"thinking start", `{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"","signature":""}}`, false, ""},
		{"tool result start", `{"type":"content_block_start","index":1,"content_block":{"type":"web_search_tool_result","tool_use_id":"t","content":[]}}`, false, ""},
		{"unknown block of unknown members", `{"type":"content_block_start","index":1,"content_block":{"type":"future_block","source":"x","text":{"a":1}}}`, false, ""},
		{"stop", `{"type":"content_block_stop","index":0}`, false, ""},
		{"ping", `{"type":"ping"}`, false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := aaTestMeta
			chunks, done, err := Messages(ProtocolAnthropic).Stream(&m).Event(nil, []byte(tc.data), nil)
			if err != nil || done || len(chunks) != 1 {
				t.Fatal(chunks, done, err)
			}
			if c := chunks[0]; c.Commit != tc.commit || c.Text != tc.text || !bytes.Equal(c.Data, []byte(tc.data)) {
				t.Errorf("commit %v text %q data %s; want commit %v text %q", c.Commit, c.Text, c.Data, tc.commit, tc.text)
			}
		})
	}
}

// TestAnthropicPassthroughStreamEnds: message_stop ends the stream
// (relayed); an error event and data that is not the JSON its type
// promises are failures, with nothing relayed.
func TestAnthropicPassthroughStreamEnds(t *testing.T) {
	for _, tc := range []struct {
		name, typ, data string
		done            bool
		failure         string
	}{
		{"message_stop", "message_stop", `{"type":"message_stop"}`, true, ""},
		{"error", "error", `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`, false, `failure: malformed=false type="overloaded_error" message="Overloaded"` + "\n"},
		{"error unnamed", "", `{"type":"error","error":{"type":"api_error","message":"Internal"}}`, false, `failure: malformed=false type="api_error" message="Internal"` + "\n"},
		{"unreadable error", "error", `{"type":"error","error":"boom"}`, false, `failure: malformed=true type="" message="malformed stream event JSON"` + "\n"},
		{"malformed delta", "content_block_delta", `{"type":"content_block_delta","index":"0"}`, false, `failure: malformed=true type="" message="malformed stream event JSON"` + "\n"},
		{"malformed start", "content_block_start", `{"type":"content_block_start","content_block":[]}`, false, `failure: malformed=true type="" message="malformed stream event JSON"` + "\n"},
		{"malformed message_delta", "message_delta", `{"type":"message_delta","usage":{"output_tokens":"x"}}`, false, `failure: malformed=true type="" message="malformed stream event JSON"` + "\n"},
		{"malformed message_start usage", "message_start", `{"type":"message_start","message":{"usage":{"input_tokens":[]}}}`, false, `failure: malformed=true type="" message="malformed stream event JSON"` + "\n"},
		{"message not an object", "message_start", `{"type":"message_start","message":null}`, false, `failure: malformed=true type="" message="malformed stream event JSON"` + "\n"},
		{"unnamed without type", "", `{"index":0}`, false, `failure: malformed=true type="" message="malformed stream event JSON"` + "\n"},
		{"not JSON", "ping", `ping`, false, `failure: malformed=true type="" message="malformed stream event JSON"` + "\n"},
		{"trailing data", "message_stop", `{"type":"message_stop"}{}`, false, `failure: malformed=true type="" message="malformed stream event JSON"` + "\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := aaTestMeta
			chunks, done, err := Messages(ProtocolAnthropic).Stream(&m).Event([]byte(tc.typ), []byte(tc.data), nil)
			got := ""
			if err != nil {
				got = failureString(t, err)
			}
			if done != tc.done || got != tc.failure || (err != nil && len(chunks) != 0) {
				t.Errorf("chunks %v done %v %q; want done %v %q", chunks, done, got, tc.done, tc.failure)
			}
		})
	}
}
