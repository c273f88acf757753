package translate

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
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
// panic, and either refuses it with a *NotCarried naming a printable
// parameter or writes a compact, valid Messages request (roles
// alternating, no empty text block).
func FuzzOpenAIToAnthropicRequest(f *testing.F) {
	antSeed(f, "request", ".json", func(b []byte) { f.Add(b, false) })
	f.Add(antBody(`,"tools":[{"type":"custom","custom":{}}],"n":2`), true)
	f.Add(antMessagesBody(`[{"role":"assistant","tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":" {\"a\":[1]} "}}]},{"role":"tool","tool_call_id":"c","content":[{"type":"text","text":""}]}]`), false)
	f.Fuzz(func(t *testing.T, body []byte, stream bool) {
		segs, err := openAIToAnthropic().Request(&ChatRequest{Body: body, Stream: stream}, "claude-x")
		if err != nil {
			var nc *NotCarried
			if !errors.As(err, &nc) {
				t.Fatalf("error %T %v, want a *NotCarried", err, err)
			}
			for _, c := range []byte(nc.Param) {
				if c < 0x20 || c > 0x7e {
					t.Fatalf("param %q is not printable ASCII", nc.Param)
				}
			}
			return
		}
		if len(segs) != 1 {
			t.Fatalf("%d segments", len(segs))
		}
		antCheckRequest(t, segs[0])
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
