package translate

import "testing"

// BenchmarkAnthropicStreamEvent is one content event's cost in each
// Messages pair's stream: a text delta relayed (pass-through), and a chat
// chunk's text written as a content_block_delta (OpenAI provider).
func BenchmarkAnthropicStreamEvent(b *testing.B) {
	for _, c := range []struct {
		name, protocol, typ, data string
	}{
		{"passthrough", ProtocolAnthropic, "content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":" word"}}`},
		{"openai", ProtocolOpenAI, "", `{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-4.1","choices":[{"index":0,"delta":{"content":" word"},"logprobs":null,"finish_reason":null}],"usage":null}`},
	} {
		b.Run(c.name, func(b *testing.B) {
			m := aoTestMeta
			s := Messages(c.protocol).Stream(&m)
			typ, data := []byte(c.typ), []byte(c.data)
			var out []Chunk
			b.ReportAllocs()
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				var err error
				if out, _, err = s.Event(typ, data, out[:0]); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
