package provider

import (
	"github.com/go-json-experiment/json/jsontext"

	"github.com/llmgw/llmgw/gateway/jsonscan"
)

// A non-streamed answer is decoded once a request, by the same fast reader
// as stream events (jsonfast.go): the struct decoder took about a third of
// the gateway's own decoding time per JSON request (BenchmarkDecodeCompletion).
// Every top-level member and every member of a choice is read once; a
// repeat, a null array element or any shape the struct decoder would
// convert is left to it (FuzzCompletionReadersAgree).

// oaiResponse reads an OpenAI chat completion into resp; false leaves it
// to the struct decoder.
func (r *fastReader) oaiResponse(data []byte, resp *oaiResponse) bool {
	var seen jsonscan.SeenOnce
	return r.Root(data, func(name jsontext.Value) bool {
		switch string(name) {
		case `"id"`:
			return seen.First(0) && r.Str(&resp.ID)
		case `"choices"`:
			return seen.First(1) && r.oaiResponseChoices(&resp.Choices)
		case `"usage"`:
			return seen.First(2) && r.oaiUsage(&resp.Usage)
		case `"error"`:
			return seen.First(3) && optional(r, &resp.Error)
		}
		return r.Skip(name)
	})
}

func (r *fastReader) oaiResponseChoices(dst *[]oaiResponseChoice) bool {
	return r.Array(func() { *dst = []oaiResponseChoice{} }, func() bool {
		*dst = append(*dst, oaiResponseChoice{})
		ch := &(*dst)[len(*dst)-1]
		var seen jsonscan.SeenOnce
		return r.Object(func(name jsontext.Value) bool {
			switch string(name) {
			case `"message"`:
				return seen.First(0) && r.Object(func(name jsontext.Value) bool {
					if string(name) != `"content"` {
						return r.Skip(name)
					}
					return seen.First(1) && jsonscan.Nullable(&r.Reader, &ch.Message.Content, r.Str)
				})
			case `"finish_reason"`:
				return seen.First(2) && jsonscan.Nullable(&r.Reader, &ch.FinishReason, r.Str)
			}
			return r.Skip(name)
		})
	})
}

// antResponse reads an Anthropic message into resp; false leaves it to the
// struct decoder.
func (r *fastReader) antResponse(data []byte, resp *antResponse) bool {
	var seen jsonscan.SeenOnce
	return r.Root(data, func(name jsontext.Value) bool {
		switch string(name) {
		case `"id"`:
			return seen.First(0) && r.Str(&resp.ID)
		case `"type"`:
			return seen.First(1) && r.Str(&resp.Type)
		case `"content"`:
			return seen.First(2) && r.Array(func() { resp.Content = []antContentBlock{} }, func() bool {
				resp.Content = append(resp.Content, antContentBlock{})
				return r.antBlockMembers(&resp.Content[len(resp.Content)-1])
			})
		case `"stop_reason"`:
			return seen.First(3) && r.Str(&resp.StopReason)
		case `"usage"`:
			return seen.First(4) && r.antUsage(&resp.Usage)
		case `"error"`:
			return seen.First(5) && optional(r, &resp.Error)
		}
		return r.Skip(name)
	})
}
