package translate

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// FuzzOpenAIPassthroughStream feeds arbitrary events (one a line) to a
// pass-through stream: it never panics; an event either yields one chunk,
// ends the stream or fails with a *Failure; every chunk sent is JSON whose
// model is the alias, without usage unless the caller asked for it, and,
// for an event that is valid JSON, the event in meaning but for model and
// usage; End's chunks too.
//
//	go test -run='^$' -fuzz=FuzzOpenAIPassthroughStream ./gateway/translate/
func FuzzOpenAIPassthroughStream(f *testing.F) {
	for _, name := range []string{"text", "tool_calls", "reasoning", "usage_every_chunk", "no_usage", "error_chunk", "malformed"} {
		b, err := os.ReadFile(filepath.Join(oaiTestdata, "stream", name+".sse"))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(bytes.Join(oaiEvents(b), []byte("\n")), true)
		f.Add(bytes.Join(oaiEvents(b), []byte("\n")), false)
	}
	for _, s := range []string{
		`{}`,
		`{"model":1,"model":null,"usage":{},"usage":null}`,
		`{"choices":[null,{"delta":{"tool_calls":[null,{}]}},{"delta":{"function_call":null}}]}`,
		`{"choices":[{"delta":{"content":"\ud800"}}],"mod\u0065l":"x","usag\u0065":{"prompt_tokens":1}}`,
		"{\"id\":\"\xff\",\"created\":\"x\",\"choices\":[]}",
		`{"error":null,"choices":[]}` + "\n" + `{"error":{"code":5}}`,
		`{"choices":[]}  ` + "\n" + `[DONE]` + "\n" + `{"choices":[{"delta":{"content":"after"}}]}`,
		`{"usage":{"prompt_tokens":1e400}}`,
	} {
		f.Add([]byte(s), true)
		f.Add([]byte(s), false)
	}
	f.Fuzz(func(t *testing.T, body []byte, includeUsage bool) {
		m := oaiMeta
		m.IncludeUsage = includeUsage
		s := Chat(ProtocolOpenAI).Stream(&m)
		var chunks []Chunk
		ended := false
		for event := range bytes.SplitSeq(body, []byte("\n")) {
			var done bool
			var err error
			chunks, done, err = s.Event(nil, event, chunks[:0])
			if err != nil {
				var f *Failure
				if !errors.As(err, &f) || len(chunks) != 0 {
					t.Fatalf("Event(%q): %d chunks, error %T %v", event, len(chunks), err, err)
				}
				ended = true
				break
			}
			if done {
				if len(chunks) != 0 || !bytes.Equal(event, doneMarker) {
					t.Fatalf("Event(%q): done with %d chunks", event, len(chunks))
				}
				break
			}
			if len(chunks) != 1 {
				t.Fatalf("Event(%q): %d chunks", event, len(chunks))
			}
			fuzzCheckChunk(t, chunks[0], includeUsage)
			fuzzCheckRelayed(t, event, chunks[0], includeUsage)
		}
		if ended {
			return
		}
		n := len(chunks)
		chunks = s.End(Usage{InputTokens: 1, OutputTokens: 2}, chunks)
		if !includeUsage && len(chunks) != n {
			t.Fatalf("End added %d chunks the caller did not ask for", len(chunks)-n)
		}
		for _, c := range chunks[n:] {
			if c.Data == nil || c.Commit {
				t.Fatalf("End's chunk %+v", c)
			}
			fuzzCheckChunk(t, c, true)
		}
	})
}

// fuzzCheckChunk: what every chunk sent must be.
func fuzzCheckChunk(t *testing.T, c Chunk, includeUsage bool) {
	t.Helper()
	if c.Text != "" && !c.Commit {
		t.Fatalf("chunk with text %q is no commit point", c.Text)
	}
	if c.Data == nil {
		if includeUsage || c.Usage == nil {
			t.Fatalf("a chunk not sent: %+v", c)
		}
		return
	}
	v := jsontext.Value(c.Data)
	if v.Kind() != '{' || !v.IsValid(passLenient...) {
		t.Fatalf("chunk data is not a JSON object: %q", c.Data)
	}
	var got struct {
		Model *string        `json:"model"`
		Usage jsontext.Value `json:"usage"`
	}
	if err := json.Unmarshal(c.Data, &got, lenient); err != nil {
		t.Fatalf("chunk %q: %v", c.Data, err)
	}
	if got.Model == nil || *got.Model != oaiMeta.Alias {
		t.Fatalf("chunk model %v, want the alias: %q", got.Model, c.Data)
	}
	if !includeUsage && got.Usage != nil {
		t.Fatalf("usage sent to a caller who did not ask: %q", c.Data)
	}
}

// fuzzCheckRelayed: a chunk of an event that is plain JSON (no repeated
// name, valid UTF-8) is that event in meaning but for model, and for
// usage when the caller did not ask for it.
func fuzzCheckRelayed(t *testing.T, event []byte, c Chunk, includeUsage bool) {
	t.Helper()
	if c.Data == nil || !jsontext.Value(event).IsValid() {
		return
	}
	var in, out map[string]any
	if json.Unmarshal(event, &in) != nil || json.Unmarshal(c.Data, &out) != nil {
		return // numbers beyond float64: both sides or neither, not the translator's concern
	}
	in["model"] = oaiMeta.Alias
	if !includeUsage {
		delete(in, "usage")
	}
	if !reflect.DeepEqual(in, out) {
		t.Fatalf("event %s\nrelayed as %s", event, c.Data)
	}
}

// FuzzOpenAIPassthroughRequest: for any JSON object a caller can send, the
// body sent is that object with model set, and in a stream include_usage.
func FuzzOpenAIPassthroughRequest(f *testing.F) {
	for _, name := range []string{"unknown_members", "stream_options_kept", "stream_options_null", "escaped_names"} {
		b, err := os.ReadFile(filepath.Join(oaiTestdata, "request", name+".json"))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b, true)
	}
	f.Add([]byte(`{}`), false)
	f.Add([]byte(` { "stream_options" : [ ] } `), true)
	f.Fuzz(func(t *testing.T, body []byte, stream bool) {
		if v := jsontext.Value(body); !v.IsValid() || v.Kind() != '{' {
			return // the server lets only JSON objects through
		}
		segs, err := Chat(ProtocolOpenAI).Request(&ChatRequest{Body: body, Stream: stream}, "m")
		if err != nil {
			t.Fatalf("Request(%s): %v", body, err)
		}
		got := bytes.Join(segs, nil)
		if !jsontext.Value(got).IsValid() {
			t.Fatalf("Request(%s) = %s, not JSON", body, got)
		}
		var in, out map[string]any
		if json.Unmarshal(body, &in) != nil {
			return
		}
		if err := json.Unmarshal(got, &out); err != nil {
			t.Fatalf("Request(%s) = %s: %v", body, got, err)
		}
		in["model"] = "m"
		if stream {
			opts, _ := in["stream_options"].(map[string]any)
			if opts == nil {
				opts = map[string]any{}
			}
			opts["include_usage"] = true
			in["stream_options"] = opts
		}
		if !reflect.DeepEqual(in, out) {
			t.Fatalf("Request(%s) = %s", body, got)
		}
	})
}

// FuzzOpenAIPassthroughAnswer: an answer is read or fails with a *Failure,
// never panics; one read is JSON with the alias as model.
func FuzzOpenAIPassthroughAnswer(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join(oaiTestdata, "answer", "*.json"))
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		m := oaiMeta
		a, err := Chat(ProtocolOpenAI).Answer(raw, &m)
		if err != nil {
			var f *Failure
			if !errors.As(err, &f) {
				t.Fatalf("error %T %v", err, err)
			}
			return
		}
		fuzzCheckChunk(t, Chunk{Data: bytes.TrimSuffix(a.Body, []byte("\n"))}, true)
		if a.Usage != nil && a.Text != "" {
			t.Fatalf("Text %q with usage", a.Text)
		}
	})
}
