package translate

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/go-json-experiment/json"

	"github.com/llmgw/llmgw/api/wire/openai"
)

// antSeed adds every file of testdata/openai_anthropic/<dir> ending in ext
// to the corpus, through add.
func antSeed(f *testing.F, dir, ext string, add func([]byte)) {
	paths, err := filepath.Glob(filepath.Join(antTestdata, dir, "*"+ext))
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

// FuzzOpenAIToAnthropicRequest: whatever the body, Request does not
// panic, and either refuses it with a *NotCarried (its param as the caller
// named it: the server makes it safe to show) or writes a compact, valid
// Messages request (roles alternating, no empty text block).
func FuzzOpenAIToAnthropicRequest(f *testing.F) {
	antSeed(f, "request", ".json", func(b []byte) { f.Add(b, false) })
	f.Add(antBody(`,"tools":[{"type":"custom","custom":{}}],"n":2`), true)
	f.Add(antMessagesBody(`[{"role":"assistant","tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":" {\"a\":[1]} "}}]},{"role":"tool","tool_call_id":"c","content":[{"type":"text","text":""}]}]`), false)
	f.Fuzz(func(t *testing.T, body []byte, stream bool) {
		segs, err := openAIToAnthropic().Request(&ChatRequest{Body: body, Stream: stream}, "claude-x")
		if err != nil {
			var nc *NotCarried
			if !errors.As(err, &nc) || nc.Reason == "" {
				t.Fatalf("error %T %v, want a *NotCarried with a reason", err, err)
			}
			return
		}
		antCheckRequest(t, bytes.Join(segs, nil))
	})
}

// FuzzAnthropicStreamToChat: whatever the events, the stream does not
// panic, every chunk is a valid chat.completion.chunk, and a chunk is a
// commit point exactly when it carries content or a tool call.
func FuzzAnthropicStreamToChat(f *testing.F) {
	antSeed(f, "stream", ".sse", func(b []byte) { f.Add(b, true) })
	f.Add([]byte("event: content_block_delta\ndata: {\"index\":0,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\"}}\n\n"), false)
	f.Fuzz(func(t *testing.T, transcript []byte, includeUsage bool) {
		m := antTestMeta
		m.IncludeUsage = includeUsage
		s := openAIToAnthropic().Stream(&m)
		var chunks []Chunk
		for _, e := range antParseSSE(transcript) {
			var done bool
			var err error
			chunks, done, err = s.Event(e.typ, e.data, chunks[:0])
			for _, c := range chunks {
				antCheckChunk(t, c)
			}
			if err != nil {
				var f *Failure
				if !errors.As(err, &f) {
					t.Fatalf("error %T %v, want a *Failure", err, err)
				}
				return
			}
			if done {
				break
			}
		}
		end := s.End(Usage{InputTokens: 1, OutputTokens: 2}, nil)
		if len(end) != map[bool]int{false: 0, true: 1}[includeUsage] {
			t.Fatalf("End wrote %d chunks with include_usage %v", len(end), includeUsage)
		}
		for _, c := range end {
			antCheckChunk(t, c)
		}
	})
}

// FuzzAnthropicAnswerToChat: whatever the answer, Answer does not panic,
// and either fails with a *Failure or writes a valid chat.completion whose
// model is the alias, with usage only when the answer had both counts.
func FuzzAnthropicAnswerToChat(f *testing.F) {
	antSeed(f, "answer", ".json", func(b []byte) { f.Add(b) })
	f.Add([]byte(`{"type":"message","content":[{"type":"tool_use","id":"t","name":"f","input":{"a":[1,{"b":null}]}}],"stop_reason":"tool_use"}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		m := antTestMeta
		a, err := openAIToAnthropic().Answer(raw, &m)
		if err != nil {
			var fl *Failure
			if !errors.As(err, &fl) {
				t.Fatalf("error %T %v, want a *Failure", err, err)
			}
			return
		}
		var c openai.ChatCompletion
		if err := json.Unmarshal(a.Body, &c); err != nil {
			t.Fatalf("answer is not a chat.completion: %v: %s", err, a.Body)
		}
		if c.Model != m.Alias || len(c.Choices) != 1 {
			t.Fatalf("answer %s", a.Body)
		}
		if (a.Usage == nil) != (c.Usage == nil) {
			t.Fatalf("usage %+v reported, answer %s", a.Usage, a.Body)
		}
	})
}
