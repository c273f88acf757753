package provider

import "testing"

// The adapters' hot functions, both ways and per stream event:
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
	// The last event of a stream, once a stream: usage as OpenAI sends it.
	oaiUsage := []byte(`{"id":"c","object":"chat.completion.chunk","choices":[],"usage":{"prompt_tokens":19,"completion_tokens":10,"total_tokens":29,` +
		`"prompt_tokens_details":{"cached_tokens":0,"audio_tokens":0},"completion_tokens_details":{"reasoning_tokens":0,"audio_tokens":0}}}`)
	ant := []byte(`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":" word"}}`)
	for _, c := range []struct {
		name string
		data []byte
	}{{"openai", oai}, {"openai-usage", oaiUsage}} {
		b.Run(c.name, func(b *testing.B) {
			var d oaiDecoder
			var q queue
			b.ReportAllocs()
			for b.Loop() {
				if _, e := d.decode(nil, c.data, &q); e != nil {
					b.Fatal(e)
				}
				q.pop()
			}
		})
	}
	// A stream's first and last events, once a stream each, as the beta mock
	// sends them.
	antStart := []byte(`{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"beta-large",` +
		`"content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":25,"output_tokens":1}}}`)
	antEnd := []byte(`{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":14}}`)
	for _, c := range []struct {
		name, typ string
		data      []byte
	}{{"anthropic", "content_block_delta", ant}, {"anthropic-start", "message_start", antStart}, {"anthropic-usage", "message_delta", antEnd}} {
		b.Run(c.name, func(b *testing.B) {
			var d antDecoder
			var q queue
			typ := []byte(c.typ)
			b.ReportAllocs()
			for b.Loop() {
				if _, e := d.decode(typ, c.data, &q); e != nil {
					b.Fatal(e)
				}
				q.pop()
			}
		})
	}
}
