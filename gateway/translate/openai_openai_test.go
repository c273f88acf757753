package translate

import (
	"bytes"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"unsafe"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

const oaiTestdata = "testdata/openai_openai"

// passLenient reads what the pass-through relays: the provider's bytes as
// sent, which may repeat a name or hold invalid UTF-8.
var passLenient = []jsontext.Options{jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true)}

// canonical is b in RFC 8785 canonical form: two JSON texts that mean the
// same have the same canonical form, whatever their spacing, member order
// and escapes.
func canonical(t testing.TB, b []byte) string {
	t.Helper()
	v := jsontext.Value(bytes.Clone(b))
	if err := v.Canonicalize(); err != nil {
		t.Fatalf("canonicalize %s: %v", b, err)
	}
	return string(v)
}

// decodeObject is b as a generic JSON object.
func decodeObject(t testing.TB, b []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("decode %s: %v", b, err)
	}
	return m
}

func encodeObject(t testing.TB, m map[string]any) []byte {
	t.Helper()
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// oaiWant is what a pass-through of the object in must mean: in with the
// changes of edit made, computed on the decoded object, not on the bytes.
func oaiWant(t testing.TB, in []byte, edit func(m map[string]any)) string {
	t.Helper()
	m := decodeObject(t, in)
	edit(m)
	return canonical(t, encodeObject(t, m))
}

// TestOpenAIPassthroughRequest: the body sent is the caller's in meaning
// with only model changed, and in a stream stream_options.include_usage
// set with the other stream options kept. The golden file is the body as
// sent, byte for byte: what lies outside the changed values is the
// caller's, spacing and escapes included.
func TestOpenAIPassthroughRequest(t *testing.T) {
	for _, tc := range []struct {
		name   string
		stream bool
	}{
		{"unknown_members", false},              // tools, response_format, vendor members, images, escapes: all kept
		{"unknown_members", true},               // and stream_options added at the end
		{"stream_options_kept", true},           // include_usage false → true, the other options kept
		{"stream_options_null", true},           // null → the object
		{"stream_no_options", true},             // the member added
		{"not_stream_options_untouched", false}, // no stream: the caller's options are the caller's
		{"escaped_names", true},                 // names written with escapes are the same members
	} {
		name := tc.name
		if tc.stream {
			name += ".stream"
		}
		t.Run(name, func(t *testing.T) {
			in := readFile(t, filepath.Join(oaiTestdata, "request", tc.name+".json"))
			in = bytes.TrimSpace(in)
			segs, err := Chat(ProtocolOpenAI).Request(&ChatRequest{Body: in, Stream: tc.stream}, "gpt-4.1-mini")
			if err != nil {
				t.Fatal(err)
			}
			got := bytes.Join(segs, nil)
			if !jsontext.Value(got).IsValid() {
				t.Fatalf("invalid JSON sent: %s", got)
			}
			want := oaiWant(t, in, func(m map[string]any) {
				m["model"] = "gpt-4.1-mini"
				if !tc.stream {
					return
				}
				opts, _ := m["stream_options"].(map[string]any)
				if opts == nil {
					opts = map[string]any{}
				}
				opts["include_usage"] = true
				m["stream_options"] = opts
			})
			if c := canonical(t, got); c != want {
				t.Errorf("sent\n%s\nwant (in meaning)\n%s", c, want)
			}
			golden(t, filepath.Join(oaiTestdata, "request", name+".golden.json"), append(got, '\n'))
		})
	}
}

// TestOpenAIPassthroughRequestEdits covers the edits' spelling on short
// bodies: where a member is added, a model name that needs escaping, an
// object with nothing but spaces in it.
func TestOpenAIPassthroughRequestEdits(t *testing.T) {
	for _, tc := range []struct {
		name, in, model string
		stream          bool
		want            string
	}{
		{"model replaced in place", `{"messages":[],"model":"a","n":1}`, "m", false, `{"messages":[],"model":"m","n":1}`},
		{"model added", `{"messages":[]}`, "m", false, `{"messages":[],"model":"m"}`},
		{"model added to an empty object", `{ }`, "m", false, `{ "model":"m"}`},
		{"two members added to an empty object", `{}`, "m", true, `{"model":"m","stream_options":{"include_usage":true}}`},
		{"model escaped", `{"model":"a"}`, "m\"<é>\\", false, `{"model":"m\"<é>\\"}`},
		{"stream options added after model", `{"model":"a","stream":true}`, "m", true, `{"model":"m","stream":true,"stream_options":{"include_usage":true}}`},
		{"stream options before model", `{"stream_options":{},"model":"a"}`, "m", true, `{"stream_options":{"include_usage":true},"model":"m"}`},
		{"include_usage false replaced, other options kept", `{"model":"a","stream_options":{"include_usage":false,"x":1}}`, "m", true,
			`{"model":"m","stream_options":{"x":1,"include_usage":true}}`},
		{"stream options not an object", `{"model":"a","stream_options":true}`, "m", true, `{"model":"m","stream_options":{"include_usage":true}}`},
		{"nested model untouched", `{"x":{"model":"a"},"model":"b"}`, "m", false, `{"x":{"model":"a"},"model":"m"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			segs, err := Chat(ProtocolOpenAI).Request(&ChatRequest{Body: []byte(tc.in), Stream: tc.stream}, tc.model)
			if err != nil {
				t.Fatal(err)
			}
			if got := string(bytes.Join(segs, nil)); got != tc.want {
				t.Errorf("sent %s, want %s", got, tc.want)
			}
		})
	}
}

// A body the server should not have let through is an error, not a
// request: the translator reads it strictly.
func TestOpenAIPassthroughRequestRejectsNonObjects(t *testing.T) {
	for _, in := range []string{`[1]`, `"model"`, `{"model":"a"`, `{"model":"a","model":"b"}`, ``} {
		if segs, err := Chat(ProtocolOpenAI).Request(&ChatRequest{Body: []byte(in)}, "m"); err == nil {
			t.Errorf("Request(%s) = %q, want an error", in, bytes.Join(segs, nil))
		}
	}
}

// within reports whether s lies in the memory of b.
func within(s, b []byte) bool {
	if len(s) == 0 {
		return true
	}
	lo := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	p := uintptr(unsafe.Pointer(unsafe.SliceData(s)))
	return p >= lo && p+uintptr(len(s)) <= lo+uintptr(len(b))
}

// A large body is not copied: the segments sent are the caller's bytes
// but for the few the gateway writes, so that a request holds one copy.
func TestOpenAIPassthroughRequestSharesTheBody(t *testing.T) {
	image := "data:image/png;base64," + strings.Repeat("iVBORw0KGgo", 200_000) // 2.2 MB
	body := []byte(`{"model":"chat-alpha","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"` +
		image + `"}}]}],"stream":true,"tools":[{"type":"function","function":{"name":"f"}}]}`)
	for _, pair := range []struct {
		name    string
		request func() ([][]byte, error)
	}{
		{"chat", func() ([][]byte, error) {
			return Chat(ProtocolOpenAI).Request(&ChatRequest{Body: body, Stream: true}, "gpt-4.1")
		}},
		{"embeddings", func() ([][]byte, error) {
			return Embeddings(ProtocolOpenAI).Request(&EmbeddingRequest{Body: body}, "gpt-4.1")
		}},
	} {
		t.Run(pair.name, func(t *testing.T) {
			segs, err := pair.request()
			if err != nil {
				t.Fatal(err)
			}
			shared, written := 0, 0
			for _, s := range segs {
				if within(s, body) {
					shared += len(s)
				} else {
					written += len(s)
				}
			}
			if shared < len(body)-len(`"chat-alpha"`) || written > 64 {
				t.Fatalf("%d B shared with the caller's body, %d B written (body %d B)", shared, written, len(body))
			}
			// Seen the other way: a change to the caller's bytes shows in the segments.
			at := bytes.Index(body, []byte("iVBOR"))
			body[at] = 'X'
			defer func() { body[at] = 'i' }()
			if !bytes.Contains(bytes.Join(segs, nil), []byte(`base64,XVBOR`)) {
				t.Fatal("the segments do not share the caller's bytes")
			}
		})
	}
}

// oaiMeta is the Meta of the pass-through tests.
var oaiMeta = Meta{Alias: "chat-alpha", ID: "chatcmpl-req1", Created: 1700000000}

func usageString(u *Usage) string {
	if u == nil {
		return "none"
	}
	return fmt.Sprintf("input=%d cached=%d output=%d reasoning=%d", u.InputTokens, u.CachedInputTokens, u.OutputTokens, u.ReasoningTokens)
}

func failureString(t testing.TB, err error) string {
	t.Helper()
	var f *Failure
	if !errors.As(err, &f) {
		t.Fatalf("error %T %v, want a *Failure", err, err)
	}
	return fmt.Sprintf("failure: malformed=%v type=%q message=%q\n", f.Malformed, f.Type, f.Message)
}

// TestOpenAIPassthroughAnswer reads each answer of
// testdata/openai_openai/answer/<name>.json; the golden file has the usage,
// the text for the gateway's own count and the body as written, or the
// failure. An answer is relayed as the provider sent it but for model: the
// test checks that on the decoded body too.
func TestOpenAIPassthroughAnswer(t *testing.T) {
	for _, tc := range []struct {
		name string
		fail bool
	}{
		{"tool_calls", false},           // calls, details of usage, vendor members kept; model the alias
		{"refusal_no_usage", false},     // no usage: Text the refusal
		{"logprobs_vendor", false},      // logprobs, reasoning_content, x_groq, filter results: kept
		{"two_choices_no_usage", false}, // usage null: Text every choice's content and arguments
		{"no_model", false},             // a server that leaves model out: the alias added
		{"usage_null_details", false},   // details null: zero
		{"error_null", false},           // "error": null is no error
		{"error_envelope", true},        // the provider's type and message
		{"error_code_only", true},       // type null: the code is the type
		{"error_string", true},          // a proxy's text
		{"error_number", true},          // unreadable error: malformed
		{"no_choices", true},
		{"missing_choices", true},
		{"choices_not_array", true},
		{"usage_malformed", true},
		{"truncated", true},
		{"html", true},
		{"trailing", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			raw := readFile(t, filepath.Join(oaiTestdata, "answer", tc.name+".json"))
			m := oaiMeta
			a, err := Chat(ProtocolOpenAI).Answer(raw, &m)
			var out bytes.Buffer
			if (err != nil) != tc.fail {
				t.Fatalf("answer %+v, error %v; want failure %v", a, err, tc.fail)
			}
			if err != nil {
				out.WriteString(failureString(t, err))
			} else {
				if !bytes.HasSuffix(a.Body, []byte("\n")) || !jsontext.Value(a.Body).IsValid() {
					t.Fatalf("body is not one JSON value and a newline: %q", a.Body)
				}
				if a.Usage != nil && a.Text != "" {
					t.Errorf("Text %q with Usage %v: Text is for answers without usage", a.Text, a.Usage)
				}
				want := oaiWant(t, raw, func(m map[string]any) { m["model"] = "chat-alpha" })
				if got := canonical(t, a.Body); got != want {
					t.Errorf("body\n%s\nwant (in meaning)\n%s", got, want)
				}
				fmt.Fprintf(&out, "usage: %s\ntext: %q\nbody:\n%s", usageString(a.Usage), a.Text, a.Body)
			}
			golden(t, filepath.Join(oaiTestdata, "answer", tc.name+".golden"), out.Bytes())
		})
	}
}

// TestOpenAIPassthroughAnswerUsage: the counts and their details as the
// provider reported them; the text for the gateway's own count only when it
// reported none.
func TestOpenAIPassthroughAnswerUsage(t *testing.T) {
	const choice = `"choices":[{"index":0,"message":{"role":"assistant","content":"ab","refusal":"c","tool_calls":[{"function":{"arguments":"{\"d\":1}"}}]}}]`
	for _, tc := range []struct {
		name, usage string
		want        *Usage
		text        string
	}{
		{"details", `{"prompt_tokens":10,"completion_tokens":7,"total_tokens":17,"prompt_tokens_details":{"cached_tokens":4,"audio_tokens":0},"completion_tokens_details":{"reasoning_tokens":3}}`,
			&Usage{InputTokens: 10, OutputTokens: 7, CachedInputTokens: 4, ReasoningTokens: 3}, ""},
		{"no details", `{"prompt_tokens":10,"completion_tokens":7}`, &Usage{InputTokens: 10, OutputTokens: 7}, ""},
		{"empty details", `{"prompt_tokens":10,"completion_tokens":7,"prompt_tokens_details":{},"completion_tokens_details":{}}`,
			&Usage{InputTokens: 10, OutputTokens: 7}, ""},
		{"zero counts are counts", `{"prompt_tokens":0,"completion_tokens":0}`, &Usage{}, ""},
		{"null", `null`, nil, `abc{"d":1}`},
		{"absent", ``, nil, `abc{"d":1}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			raw := `{"model":"x",` + choice + `}`
			if tc.usage != "" {
				raw = `{"model":"x",` + choice + `,"usage":` + tc.usage + `}`
			}
			m := oaiMeta
			a, err := Chat(ProtocolOpenAI).Answer([]byte(raw), &m)
			if err != nil {
				t.Fatal(err)
			}
			if usageString(a.Usage) != usageString(tc.want) || a.Text != tc.text {
				t.Errorf("usage %s text %q, want %s %q", usageString(a.Usage), a.Text, usageString(tc.want), tc.text)
			}
		})
	}
}

// oaiEvents splits an SSE transcript of data-only events into their data.
func oaiEvents(b []byte) [][]byte {
	var out [][]byte
	for ev := range bytes.SplitSeq(b, []byte("\n\n")) {
		ev = bytes.TrimSpace(ev)
		if len(ev) == 0 {
			continue
		}
		out = append(out, bytes.TrimPrefix(ev, []byte("data: ")))
	}
	return out
}

// oaiBilled is what the gateway bills in the stream tests: other numbers
// than the provider's, to show that End reports the gateway's.
var oaiBilled = Usage{InputTokens: 31, OutputTokens: 17, CachedInputTokens: 5, ReasoningTokens: 2}

// TestOpenAIPassthroughStreamGolden feeds each transcript of
// testdata/openai_openai/stream/<name>.sse to a stream, event by event,
// then End; the golden file lists each event's chunks (commit, text,
// usage, data), the end of stream or the failure, then End's chunks. Each
// relayed chunk is checked against its event: the same in meaning but for
// model, and the usage the caller did not ask for.
func TestOpenAIPassthroughStreamGolden(t *testing.T) {
	for _, tc := range []struct {
		sse          string
		includeUsage bool
	}{
		{"text", false},              // usage-only chunk counted, not sent; End adds nothing
		{"text", true},               // usage chunk relayed; End adds nothing
		{"tool_calls", false},        // each call delta a commit point, its arguments the text
		{"tool_calls", true},         // no provider usage: End's chunk has the provider's id and created
		{"reasoning", true},          // reasoning_content is a commit point, not text
		{"usage_every_chunk", false}, // usage removed from chunks that say something
		{"usage_every_chunk", true},
		{"no_usage", true}, // refusal a commit point
		{"error_chunk", true},
		{"malformed", false},
	} {
		name := tc.sse
		if tc.includeUsage {
			name += ".include_usage"
		}
		t.Run(name, func(t *testing.T) {
			m := oaiMeta
			m.IncludeUsage = tc.includeUsage
			s := Chat(ProtocolOpenAI).Stream(&m)
			var out bytes.Buffer
			var chunks []Chunk
			failed := false
			for _, data := range oaiEvents(readFile(t, filepath.Join(oaiTestdata, "stream", tc.sse+".sse"))) {
				var done bool
				var err error
				chunks, done, err = s.Event(nil, data, chunks[:0])
				if err != nil {
					out.WriteString(failureString(t, err))
					failed = true
					break
				}
				if done {
					out.WriteString("done\n")
					break
				}
				if len(chunks) != 1 {
					t.Fatalf("%d chunks for one event, want 1", len(chunks))
				}
				c := chunks[0]
				oaiWriteChunk(&out, c)
				oaiCheckRelayed(t, data, c, tc.includeUsage)
			}
			if !failed {
				out.WriteString("<- end\n")
				for _, c := range s.End(oaiBilled, nil) {
					oaiWriteChunk(&out, c)
				}
			}
			golden(t, filepath.Join(oaiTestdata, "stream", name+".golden"), out.Bytes())
		})
	}
}

func oaiWriteChunk(out *bytes.Buffer, c Chunk) {
	data := string(c.Data)
	if c.Data == nil {
		data = "(not sent)"
	}
	fmt.Fprintf(out, "-> commit=%v text=%q usage=%s\n   %s\n", c.Commit, c.Text, usageString(c.Usage), data)
}

// oaiCheckRelayed checks a relayed chunk against the event it came from:
// the same in meaning but for model, and without the usage member when the
// caller did not ask for it; a usage-only chunk is then not sent at all.
func oaiCheckRelayed(t *testing.T, event []byte, c Chunk, includeUsage bool) {
	t.Helper()
	in := decodeObject(t, event)
	usageOnly := false
	if u, ok := in["usage"]; ok && u != nil {
		choices, _ := in["choices"].([]any)
		usageOnly = len(choices) == 0
	}
	if !includeUsage && usageOnly {
		if c.Data != nil {
			t.Errorf("a usage-only chunk the caller did not ask for was sent: %s", c.Data)
		}
		return
	}
	want := oaiWant(t, event, func(m map[string]any) {
		m["model"] = "chat-alpha"
		if !includeUsage {
			delete(m, "usage")
		}
	})
	if got := canonical(t, c.Data); got != want {
		t.Errorf("chunk\n%s\nwant (in meaning)\n%s", got, want)
	}
}

// oaiStreamOne is the chunks of one event of a fresh stream.
func oaiStreamOne(t *testing.T, m Meta, data string) []Chunk {
	t.Helper()
	chunks, done, err := Chat(ProtocolOpenAI).Stream(&m).Event(nil, []byte(data), nil)
	if err != nil || done {
		t.Fatalf("Event(%s): done %v, %v", data, done, err)
	}
	return chunks
}

// TestOpenAIPassthroughCommit: a chunk is the commit point when it says
// something (content, a refusal, a tool call, reasoning), and its text is
// what the caller is billed for.
func TestOpenAIPassthroughCommit(t *testing.T) {
	chunk := func(delta string) string {
		return `{"id":"c","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":` + delta + `,"finish_reason":null}]}`
	}
	for _, tc := range []struct {
		name, data string
		commit     bool
		text       string
	}{
		{"content", chunk(`{"content":"Hi"}`), true, "Hi"},
		{"role and empty content", chunk(`{"role":"assistant","content":""}`), false, ""},
		{"role only", chunk(`{"role":"assistant"}`), false, ""},
		{"null content and refusal", chunk(`{"content":null,"refusal":null}`), false, ""},
		{"empty delta", chunk(`{}`), false, ""},
		{"null delta", chunk(`null`), false, ""},
		{"refusal", chunk(`{"refusal":"No."}`), true, "No."},
		{"tool call head without arguments", chunk(`{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"f","arguments":""}}]}`), true, ""},
		{"tool call arguments", chunk(`{"tool_calls":[{"index":0,"function":{"arguments":"{\"a\":"}}]}`), true, `{"a":`},
		{"legacy function_call", chunk(`{"function_call":{"name":"f","arguments":"{}"}}`), true, "{}"},
		{"reasoning_content", chunk(`{"reasoning_content":"hmm"}`), true, ""},
		{"reasoning", chunk(`{"reasoning":"hmm"}`), true, ""},
		{"empty reasoning", chunk(`{"reasoning_content":""}`), false, ""},
		{"finish only", `{"id":"c","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`, false, ""},
		{"no choices", `{"id":"c","choices":[]}`, false, ""},
		{"two choices", `{"choices":[{"index":0,"delta":{"content":"a"}},{"index":1,"delta":{"content":"b"}}]}`, true, "ab"},
		{"escaped content", chunk(`{"content":"caf\u00e9 \ud83d\ude00"}`), true, "café 😀"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := oaiStreamOne(t, oaiMeta, tc.data)[0]
			if c.Commit != tc.commit || c.Text != tc.text || c.Data == nil {
				t.Errorf("commit %v text %q data %s; want commit %v text %q", c.Commit, c.Text, c.Data, tc.commit, tc.text)
			}
		})
	}
}

// A stream reader reused across events reads each on its own: nothing of
// an earlier chunk (choices, usage, text) carries over.
func TestOpenAIPassthroughStreamReuse(t *testing.T) {
	m := oaiMeta
	s := Chat(ProtocolOpenAI).Stream(&m)
	var chunks []Chunk
	for _, ev := range []struct {
		data   string
		commit bool
		text   string
		usage  bool
	}{
		{`{"choices":[{"index":0,"delta":{"content":"a"}},{"index":1,"delta":{"tool_calls":[{"function":{"arguments":"x"}}]}}],"usage":{"prompt_tokens":1,"completion_tokens":2}}`, true, "ax", true},
		{`{"choices":[{"index":0,"delta":{}},{"index":1}]}`, false, "", false},
		{`{"choices":[{"index":0,"delta":null}],"usage":null}`, false, "", false},
		{`{"choices":[{"index":0,"delta":{"content":"d"}}]}`, true, "d", false},
		{`{}`, false, "", false},
	} {
		var err error
		chunks, _, err = s.Event(nil, []byte(ev.data), chunks[:0])
		if err != nil || len(chunks) != 1 {
			t.Fatalf("Event(%s): %v, %v", ev.data, chunks, err)
		}
		c := chunks[0]
		if c.Commit != ev.commit || c.Text != ev.text || (c.Usage != nil) != ev.usage {
			t.Errorf("Event(%s): commit %v text %q usage %s", ev.data, c.Commit, c.Text, usageString(c.Usage))
		}
	}
}

// TestOpenAIPassthroughStreamUsage: the provider's counts are reported on
// Chunk.Usage whether the caller asked for them or not; without
// include_usage the usage member is removed and a chunk that carried
// nothing else is not sent.
func TestOpenAIPassthroughStreamUsage(t *testing.T) {
	const u = `{"prompt_tokens":10,"completion_tokens":7,"total_tokens":17,"prompt_tokens_details":{"cached_tokens":4},"completion_tokens_details":{"reasoning_tokens":3}}`
	full := &Usage{InputTokens: 10, OutputTokens: 7, CachedInputTokens: 4, ReasoningTokens: 3}
	for _, tc := range []struct {
		name, data   string
		includeUsage bool
		want         string // the chunk sent; "" for none
		usage        *Usage
	}{
		{"usage-only, not asked", `{"id":"c","choices":[],"usage":` + u + `}`, false, "", full},
		{"usage-only without choices, not asked", `{"id":"c","usage":` + u + `}`, false, "", full},
		{"usage-only, asked", `{"id":"c","choices":[],"usage":` + u + `}`, true, `{"id":"c","choices":[],"usage":` + u + `}`, full},
		{"with content, not asked", `{"id":"c","choices":[{"delta":{"content":"a"}}],"usage":` + u + `}`, false,
			`{"id":"c","choices":[{"delta":{"content":"a"}}]}`, full},
		{"null, not asked", `{"id":"c","choices":[{"delta":{"content":"a"}}],"usage":null}`, false, `{"id":"c","choices":[{"delta":{"content":"a"}}]}`, nil},
		{"null, asked", `{"id":"c","choices":[{"delta":{"content":"a"}}],"usage":null}`, true, `{"id":"c","choices":[{"delta":{"content":"a"}}],"usage":null}`, nil},
		{"null only, not asked", `{"id":"c","choices":[],"usage":null}`, false, `{"id":"c","choices":[]}`, nil},
		{"model replaced wherever it is", `{"usage":null,"model":"gpt","id":"c","choices":[]}`, true, `{"usage":null,"model":"chat-alpha","id":"c","choices":[]}`, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := oaiMeta
			m.IncludeUsage = tc.includeUsage
			c := oaiStreamOne(t, m, tc.data)[0]
			got := string(c.Data)
			if c.Data != nil {
				if mdl := decodeObject(t, c.Data)["model"]; mdl != "chat-alpha" {
					t.Errorf("model %v, want the alias", mdl)
				}
				got = canonical(t, c.Data)
			}
			want := tc.want
			if want != "" {
				want = oaiWant(t, []byte(want), func(m map[string]any) { m["model"] = "chat-alpha" })
			}
			if got != want || usageString(c.Usage) != usageString(tc.usage) {
				t.Errorf("sent %s usage %s\nwant %s usage %s", got, usageString(c.Usage), want, usageString(tc.usage))
			}
		})
	}
}

func TestOpenAIPassthroughStreamEnds(t *testing.T) {
	for _, tc := range []struct {
		name, data string
		done       bool
		failure    string
	}{
		{"done", `[DONE]`, true, ""},
		{"error event", `{"error":{"message":"Overloaded","type":"server_error","code":null}}`, false, `failure: malformed=false type="server_error" message="Overloaded"` + "\n"},
		{"error with a code", `{"id":"c","choices":[],"error":{"message":"m","type":null,"code":"rate_limit_exceeded"}}`, false, `failure: malformed=false type="rate_limit_exceeded" message="m"` + "\n"},
		{"error text", `{"error":"boom"}`, false, `failure: malformed=false type="" message="boom"` + "\n"},
		{"unreadable error", `{"error":[1]}`, false, `failure: malformed=true type="" message="malformed error object"` + "\n"},
		{"malformed JSON", `{"choices":[`, false, `failure: malformed=true type="" message="malformed stream chunk JSON"` + "\n"},
		{"not an object", `"hello"`, false, `failure: malformed=true type="" message="malformed stream chunk JSON"` + "\n"},
		{"malformed choices", `{"choices":{"delta":1}}`, false, `failure: malformed=true type="" message="malformed stream chunk JSON"` + "\n"},
		{"malformed usage", `{"choices":[],"usage":{"prompt_tokens":"x"}}`, false, `failure: malformed=true type="" message="malformed stream chunk JSON"` + "\n"},
		{"trailing data", `{"choices":[]}{}`, false, `failure: malformed=true type="" message="malformed stream chunk JSON"` + "\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := oaiMeta
			chunks, done, err := Chat(ProtocolOpenAI).Stream(&m).Event(nil, []byte(tc.data), nil)
			if len(chunks) != 0 || done != tc.done {
				t.Errorf("chunks %v done %v", chunks, done)
			}
			got := ""
			if err != nil {
				got = failureString(t, err)
			}
			if got != tc.failure {
				t.Errorf("got %q, want %q", got, tc.failure)
			}
		})
	}
}

// TestOpenAIPassthroughEnd: End adds a usage chunk only when the caller
// asked for usage and the provider's was not relayed; it reports the
// counts the gateway bills, with the provider's id and created when its
// chunks had them.
func TestOpenAIPassthroughEnd(t *testing.T) {
	const content = `{"id":"chatcmpl-up","created":1741,"model":"gpt","choices":[{"index":0,"delta":{"content":"a"}}]}`
	const usageOnly = `{"id":"chatcmpl-up","created":1741,"model":"gpt","choices":[],"usage":{"prompt_tokens":1,"completion_tokens":1}}`
	for _, tc := range []struct {
		name         string
		includeUsage bool
		events       []string
		want         string // "" for no chunk
	}{
		{"not asked", false, []string{content}, ""},
		{"not asked, provider usage counted", false, []string{content, usageOnly}, ""},
		{"asked, relayed", true, []string{content, usageOnly}, ""},
		{"asked, not sent by the provider", true, []string{content},
			`{"id":"chatcmpl-up","object":"chat.completion.chunk","created":1741,"model":"chat-alpha","choices":[],` +
				`"usage":{"prompt_tokens":31,"completion_tokens":17,"total_tokens":48,"prompt_tokens_details":{"cached_tokens":5},"completion_tokens_details":{"reasoning_tokens":2}}}`},
		{"asked, usage null only", true, []string{`{"id":"chatcmpl-up","created":1741,"choices":[],"usage":null}`},
			`{"id":"chatcmpl-up","object":"chat.completion.chunk","created":1741,"model":"chat-alpha","choices":[],` +
				`"usage":{"prompt_tokens":31,"completion_tokens":17,"total_tokens":48,"prompt_tokens_details":{"cached_tokens":5},"completion_tokens_details":{"reasoning_tokens":2}}}`},
		{"asked, no chunk at all", true, nil,
			`{"id":"chatcmpl-req1","object":"chat.completion.chunk","created":1700000000,"model":"chat-alpha","choices":[],` +
				`"usage":{"prompt_tokens":31,"completion_tokens":17,"total_tokens":48,"prompt_tokens_details":{"cached_tokens":5},"completion_tokens_details":{"reasoning_tokens":2}}}`},
		{"asked, chunks without id", true, []string{`{"choices":[{"delta":{"content":"a"}}]}`},
			`{"id":"chatcmpl-req1","object":"chat.completion.chunk","created":1700000000,"model":"chat-alpha","choices":[],` +
				`"usage":{"prompt_tokens":31,"completion_tokens":17,"total_tokens":48,"prompt_tokens_details":{"cached_tokens":5},"completion_tokens_details":{"reasoning_tokens":2}}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := oaiMeta
			m.IncludeUsage = tc.includeUsage
			s := Chat(ProtocolOpenAI).Stream(&m)
			var chunks []Chunk
			for _, ev := range tc.events {
				var err error
				if chunks, _, err = s.Event(nil, []byte(ev), chunks[:0]); err != nil {
					t.Fatal(err)
				}
			}
			var last string
			n := len(chunks)
			if n > 0 {
				last = string(chunks[n-1].Data)
			}
			chunks = s.End(oaiBilled, chunks)
			// End must leave the last event's chunks alone: they may not be written yet.
			if n > 0 && string(chunks[n-1].Data) != last {
				t.Errorf("End overwrote the last event's chunk: %s, was %s", chunks[n-1].Data, last)
			}
			added := chunks[n:]
			switch {
			case tc.want == "" && len(added) != 0:
				t.Errorf("End added %s", added[0].Data)
			case tc.want != "" && (len(added) != 1 || string(added[0].Data) != tc.want || added[0].Commit):
				t.Errorf("End added %v\nwant %s", added, tc.want)
			}
		})
	}
}

// BenchmarkOpenAIPassthroughChunk is one event's relay, the per-event cost
// of a pass-through stream (the SSE framing is BenchmarkParse in
// gateway/provider/sse): a content chunk, and the usage chunk that ends a
// stream once.
func BenchmarkOpenAIPassthroughChunk(b *testing.B) {
	for _, c := range []struct{ name, data string }{
		{"content", `{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-4.1","system_fingerprint":"fp","choices":[{"index":0,"delta":{"content":" word"},"logprobs":null,"finish_reason":null}],"usage":null}`},
		{"usage", `{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-4.1","choices":[],"usage":{"prompt_tokens":19,"completion_tokens":10,"total_tokens":29,` +
			`"prompt_tokens_details":{"cached_tokens":0,"audio_tokens":0},"completion_tokens_details":{"reasoning_tokens":0,"audio_tokens":0}}}`},
	} {
		b.Run(c.name, func(b *testing.B) {
			m := oaiMeta
			m.IncludeUsage = true
			s := Chat(ProtocolOpenAI).Stream(&m)
			data := []byte(c.data)
			var out []Chunk
			b.ReportAllocs()
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				var err error
				if out, _, err = s.Event(nil, data, out[:0]); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkOpenAIPassthroughAnswer(b *testing.B) {
	raw := []byte(`{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"gpt-4.1",` +
		`"choices":[{"index":0,"message":{"role":"assistant","content":"Hamlet, prince of Denmark, learns that his uncle murdered his father."},"finish_reason":"stop"}],` +
		`"usage":{"prompt_tokens":25,"completion_tokens":14,"total_tokens":39}}`)
	m := oaiMeta
	b.ReportAllocs()
	b.SetBytes(int64(len(raw)))
	for b.Loop() {
		if _, err := Chat(ProtocolOpenAI).Answer(raw, &m); err != nil {
			b.Fatal(err)
		}
	}
}
