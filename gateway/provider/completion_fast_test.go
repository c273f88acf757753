package provider

import (
	"reflect"
	"testing"
)

// Completions as the vendors send them, which the fast readers must take
// themselves, and shapes they must leave to the struct decoder.
var (
	completionsTaken = []string{
		benchOpenAICompletion,
		benchAnthropicCompletion,
		`{"id":"c","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":null,"refusal":null,` +
			`"annotations":[]},"logprobs":null,"finish_reason":"length"}],"usage":{"prompt_tokens":19,"completion_tokens":10,` +
			`"total_tokens":29,"prompt_tokens_details":{"cached_tokens":3,"audio_tokens":0},"completion_tokens_details":` +
			`{"reasoning_tokens":4,"audio_tokens":0}},"service_tier":"default","system_fingerprint":null}`,
		`{"choices":[{"message":{"content":"a \"q\"\n\u00e9\ud83d\ude00"},"finish_reason":null},{"message":null}]}`,
		`{"choices":[],"usage":null,"error":null}`,
		`{"choices":null}`,
		`{"error":{"message":"overloaded","type":"server_error","code":null}}`,
		`{}`,
		` { "id" : null , "choices" : [ { } ] } `,
		`{"id":"msg","type":"message","content":[{"type":"text","text":"a"},{"type":"tool_use","id":"t","name":"f","input":{"x":[1]}},` +
			`{"type":"text","text":" b","text":"c"}],"stop_reason":"max_tokens","stop_sequence":null,` +
			`"usage":{"input_tokens":3,"cache_creation_input_tokens":1,"cache_read_input_tokens":2,"output_tokens":null}}`,
		`{"type":"error","error":{"type":"overloaded_error","message":"busy"}}`,
		`{"type":"message","content":[]}`,
		`{"type":"message","content":null,"usage":{}}`,
	}
	completionsLeft = []string{
		`{"id":"a","id":"b"}`, // repeated member
		`{"choices":[],"choices":[{"message":{"content":"a"}}]}`,
		`{"choices":[{"message":{"content":"a"},"message":{}}]}`,
		`{"choices":[{"message":{"content":"a","content":"b"}}]}`,
		`{"choices":[{"finish_reason":"stop","finish_reason":null}]}`,
		`{"choices":[null]}`,
		`{"choices":[{"message":{"content":7}}]}`,
		`{"choices":[{"message":[]}]}`,
		`{"choices":{}}`,
		`{"ch\u006fices":[]}`, // escaped name
		`{"usage":{"prompt_tokens":1.5}}`,
		"{\"choices\":[{\"message\":{\"content\":\"\xff\"}}]}", // invalid UTF-8
		`{"choices":[]} x`,
		`{"choices":[{}],}`,
		`{"type":"message","content":[null]}`,
		`{"type":"message","content":[{"type":"text","text":1}]}`,
		`{"type":"message","type":"error"}`,
		`{"type":"message","usage":{"input_tokens":"3"}}`,
		`{"content":"text"}`,
		`null`,
		`[]`,
	}
)

func TestCompletionReadersTakeVendorShapes(t *testing.T) {
	for _, s := range completionsTaken {
		var r fastReader
		var o oaiResponse
		var a antResponse
		if !r.oaiResponse([]byte(s), &o) || !r.antResponse([]byte(s), &a) {
			t.Errorf("a fast reader gave up on %s", s)
		}
		completionsAgree(t, []byte(s))
	}
	for _, s := range completionsLeft {
		var r fastReader
		var o oaiResponse
		var a antResponse
		if r.oaiResponse([]byte(s), &o) && r.antResponse([]byte(s), &a) {
			t.Errorf("both fast readers took %q, which is the struct decoder's to judge", s)
		}
		completionsAgree(t, []byte(s))
	}
}

// Where the fast reader gives up partway, what it filled in is dropped: an
// answer the struct decoder refuses is a malformed one, whatever the fast
// reader had read of it.
func TestCompletionDecodersRefuseWhatTheStructDecoderRefuses(t *testing.T) {
	for _, s := range append(append([]string(nil), completionsTaken...), completionsLeft...) {
		for _, d := range []struct {
			name string
			fast func([]byte) (*Completion, *Error)
			into any
		}{{"openai", decodeOpenAI, &oaiResponse{}}, {"anthropic", decodeAnthropic, &antResponse{}}} {
			c, e := d.fast([]byte(s))
			if decodeJSON([]byte(s), d.into) != nil {
				if e == nil || e.Message != "malformed response JSON" {
					t.Errorf("%s(%q) = %+v, %v; want malformed response JSON", d.name, s, c, e)
				}
			}
		}
	}
}

// completionsAgree checks that whenever a fast reader takes a completion,
// the struct decoder takes it too and reads the same.
func completionsAgree(t *testing.T, data []byte) {
	t.Helper()
	readerAgrees(t, "openai", data, (*fastReader).oaiResponse)
	readerAgrees(t, "anthropic", data, (*fastReader).antResponse)
}

func readerAgrees[T any](t *testing.T, name string, data []byte, read func(*fastReader, []byte, *T) bool) {
	t.Helper()
	var r fastReader
	var fast T
	if !read(&r, data, &fast) {
		return
	}
	var want T
	if err := decodeJSON(data, &want); err != nil {
		t.Fatalf("%s reader took %q, the struct decoder refused it: %v", name, data, err)
	}
	if !reflect.DeepEqual(fast, want) {
		t.Fatalf("%q: %s reader %+v, struct decoder %+v", data, name, fast, want)
	}
}

func FuzzCompletionReadersAgree(f *testing.F) {
	for _, s := range completionsTaken {
		f.Add([]byte(s))
	}
	for _, s := range completionsLeft {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) { completionsAgree(t, data) })
}
