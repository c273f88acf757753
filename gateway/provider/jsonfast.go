package provider

import (
	jsonv2 "github.com/go-json-experiment/json"

	"github.com/llmgw/llmgw/gateway/jsonscan"
)

// fastReader reads the members of a provider's stream event, or of a whole
// completion, that the relay uses straight off the bytes (jsonscan.Reader):
// every event of a stream is decoded, and the struct decoder spends a good
// part of its time finding each member's field by name. What a reader does
// not take is left to the struct decoder, whose answer (or error) is then
// the one given; the fuzz tests FuzzChunkReaderAgrees,
// FuzzAnthropicReaderAgrees and FuzzCompletionReadersAgree hold the two to
// the same result.
type fastReader struct{ jsonscan.Reader }

// optional decodes a member that is usually absent or null (usage comes once
// a stream, error never in a good one) with the struct decoder.
func optional[T any](r *fastReader, dst **T) bool {
	v, ok := r.Value()
	if !ok {
		return false
	}
	if v.Kind() == 'n' {
		*dst = nil
		return true
	}
	var x T
	if jsonv2.Unmarshal(v, &x, lenient) != nil {
		return false
	}
	*dst = &x
	return true
}
