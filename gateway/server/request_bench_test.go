package server

import (
	"strings"
	"testing"

	"github.com/llmgw/llmgw/api/tokens"
)

// BenchmarkParseChatRequest is the decode and validation of one chat body,
// with the gateway's default limits and its token counter (auth lookup is
// BenchmarkLookup in api/snapshot plus BenchmarkVerify in api/keyformat).
func BenchmarkParseChatRequest(b *testing.B) {
	lim := limits{maxMessages: 256, maxContentChars: 1 << 20}
	for _, c := range []struct{ name, body string }{
		{"small", `{"model":"alpha-large","messages":[{"role":"system","content":"be brief"},` +
			`{"role":"user","content":"hello there, how are you today?"}],"stream":true,"max_tokens":256}`},
		{"parts-4k", `{"model":"alpha-large","messages":[{"role":"user","content":[{"type":"text","text":"` +
			strings.Repeat("lorem ipsum ", 340) + `"}]}],"temperature":0.2}`},
		{"tools-image", `{"model":"alpha-large","messages":[{"role":"user","content":[{"type":"text","text":"what is it?"},` +
			`{"type":"image_url","image_url":{"url":"data:image/png;base64,` + strings.Repeat("iVBORw0KGgo", 3000) + `"}}]}],` +
			`"tools":[{"type":"function","function":{"name":"lookup","parameters":{"type":"object","properties":{"q":{"type":"string"}}}}}]}`},
	} {
		b.Run(c.name, func(b *testing.B) {
			body := []byte(c.body)
			b.ReportAllocs()
			b.SetBytes(int64(len(body)))
			for b.Loop() {
				if _, e := parseChatRequest(body, lim, tokens.Count); e != nil {
					b.Fatal(e.message)
				}
			}
		})
	}
}
