package provider

import (
	"github.com/go-json-experiment/json/jsontext"

	"github.com/llmgw/llmgw/gateway/jsonscan"
)

// oaiChunk reads an OpenAI stream chunk into c (jsonfast.go); false leaves
// the chunk to the struct decoder.
func (r *fastReader) oaiChunk(data []byte, c *oaiChunk) bool {
	var seen jsonscan.SeenOnce
	return r.Root(data, func(name jsontext.Value) bool {
		var ok bool
		switch string(name) {
		case `"choices"`:
			ok = seen.First(0) && r.oaiChoices(c)
		case `"usage"`:
			ok = seen.First(1) && r.oaiUsage(&c.Usage)
		case `"error"`:
			ok = seen.First(2) && optional(r, &c.Error)
		default:
			ok = r.Skip(name)
		}
		return ok
	})
}

func (r *fastReader) oaiChoices(c *oaiChunk) bool {
	c.Choices = c.Choices[:0]
	if r.Peek() == 'n' {
		return r.Literal("null")
	}
	if !r.Open('[') {
		return false
	}
	if r.Peek() == ']' {
		return r.Close(']')
	}
	for {
		if r.Peek() != '{' {
			return false // a null or non-object element: the struct decoder's call
		}
		c.Choices = append(c.Choices, oaiChunkChoice{})
		ch := &c.Choices[len(c.Choices)-1]
		ok := r.Object(func(name jsontext.Value) bool {
			switch string(name) {
			case `"index"`:
				return r.Integer(&ch.Index)
			case `"delta"`:
				if r.Peek() == 'n' {
					ch.Delta.Content = "" // null zeroes it; an object merges
				}
				return r.Object(func(name jsontext.Value) bool {
					if string(name) == `"content"` {
						return r.Str(&ch.Delta.Content)
					}
					return r.Skip(name)
				})
			case `"finish_reason"`:
				return r.Str(&ch.FinishReason)
			}
			return r.Skip(name)
		})
		if !ok {
			return false
		}
		if !r.Eat(',') {
			return r.Close(']')
		}
	}
}

// oaiUsage reads a usage object or null. It comes once a stream, but the
// struct decoder took longer for it than for all of a stream's other events
// (BenchmarkDecodeChunk/openai-usage).
func (r *fastReader) oaiUsage(dst **oaiUsage) bool {
	return jsonscan.Nullable(&r.Reader, dst, func(u *oaiUsage) bool {
		var seen jsonscan.SeenOnce
		return r.Object(func(name jsontext.Value) bool {
			switch string(name) {
			case `"prompt_tokens"`:
				return seen.First(0) && r.Integer(&u.PromptTokens)
			case `"completion_tokens"`:
				return seen.First(1) && r.Integer(&u.CompletionTokens)
			case `"prompt_tokens_details"`:
				return seen.First(2) && jsonscan.Nullable(&r.Reader, &u.PromptTokensDetails, func(d *oaiPromptDetails) bool {
					return r.SoleCount(`"cached_tokens"`, &d.CachedTokens)
				})
			case `"completion_tokens_details"`:
				return seen.First(3) && jsonscan.Nullable(&r.Reader, &u.CompletionTokensDetails, func(d *oaiCompletionDetails) bool {
					return r.SoleCount(`"reasoning_tokens"`, &d.ReasoningTokens)
				})
			}
			return r.Skip(name)
		})
	})
}
