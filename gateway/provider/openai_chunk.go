package provider

import "github.com/go-json-experiment/json/jsontext"

// oaiChunk reads an OpenAI stream chunk into c (jsonfast.go); false leaves
// the chunk to the struct decoder.
func (r *fastReader) oaiChunk(data []byte, c *oaiChunk) bool {
	var seen [3]bool
	return r.event(data, func(name jsontext.Value) bool {
		var ok bool
		switch string(name) {
		case `"choices"`:
			ok = !seen[0] && r.oaiChoices(c)
			seen[0] = true
		case `"usage"`:
			ok = !seen[1] && r.oaiUsage(&c.Usage)
			seen[1] = true
		case `"error"`:
			ok = !seen[2] && optional(r, &c.Error)
			seen[2] = true
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
		var seen [4]bool
		return r.object(func(name jsontext.Value) bool {
			var i int
			switch string(name) {
			case `"prompt_tokens"`:
				i = 0
			case `"completion_tokens"`:
				i = 1
			case `"prompt_tokens_details"`:
				i = 2
			case `"completion_tokens_details"`:
				i = 3
			default:
				return r.skip(name)
			}
			if seen[i] {
				return false // the struct decoder merges a repeated object: its call
			}
			seen[i] = true
			switch i {
			case 0:
				return r.integer(&u.PromptTokens)
			case 1:
				return r.integer(&u.CompletionTokens)
			case 2:
				return nullable(r, &u.PromptTokensDetails, func(d *oaiPromptDetails) bool {
					return r.soleCount(`"cached_tokens"`, &d.CachedTokens)
				})
			default:
				return nullable(r, &u.CompletionTokensDetails, func(d *oaiCompletionDetails) bool {
					return r.soleCount(`"reasoning_tokens"`, &d.ReasoningTokens)
				})
			}
		})
	})
}
