package translate

import (
	"bytes"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/llmgw/llmgw/api/wire/openai"
)

const rrTestdata = "testdata/responses_responses"

// rrPair is the pass-through pair.
func rrPair() ChatPair { return Responses(ProtocolOpenAI, true) }

// TestResponsesPassthroughRequest: the body the provider gets is the
// caller's byte for byte but for model, its segments sharing the caller's
// bytes; nothing else is added, even in a stream.
func TestResponsesPassthroughRequest(t *testing.T) {
	for _, name := range []string{"codex", "tool_conversation", "images", "dropped_hints"} {
		t.Run(name, func(t *testing.T) {
			body := readFile(t, filepath.Join(rsRequestTestdata, name+".json"))
			var r openai.ResponsesRequest
			if err := json.Unmarshal(body, &r); err != nil {
				t.Fatal(err)
			}
			segs, err := rrPair().Request(&ChatRequest{Body: body, Stream: true}, "gpt-5-provider")
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range segs {
				if !within(s, body) && !bytes.Equal(s, []byte(`"gpt-5-provider"`)) {
					t.Errorf("segment %q is neither the caller's bytes nor the model", s)
				}
			}
			from := []byte(`"model": ` + string(quoted(r.Model)))
			want := bytes.Replace(body, from, []byte(`"model": "gpt-5-provider"`), 1)
			if got := bytes.Join(segs, nil); !bytes.Contains(body, from) || !bytes.Equal(got, want) {
				t.Errorf("got %s\nwant %s", got, want)
			}
		})
	}
	// No model in the body: it is added.
	segs, err := rrPair().Request(&ChatRequest{Body: []byte(`{"input":"hi"}`)}, "m")
	if got := bytes.Join(segs, nil); err != nil || string(got) != `{"input":"hi","model":"m"}` {
		t.Errorf("got %s, %v", got, err)
	}
}

// TestResponsesPassthroughAnswer reads each answer of
// testdata/responses_responses/answer/<name>.json; the golden file has the
// usage, the text for the gateway's own count and the body as written, or
// the failure. The body is the provider's but for model, the alias.
func TestResponsesPassthroughAnswer(t *testing.T) {
	for _, tc := range []struct {
		name string
		fail bool
	}{
		{"text", false},     // usage with cached and reasoning tokens; every member relayed
		{"no_usage", false}, // Text: output_text, refusal, arguments and input
		{"no_model", false}, // the alias added
		{"failed", true},    // the response's error: its code and message
		{"failed_without_error", true},
		{"error_envelope", true},
		{"not_a_response", true},
		{"malformed", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			raw := readFile(t, filepath.Join(rrTestdata, "answer", tc.name+".json"))
			m := rsTestMeta
			a, err := rrPair().Answer(raw, &m)
			if (err != nil) != tc.fail {
				t.Fatalf("answer %+v, error %v; want failure %v", a, err, tc.fail)
			}
			var out bytes.Buffer
			if err != nil {
				out.WriteString(failureString(t, err))
			} else {
				want := oaiWant(t, raw, func(o map[string]any) { o["model"] = m.Alias })
				if got := canonical(t, a.Body); got != want {
					t.Errorf("relayed %s\nwant %s", got, want)
				}
				rsSDKResponse(t, a.Body)
				fmt.Fprintf(&out, "usage: %s\ntext: %q\nbody:\n%s", usageString(a.Usage), a.Text, a.Body)
			}
			golden(t, filepath.Join(rrTestdata, "answer", tc.name+".golden"), out.Bytes())
		})
	}
}

// TestResponsesPassthroughStream feeds each transcript of
// testdata/responses_responses/stream/<name>.sse to a stream; the golden
// file lists each event's chunks, the end or the failure (after which
// Fail's event), then End's (none). Every event is relayed under its name
// as the provider sent it, but for the model of a lifecycle event's
// response.
func TestResponsesPassthroughStream(t *testing.T) {
	for _, name := range []string{
		"text",             // reasoning relayed, not a commit; the first non-empty text delta commits; usage in response.completed, the end
		"function_call",    // the call's item commits; response.incomplete ends it with its usage
		"custom_tool_call", // the custom call's item commits
		"failed",           // response.failed: a Failure; Fail after sequence_number 1
		"error_event",      // error: a Failure with its code
		"unnamed",          // events without event: lines, named by their type
		"malformed",
	} {
		t.Run(name, func(t *testing.T) {
			events := antParseSSE(readFile(t, filepath.Join(rrTestdata, "stream", name+".sse")))
			m := rsTestMeta
			s := rrPair().Stream(&m)
			var out bytes.Buffer
			var chunks []Chunk
			for _, e := range events {
				fmt.Fprintf(&out, "<- %s\n", antEventLabel(e))
				var done bool
				var err error
				chunks, done, err = s.Event(e.typ, e.data, chunks[:0])
				for _, c := range chunks {
					rrCheckRelayed(t, e, c)
					fmt.Fprintf(&out, "-> %s commit=%v text=%q usage=%s\n", c.Event, c.Commit, c.Text, usageString(c.Usage))
				}
				if err != nil {
					out.WriteString(failureString(t, err))
					out.WriteString("<- fail\n")
					for _, c := range s.(StreamFailer).Fail("server_error", "the provider failed", nil) {
						fmt.Fprintf(&out, "-> %s\n   %s\n", c.Event, c.Data)
						rrCheckFailed(t, c)
					}
					break
				}
				if done {
					out.WriteString("done\n")
					if end := s.End(rsBilled, nil); len(end) != 0 {
						t.Errorf("End wrote %d chunks", len(end))
					}
					break
				}
			}
			golden(t, filepath.Join(rrTestdata, "stream", name+".golden"), out.Bytes())
		})
	}
}

// rrCheckRelayed checks a relayed chunk against its event: named as the
// event (or its type), the same JSON but for the model of a lifecycle
// event's response, which is the alias.
func rrCheckRelayed(t *testing.T, e antEvent, c Chunk) {
	t.Helper()
	var head openai.ResponsesEventHead
	if err := json.Unmarshal(e.data, &head); err != nil || c.Event != head.Type {
		t.Fatalf("chunk named %q for %s", c.Event, e.data)
	}
	want := oaiWant(t, e.data, func(o map[string]any) {
		if r, ok := o["response"].(map[string]any); ok {
			r["model"] = rsTestMeta.Alias
		}
	})
	if got := canonical(t, c.Data); got != want {
		t.Fatalf("relayed %s\nwant %s", got, want)
	}
}

// rrCheckFailed checks Fail's event: response.failed after the provider's
// last sequence number, the last response reported (its id) failed with
// the error given, the alias its model, readable by openai-go.
func rrCheckFailed(t *testing.T, c Chunk) {
	t.Helper()
	var e openai.ResponseEvent
	if err := json.Unmarshal(c.Data, &e); err != nil || c.Event != openai.EventResponseFailed || e.Type != c.Event {
		t.Fatalf("fail event %s: %v", c.Data, err)
	}
	r := e.Response
	if r.Status != openai.ResponseStatusFailed || r.Error == nil || r.Error.Code != "server_error" || r.Error.Message != "the provider failed" ||
		r.Model != rsTestMeta.Alias || r.ID != "resp_68b" || e.SequenceNumber != 1 {
		t.Fatalf("fail event %s", c.Data)
	}
	rsSDKResponse(t, rrResponseOf(t, c.Data))
}

// rrResponseOf is the raw response of a lifecycle event.
func rrResponseOf(t *testing.T, data []byte) jsontext.Value {
	t.Helper()
	var e struct {
		Response jsontext.Value `json:"response"`
	}
	if err := json.Unmarshal(data, &e); err != nil {
		t.Fatal(err)
	}
	return e.Response
}

// TestResponsesPassthroughFailFirst: Fail before any event (the provider
// sent none the gateway could read) writes the gateway's own failed
// response, sequence number 0.
func TestResponsesPassthroughFailFirst(t *testing.T) {
	m := rsTestMeta
	chunks := rrPair().Stream(&m).(StreamFailer).Fail("server_error", "no answer", nil)
	want := `{"type":"response.failed","sequence_number":0,"response":{"id":"resp_req1","object":"response","created_at":1700000000,"status":"failed",` +
		`"error":{"code":"server_error","message":"no answer"},"incomplete_details":null,"model":"codex-alias","output":[],"usage":null}}`
	if len(chunks) != 1 || chunks[0].Event != openai.EventResponseFailed || string(chunks[0].Data) != want {
		t.Fatalf("%+v", chunks)
	}
}
