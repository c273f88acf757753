package translate

import (
	"strings"
	"testing"
)

// BenchmarkAnthropicStreamTextDelta is the hot path of a stream: one
// text_delta event in, one content chunk out.
func BenchmarkAnthropicStreamTextDelta(b *testing.B) {
	m := antTestMeta
	s := openAIToAnthropic().Stream(&m)
	typ := []byte("content_block_delta")
	data := []byte(`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hello, world"}}`)
	var out []Chunk
	b.ReportAllocs()
	for b.Loop() {
		var err error
		if out, _, err = s.Event(typ, data, out[:0]); err != nil || len(out) != 1 {
			b.Fatal(out, err)
		}
	}
}

// BenchmarkOpenAIToAnthropicRequestImage translates a request holding a
// 1 MiB data URL image: the bytes it allocates per byte of body.
func BenchmarkOpenAIToAnthropicRequestImage(b *testing.B) {
	body := antMessagesBody(`[{"role":"user","content":[{"type":"text","text":"what is it?"},{"type":"image_url","image_url":{"url":"data:image/png;base64,` + strings.Repeat("QUFB", 1<<18) + `"}}]}]`)
	req := &ChatRequest{Body: body}
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := openAIToAnthropic().Request(req, "claude-x"); err != nil {
			b.Fatal(err)
		}
	}
}
