package translate

import (
	"bytes"
	stdjson "encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/openai/openai-go/v3/responses"

	"github.com/llmgw/llmgw/api/wire/openai"
)

// rsTestMeta is what the server gives the Responses pairs.
var rsTestMeta = Meta{Alias: "codex-alias", ID: "resp_req1", Created: 1700000000}

// rsAnswerRequest is the request of the answer and stream tests: a
// function tool, a custom one (whose calls are custom_tool_call items),
// and members the answer echoes.
const rsAnswerRequest = `{"model":"gpt-x","instructions":"Be brief.","input":"hi","max_output_tokens":500,"tool_choice":"auto",` +
	`"tools":[{"type":"function","name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}}}},` +
	`{"type":"custom","name":"apply_patch","description":"Edit files."}]}`

// rsPairFor is a pair of dir's protocol that translated rsAnswerRequest,
// indented: what the answer echoes of it must be compact all the same (an
// event's data is one line).
func rsPairFor(t testing.TB, pair func() ChatPair, stream bool) ChatPair {
	t.Helper()
	p := pair()
	body := jsontext.Value(rsAnswerRequest)
	if err := body.Indent(); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Request(&ChatRequest{Body: body, Stream: stream}, "m"); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestResponsesAnswerGolden reads each provider answer of
// testdata/responses_{openai,anthropic}/answer/<name>.json; the golden file
// has the usage, the text for the gateway's own count and the response
// (indented for reading), or the failure.
func TestResponsesAnswerGolden(t *testing.T) {
	for _, tc := range []struct {
		name string
		fail bool
		only string
	}{
		{"text", false, ""},             // escaped as the gateway escapes; (Anthropic) a thinking block dropped
		{"function_call", false, ""},    // a function_call item, arguments compact JSON text
		{"custom_tool_call", false, ""}, // apply_patch's call as a custom_tool_call, its input unwrapped
		{"parallel_calls", false, ""},   // two calls; empty arguments (or input) are {}
		{"cache_usage", false, ""},      // cached tokens part of input_tokens; (chat) reasoning tokens
		{"length", false, ""},           // incomplete, max_output_tokens
		{"refusal", false, "openai"},    // a refusal part; no usage: usage null, Text the refusal
		{"no_usage", false, "anthropic"},
		{"error_envelope", true, ""},
		{"no_choices", true, "openai"},
		{"malformed", true, ""},
	} {
		for _, pp := range rsPairs {
			proto := strings.TrimPrefix(filepath.Base(pp.dir), "responses_")
			if tc.only != "" && tc.only != proto {
				continue
			}
			t.Run(proto+"/"+tc.name, func(t *testing.T) {
				raw := readFile(t, filepath.Join(pp.dir, "answer", tc.name+".json"))
				m := rsTestMeta
				a, err := rsPairFor(t, pp.pair, false).Answer(raw, &m)
				if (err != nil) != tc.fail {
					t.Fatalf("answer %+v, error %v; want failure %v", a, err, tc.fail)
				}
				var out bytes.Buffer
				if err != nil {
					out.WriteString(failureString(t, err))
				} else {
					rsCheckAnswer(t, a)
					pretty := jsontext.Value(bytes.Clone(a.Body))
					if err := pretty.Indent(); err != nil {
						t.Fatal(err)
					}
					fmt.Fprintf(&out, "usage: %s\ntext: %q\nbody:\n%s\n", usageString(a.Usage), a.Text, pretty)
				}
				golden(t, filepath.Join(pp.dir, "answer", tc.name+".golden"), out.Bytes())
			})
		}
	}
}

// rsCheckAnswer checks what every translated answer must be: one JSON
// value and a newline, a response of the wire type with the gateway's id,
// creation time and the alias, echoing the request; readable by
// openai-go's Responses types with the same output and usage; usage as
// the gateway reports it, Text only without.
func rsCheckAnswer(t testing.TB, a *Answer) {
	t.Helper()
	if !bytes.HasSuffix(a.Body, []byte("\n")) || !jsontext.Value(a.Body).IsValid() {
		t.Fatalf("body is not one JSON value and a newline: %q", a.Body)
	}
	var w openai.Response
	if err := json.Unmarshal(a.Body, &w, json.RejectUnknownMembers(true)); err != nil {
		t.Fatalf("not a response: %v: %s", err, a.Body)
	}
	if w.ID != rsTestMeta.ID || w.Object != "response" || w.CreatedAt != rsTestMeta.Created || w.Model != rsTestMeta.Alias ||
		string(w.Instructions) != `"Be brief."` || *w.MaxOutputTokens != 500 || string(w.ToolChoice) != `"auto"` || !bytes.HasPrefix(w.Tools, []byte(`[{"type":"function"`)) {
		t.Fatalf("response %s", a.Body)
	}
	r := rsSDKResponse(t, a.Body)
	rsCheckSDKResponse(t, r, &w)
	if a.Usage != nil {
		u := r.Usage
		if a.Text != "" || u.InputTokens != int64(a.Usage.InputTokens) || u.InputTokensDetails.CachedTokens != int64(a.Usage.CachedInputTokens) ||
			u.OutputTokens != int64(a.Usage.OutputTokens) || u.OutputTokensDetails.ReasoningTokens != int64(a.Usage.ReasoningTokens) ||
			u.TotalTokens != u.InputTokens+u.OutputTokens {
			t.Fatalf("usage %s, text %q for %s", usageString(a.Usage), a.Text, a.Body)
		}
	} else if w.Usage != nil {
		t.Fatalf("usage reported none, answer has %s", a.Body)
	}
}

// rsSDKResponse decodes a response as openai-go does.
func rsSDKResponse(t testing.TB, b []byte) *responses.Response {
	t.Helper()
	var r responses.Response
	if err := stdjson.Unmarshal(b, &r); err != nil {
		t.Fatalf("openai-go cannot read the response: %v: %s", err, b)
	}
	return &r
}

// rsCheckSDKResponse checks that openai-go reads r as the gateway wrote
// w: its id, model and status, each item of its type with its members,
// the members it requires present.
func rsCheckSDKResponse(t testing.TB, r *responses.Response, w *openai.Response) {
	t.Helper()
	if r.ID != w.ID || string(r.Model) != w.Model || string(r.Status) != w.Status || len(r.Output) != len(w.Output) ||
		!r.JSON.Tools.Valid() || !r.JSON.ToolChoice.Valid() || !r.JSON.ParallelToolCalls.Valid() || !r.JSON.Output.Valid() {
		t.Fatalf("openai-go reads %+v", r)
	}
	var text strings.Builder
	for i, it := range r.Output {
		want := &w.Output[i]
		if it.Type != want.Type || it.ID != want.ID || string(it.Status) != want.Status {
			t.Fatalf("output[%d] %s, want %+v", i, it.RawJSON(), want)
		}
		switch it.Type {
		case openai.ItemMessage:
			for j, c := range it.AsMessage().Content {
				if c.Type != want.Content[j].Type || c.Text != antStr(want.Content[j].Text) || c.Refusal != antStr(want.Content[j].Refusal) {
					t.Fatalf("output[%d].content[%d] %s", i, j, c.RawJSON())
				}
				text.WriteString(c.Text)
			}
		case openai.ItemFunctionCall:
			fc := it.AsFunctionCall()
			if fc.CallID != want.CallID || fc.Name != want.Name || !jsontext.Value(fc.Arguments).IsValid() {
				t.Fatalf("output[%d] %s", i, it.RawJSON())
			}
		case openai.ItemCustomToolCall:
			cc := it.AsCustomToolCall()
			if cc.CallID != want.CallID || cc.Name != want.Name || cc.Input != *want.Input {
				t.Fatalf("output[%d] %s", i, it.RawJSON())
			}
		default:
			t.Fatalf("output[%d] of type %s", i, it.Type)
		}
	}
	if r.OutputText() != text.String() {
		t.Fatalf("OutputText %q, items say %q", r.OutputText(), text.String())
	}
}
