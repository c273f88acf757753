package translate

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// fuzzSeed adds every file of dir whose name ends in ext (and not in
// .golden.json) to the corpus, through add.
func fuzzSeed(f *testing.F, dir, ext string, add func([]byte)) {
	paths, err := filepath.Glob(filepath.Join(dir, "*"+ext))
	if err != nil || len(paths) == 0 {
		f.Fatalf("no seeds in %s: %v", dir, err)
	}
	for _, p := range paths {
		if strings.HasSuffix(p, ".golden.json") {
			continue
		}
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		add(b)
	}
}

// FuzzAnthropicPassthroughRequest: for any JSON object a caller can send,
// Request does not panic, and the body sent is that object with model set
// (whatever the model's name), written from the caller's bytes but for the
// model.
//
//	go test -run='^$' -fuzz=FuzzAnthropicPassthroughRequest ./gateway/translate/
func FuzzAnthropicPassthroughRequest(f *testing.F) {
	fuzzSeed(f, filepath.Join(aaTestdata, "request"), ".json", func(b []byte) { f.Add(b, "claude-opus-4-5") })
	fuzzSeed(f, filepath.Join(aoTestdata, "request"), ".json", func(b []byte) { f.Add(b, "m") })
	f.Add([]byte(` { } `), "m\"<\u2028>")
	f.Add([]byte(`{"mod\u0065l":1,"x":{"model":2}}`), "\xff")
	f.Fuzz(func(t *testing.T, body []byte, model string) {
		if v := jsontext.Value(body); !v.IsValid() || v.Kind() != '{' {
			return // the server lets only JSON objects through
		}
		segs, err := Messages(ProtocolAnthropic).Request(&ChatRequest{Body: body}, model)
		if err != nil {
			t.Fatalf("Request(%s): %v", body, err)
		}
		got := bytes.Join(segs, nil)
		if !jsontext.Value(got).IsValid() {
			t.Fatalf("Request(%s) = %s, not JSON", body, got)
		}
		written := 0
		for _, s := range segs {
			if !within(s, body) {
				written += len(s)
			}
		}
		if max := len(quoted(model)) + len(`,"model":`); written > max {
			t.Fatalf("Request(%s): %d B written, not the caller's", body, written)
		}
		var in, out map[string]any
		if json.Unmarshal(body, &in) != nil {
			return // numbers beyond float64: not the translator's concern
		}
		if err := json.Unmarshal(got, &out); err != nil {
			t.Fatalf("Request(%s) = %s: %v", body, got, err)
		}
		// Each byte of invalid UTF-8 in the name is sent as U+FFFD, as
		// ranging over the string reads it.
		var name strings.Builder
		for _, r := range model {
			name.WriteRune(r)
		}
		in["model"] = name.String()
		if !reflect.DeepEqual(in, out) {
			t.Fatalf("Request(%s) = %s", body, got)
		}
	})
}

// FuzzAnthropicToOpenAIRequest: whatever the body, Request does not
// panic, and either refuses it with a *NotCarried that has a reason, or
// writes a compact, valid chat-completions request (aoCheckRequest).
//
//	go test -run='^$' -fuzz=FuzzAnthropicToOpenAIRequest ./gateway/translate/
func FuzzAnthropicToOpenAIRequest(f *testing.F) {
	fuzzSeed(f, filepath.Join(aoTestdata, "request"), ".json", func(b []byte) { f.Add(b, false); f.Add(b, true) })
	f.Add([]byte(`{"messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":[{"type":"text","text":"a"}],"is_error":true},{"type":"image","source":{"type":"base64","media_type":"image/png","data":"`+strings.Repeat("QUJD", 1100)+`"}}]}]}`), false)
	f.Add([]byte(`{"messages":[{"role":"assistant","content":[{"type":"tool_use","id":"t","name":"f","input":{ "a" : [1, {"b":null}] }}]}],"tools":[{"type":"custom","name":"f","strict":false}],"tool_choice":{"type":"tool","name":"f","disable_parallel_tool_use":false}}`), true)
	f.Fuzz(func(t *testing.T, body []byte, stream bool) {
		segs, err := aoRequest(body, stream)
		if err != nil {
			var nc *NotCarried
			if !errors.As(err, &nc) || nc.Reason == "" {
				t.Fatalf("error %T %v, want a *NotCarried with a reason", err, err)
			}
			return
		}
		aoCheckRequest(t, bytes.Join(segs, nil), stream)
	})
}

// FuzzOpenAIStreamToAnthropic: whatever the chunks (one a line), the
// stream does not panic, fails only with a *Failure, and writes a
// well-formed Messages stream (aoCheckEvents), whole once End closed it.
//
//	go test -run='^$' -fuzz=FuzzOpenAIStreamToAnthropic ./gateway/translate/
func FuzzOpenAIStreamToAnthropic(f *testing.F) {
	fuzzSeed(f, filepath.Join(aoTestdata, "stream"), ".sse", func(b []byte) { f.Add(bytes.Join(oaiEvents(b), []byte("\n"))) })
	f.Add([]byte(`{"choices":[{"delta":{"tool_calls":[{"index":1,"function":{"arguments":"x"}},{"index":0,"id":"a"},{"index":1,"function":{"arguments":"y"}}]}}]}` + "\n" +
		`{"choices":[{"delta":{"content":"t","tool_calls":[{"index":0,"id":"b","function":{"name":"g"}}]},"finish_reason":"stop"}],"usage":{"prompt_tokens":3}}`))
	f.Fuzz(func(t *testing.T, transcript []byte) {
		m := aoTestMeta
		s := Messages(ProtocolOpenAI).Stream(&m)
		var all, chunks []Chunk
		for event := range bytes.SplitSeq(transcript, []byte("\n")) {
			var done bool
			var err error
			chunks, done, err = s.Event(nil, event, chunks[:0])
			all = aoKeep(all, chunks)
			if err != nil {
				var fl *Failure
				if !errors.As(err, &fl) {
					t.Fatalf("Event(%q): error %T %v, want a *Failure", event, err, err)
				}
				aoCheckEvents(t, all, false)
				return
			}
			if done {
				break
			}
		}
		aoCheckEvents(t, aoKeep(all, s.End(Usage{InputTokens: 3, CachedInputTokens: 1, OutputTokens: 2}, nil)), true)
	})
}

// FuzzAnthropicPassthroughStream: whatever the events, the stream does not
// panic; an event either yields one chunk named as the event, its data the
// event's bytes (message_start's with the alias as model), or fails with a
// *Failure; End adds nothing.
//
//	go test -run='^$' -fuzz=FuzzAnthropicPassthroughStream ./gateway/translate/
func FuzzAnthropicPassthroughStream(f *testing.F) {
	fuzzSeed(f, filepath.Join(aaTestdata, "stream"), ".sse", func(b []byte) { f.Add(b) })
	f.Fuzz(func(t *testing.T, transcript []byte) {
		m := aaTestMeta
		s := Messages(ProtocolAnthropic).Stream(&m)
		var chunks []Chunk
		for _, e := range antParseSSE(transcript) {
			var done bool
			var err error
			chunks, done, err = s.Event(e.typ, e.data, chunks[:0])
			if err != nil {
				var fl *Failure
				if !errors.As(err, &fl) || len(chunks) != 0 {
					t.Fatalf("Event(%q, %q): %d chunks, error %T %v", e.typ, e.data, len(chunks), err, err)
				}
				return
			}
			if len(chunks) != 1 || chunks[0].Event == "" || (len(e.typ) > 0 && chunks[0].Event != string(e.typ)) {
				t.Fatalf("Event(%q, %q): chunks %+v", e.typ, e.data, chunks)
			}
			c := chunks[0]
			if c.Text != "" && !c.Commit {
				t.Fatalf("chunk with text %q is no commit point", c.Text)
			}
			if c.Event != "message_start" && !bytes.Equal(c.Data, e.data) {
				t.Fatalf("Event(%q, %q) relayed %q", e.typ, e.data, c.Data)
			}
			if !jsontext.Value(c.Data).IsValid(lenient) {
				t.Fatalf("Event(%q, %q) relayed %q, not JSON", e.typ, e.data, c.Data)
			}
			if done {
				break
			}
		}
		if len(s.End(Usage{}, nil)) != 0 {
			t.Fatal("End added chunks")
		}
	})
}

// FuzzOpenAIAnswerToAnthropic: whatever the answer, Answer does not panic,
// and either fails with a *Failure or writes a Messages answer
// (aoCheckAnswer).
//
//	go test -run='^$' -fuzz=FuzzOpenAIAnswerToAnthropic ./gateway/translate/
func FuzzOpenAIAnswerToAnthropic(f *testing.F) {
	fuzzSeed(f, filepath.Join(aoTestdata, "answer"), ".json", func(b []byte) { f.Add(b) })
	f.Add([]byte("{\"choices\":[{\"message\":{\"content\":\"\xff\",\"tool_calls\":[{\"function\":{\"arguments\":\"{\\\"a\\\":\\\"\xfe\\\",\\\"a\\\":1}\"}}]}}]}"))
	f.Fuzz(func(t *testing.T, raw []byte) {
		m := aoTestMeta
		a, err := Messages(ProtocolOpenAI).Answer(raw, &m)
		if err != nil {
			var fl *Failure
			if !errors.As(err, &fl) {
				t.Fatalf("error %T %v, want a *Failure", err, err)
			}
			return
		}
		aoCheckAnswer(t, a)
	})
}
