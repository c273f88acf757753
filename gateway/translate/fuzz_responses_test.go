package translate

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/llmgw/llmgw/api/wire/anthropic"
	"github.com/llmgw/llmgw/api/wire/openai"
)

// rsSeed adds every file of dir ending in ext to the corpus, through add.
func rsSeed(f *testing.F, dir, ext string, add func([]byte)) {
	paths, err := filepath.Glob(filepath.Join(dir, "*"+ext))
	if err != nil || len(paths) == 0 {
		f.Fatalf("no seeds in %s: %v", dir, err)
	}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		add(b)
	}
}

// rsFuzzRequest translates body with pair and checks: no panic; a
// refusal is a *NotCarried with a reason; anything else is compact JSON
// of the provider's wire type (nothing it lacks) for the model m.
func rsFuzzRequest(t *testing.T, pair ChatPair, body []byte, stream bool, into any) {
	segs, err := pair.Request(&ChatRequest{Body: body, Stream: stream}, "m")
	if err != nil {
		var nc *NotCarried
		if !errors.As(err, &nc) || nc.Reason == "" {
			t.Fatalf("error %T %v, want a *NotCarried with a reason", err, err)
		}
		return
	}
	b := bytes.Join(segs, nil)
	if !jsontext.Value(b).IsValid() {
		t.Fatalf("not valid JSON: %s", b)
	}
	if err := json.Unmarshal(b, into, json.RejectUnknownMembers(true)); err != nil {
		t.Fatalf("not the provider's request: %v: %s", err, b)
	}
}

func rsFuzzSeeds(f *testing.F) {
	rsSeed(f, rsRequestTestdata, ".json", func(b []byte) { f.Add(b, false) })
	f.Add(rsBody(`,"tools":[{"type":"custom","name":"c","format":{"type":"grammar","syntax":"regex","definition":"\\d+"}}],"tool_choice":{"type":"custom","name":"c"}`), true)
	f.Add(rsInputBody(`[{"type":"custom_tool_call","call_id":"c","name":"c","input":"x"},{"type":"custom_tool_call_output","call_id":"c","output":[{"type":"input_text","text":""}]},{"role":"assistant","content":[{"type":"refusal","refusal":"no"}]}]`), false)
}

// FuzzResponsesToOpenAIRequest: whatever the body, the translation to
// chat-completions refuses it or writes a chat-completions request.
func FuzzResponsesToOpenAIRequest(f *testing.F) {
	rsFuzzSeeds(f)
	f.Fuzz(func(t *testing.T, body []byte, stream bool) {
		var r openai.ChatCompletionRequest
		rsFuzzRequest(t, Responses(ProtocolOpenAI, false), body, stream, &r)
	})
}

// FuzzResponsesToAnthropicRequest: whatever the body, the translation to
// Messages refuses it or writes a Messages request whose turns alternate
// and have no empty text block.
func FuzzResponsesToAnthropicRequest(f *testing.F) {
	rsFuzzSeeds(f)
	f.Fuzz(func(t *testing.T, body []byte, stream bool) {
		var r anthropic.MessagesRequest
		rsFuzzRequest(t, Responses(ProtocolAnthropic, false), body, stream, &r)
		for i, m := range r.Messages {
			if i > 0 && m.Role == r.Messages[i-1].Role {
				t.Fatalf("two %s turns in a row", m.Role)
			}
			var blocks []anthropic.ContentBlock
			if m.Content.Kind() == '[' && json.Unmarshal(m.Content, &blocks) == nil {
				for _, b := range blocks {
					if b.Type == anthropic.BlockText && b.TextOf() == "" {
						t.Fatalf("an empty text block in messages[%d]", i)
					}
				}
			}
		}
	})
}

// FuzzResponsesPassthroughRequest: whatever object the caller sent (the
// server validated it is one), the body sent is it with model set, the
// rest as it was.
func FuzzResponsesPassthroughRequest(f *testing.F) {
	rsSeed(f, rsRequestTestdata, ".json", func(b []byte) { f.Add(b) })
	f.Add([]byte(` {"model":1,"model2":{"model":"x"}} `))
	f.Fuzz(func(t *testing.T, body []byte) {
		var in map[string]any
		if json.Unmarshal(body, &in) != nil {
			t.Skip("the server admits only a JSON object")
		}
		segs, err := rrPair().Request(&ChatRequest{Body: body}, "m")
		if err != nil {
			t.Fatal(err)
		}
		got := bytes.Join(segs, nil)
		if want := oaiWant(t, body, func(o map[string]any) { o["model"] = "m" }); canonical(t, got) != want {
			t.Fatalf("sent %s\nwant %s", got, want)
		}
	})
}

// rsFuzzStream feeds a transcript to a stream of pair, then End (or
// Fail): no panic, a failure is a *Failure, and the events written make a
// well-formed Responses stream.
func rsFuzzStream(t *testing.T, p ChatPair, events []antEvent) {
	m := rsTestMeta
	s := p.Stream(&m)
	var all, chunks []Chunk
	keep := func(cs []Chunk) {
		for _, c := range cs {
			c.Data = bytes.Clone(c.Data)
			all = append(all, c)
		}
	}
	for _, e := range events {
		var done bool
		var err error
		chunks, done, err = s.Event(e.typ, e.data, chunks[:0])
		keep(chunks)
		if err != nil {
			var f *Failure
			if !errors.As(err, &f) {
				t.Fatalf("error %T %v, want a *Failure", err, err)
			}
			keep(s.(StreamFailer).Fail("server_error", "x", nil))
			rsCheckStream(t, all)
			return
		}
		if done {
			break
		}
	}
	keep(s.End(rsBilled, nil))
	rsCheckStream(t, all)
}

// FuzzResponsesStreamFromChat: whatever chat-completions chunks come.
func FuzzResponsesStreamFromChat(f *testing.F) {
	rsSeed(f, "testdata/responses_openai/stream", ".sse", func(b []byte) { f.Add(b) })
	f.Fuzz(func(t *testing.T, transcript []byte) {
		var events []antEvent
		for _, d := range oaiEvents(transcript) {
			events = append(events, antEvent{data: d})
		}
		rsFuzzStream(t, rsPairFor(t, rsPairs[0].pair, true), events)
	})
}

// FuzzResponsesStreamFromAnthropic: whatever Messages events come.
func FuzzResponsesStreamFromAnthropic(f *testing.F) {
	rsSeed(f, "testdata/responses_anthropic/stream", ".sse", func(b []byte) { f.Add(b) })
	f.Fuzz(func(t *testing.T, transcript []byte) {
		rsFuzzStream(t, rsPairFor(t, rsPairs[1].pair, true), antParseSSE(transcript))
	})
}
