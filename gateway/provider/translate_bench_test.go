package provider

import "testing"

// The adapters' hot functions, both ways and per stream event, for the
// before/after table of docs/benchmarks (make bench-go):
//
//	go test -run='^$' -bench='Encode|Decode' -benchmem ./gateway/provider/

func benchRequest() *Request {
	max := 256
	return &Request{Model: "alpha-large", MaxTokens: &max, Messages: []Message{
		{Role: "system", Content: "You are a concise assistant."},
		{Role: "user", Content: "Summarise the plot of Hamlet in three sentences, please."},
	}}
}

func BenchmarkEncodeRequest(b *testing.B) {
	for _, c := range []struct {
		name string
		enc  func(*Request, bool) ([]byte, error)
	}{{"openai", encodeOpenAI}, {"anthropic", encodeAnthropic}} {
		b.Run(c.name, func(b *testing.B) {
			req := benchRequest()
			b.ReportAllocs()
			for b.Loop() {
				if _, err := c.enc(req, true); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

const (
	benchOpenAICompletion = `{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"alpha-large",` +
		`"choices":[{"index":0,"message":{"role":"assistant","content":"Hamlet, prince of Denmark, learns that his uncle murdered his father."},"finish_reason":"stop"}],` +
		`"usage":{"prompt_tokens":25,"completion_tokens":14,"total_tokens":39}}`
	benchAnthropicCompletion = `{"id":"msg_1","type":"message","role":"assistant","model":"beta-large",` +
		`"content":[{"type":"text","text":"Hamlet, prince of Denmark, learns that his uncle murdered his father."}],` +
		`"stop_reason":"end_turn","usage":{"input_tokens":25,"output_tokens":14}}`
)

func BenchmarkDecodeCompletion(b *testing.B) {
	for _, c := range []struct {
		name string
		raw  []byte
		dec  func([]byte) (*Completion, *Error)
	}{{"openai", []byte(benchOpenAICompletion), decodeOpenAI}, {"anthropic", []byte(benchAnthropicCompletion), decodeAnthropic}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(c.raw)))
			for b.Loop() {
				if _, e := c.dec(c.raw); e != nil {
					b.Fatal(e)
				}
			}
		})
	}
}

// BenchmarkDecodeChunk is one content event's decode, the per-event cost of
// relaying a stream (the SSE framing is BenchmarkParse in ./sse).
func BenchmarkDecodeChunk(b *testing.B) {
	oai := []byte(`{"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":" word"},"finish_reason":null}]}`)
	ant := []byte(`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":" word"}}`)
	b.Run("openai", func(b *testing.B) {
		var d oaiDecoder
		var q queue
		b.ReportAllocs()
		for b.Loop() {
			if _, e := d.decode(nil, oai, &q); e != nil {
				b.Fatal(e)
			}
			q.pop()
		}
	})
	// The struct decoder alone, as every chunk was read before fastReader
	// (and as a chunk the fast reader leaves to it still is).
	b.Run("openai-struct", func(b *testing.B) {
		var c oaiChunk
		b.ReportAllocs()
		for b.Loop() {
			c.reset()
			if err := decodeJSON(oai, &c); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("anthropic", func(b *testing.B) {
		var d antDecoder
		var q queue
		typ := []byte("content_block_delta")
		b.ReportAllocs()
		for b.Loop() {
			if _, e := d.decode(typ, ant, &q); e != nil {
				b.Fatal(e)
			}
			q.pop()
		}
	})
	b.Run("anthropic-struct", func(b *testing.B) {
		var e antEvent
		b.ReportAllocs()
		for b.Loop() {
			e = antEvent{}
			if err := decodeJSON(ant, &e); err != nil {
				b.Fatal(err)
			}
		}
	})
}
