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
			ok = !seen[1] && optional(r, &c.Usage)
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
