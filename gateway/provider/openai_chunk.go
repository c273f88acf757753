package provider

import "github.com/go-json-experiment/json/jsontext"

// oaiChunk reads an OpenAI stream chunk into c (jsonfast.go); false leaves
// the chunk to the struct decoder.
func (r *fastReader) oaiChunk(data []byte, c *oaiChunk) bool {
	var seen seenOnce
	return r.event(data, func(name jsontext.Value) bool {
		var ok bool
		switch string(name) {
		case `"choices"`:
			ok = seen.first(0) && r.oaiChoices(c)
		case `"usage"`:
			ok = seen.first(1) && r.oaiUsage(&c.Usage)
		case `"error"`:
			ok = seen.first(2) && optional(r, &c.Error)
		default:
			ok = r.skip(name)
		}
		return ok
	})
}

func (r *fastReader) oaiChoices(c *oaiChunk) bool {
	c.Choices = c.Choices[:0]
	if r.peek() == 'n' {
		return r.literal("null")
	}
	if !r.open('[') {
		return false
	}
	if r.peek() == ']' {
		return r.close(']')
	}
	for {
		if r.peek() != '{' {
			return false // a null or non-object element: the struct decoder's call
		}
		c.Choices = append(c.Choices, oaiChunkChoice{})
		ch := &c.Choices[len(c.Choices)-1]
		ok := r.object(func(name jsontext.Value) bool {
			switch string(name) {
			case `"index"`:
				return r.integer(&ch.Index)
			case `"delta"`:
				if r.peek() == 'n' {
					ch.Delta.Content = "" // null zeroes it; an object merges
				}
				return r.object(func(name jsontext.Value) bool {
					if string(name) == `"content"` {
						return r.str(&ch.Delta.Content)
					}
					return r.skip(name)
				})
			case `"finish_reason"`:
				return r.str(&ch.FinishReason)
			}
			return r.skip(name)
		})
		if !ok {
			return false
		}
		if !r.eat(',') {
			return r.close(']')
		}
	}
}

// oaiUsage reads a usage object or null. It comes once a stream, but the
// struct decoder took longer for it than for all of a stream's other events
// (BenchmarkDecodeChunk/openai-usage).
func (r *fastReader) oaiUsage(dst **oaiUsage) bool {
	return nullable(r, dst, func(u *oaiUsage) bool {
		var seen seenOnce
		return r.object(func(name jsontext.Value) bool {
			switch string(name) {
			case `"prompt_tokens"`:
				return seen.first(0) && r.integer(&u.PromptTokens)
			case `"completion_tokens"`:
				return seen.first(1) && r.integer(&u.CompletionTokens)
			case `"prompt_tokens_details"`:
				return seen.first(2) && nullable(r, &u.PromptTokensDetails, func(d *oaiPromptDetails) bool {
					return r.soleCount(`"cached_tokens"`, &d.CachedTokens)
				})
			case `"completion_tokens_details"`:
				return seen.first(3) && nullable(r, &u.CompletionTokensDetails, func(d *oaiCompletionDetails) bool {
					return r.soleCount(`"reasoning_tokens"`, &d.ReasoningTokens)
				})
			}
			return r.skip(name)
		})
	})
}
