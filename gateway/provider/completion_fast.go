package provider

import "github.com/go-json-experiment/json/jsontext"

// A non-streamed answer is decoded once a request, by the same fast reader
// as stream events (jsonfast.go): the struct decoder took about a third of
// the gateway's own decoding time per JSON request (BenchmarkDecodeCompletion).
// Every top-level member and every member of a choice is read once; a
// repeat, a null array element or any shape the struct decoder would
// convert is left to it (FuzzCompletionReadersAgree).

// oaiResponse reads an OpenAI chat completion into resp; false leaves it
// to the struct decoder.
func (r *fastReader) oaiResponse(data []byte, resp *oaiResponse) bool {
	var seen seenOnce
	return r.event(data, func(name jsontext.Value) bool {
		switch string(name) {
		case `"id"`:
			return seen.first(0) && r.str(&resp.ID)
		case `"choices"`:
			return seen.first(1) && r.oaiResponseChoices(&resp.Choices)
		case `"usage"`:
			return seen.first(2) && r.oaiUsage(&resp.Usage)
		case `"error"`:
			return seen.first(3) && optional(r, &resp.Error)
		}
		return r.skip(name)
	})
}

func (r *fastReader) oaiResponseChoices(dst *[]oaiResponseChoice) bool {
	return r.array(func() { *dst = []oaiResponseChoice{} }, func() bool {
		*dst = append(*dst, oaiResponseChoice{})
		ch := &(*dst)[len(*dst)-1]
		var seen seenOnce
		return r.object(func(name jsontext.Value) bool {
			switch string(name) {
			case `"message"`:
				return seen.first(0) && r.object(func(name jsontext.Value) bool {
					if string(name) != `"content"` {
						return r.skip(name)
					}
					return seen.first(1) && nullable(r, &ch.Message.Content, r.str)
				})
			case `"finish_reason"`:
				return seen.first(2) && nullable(r, &ch.FinishReason, r.str)
			}
			return r.skip(name)
		})
	})
}

// antResponse reads an Anthropic message into resp; false leaves it to the
// struct decoder.
func (r *fastReader) antResponse(data []byte, resp *antResponse) bool {
	var seen seenOnce
	return r.event(data, func(name jsontext.Value) bool {
		switch string(name) {
		case `"id"`:
			return seen.first(0) && r.str(&resp.ID)
		case `"type"`:
			return seen.first(1) && r.str(&resp.Type)
		case `"content"`:
			return seen.first(2) && r.array(func() { resp.Content = []antContentBlock{} }, func() bool {
				resp.Content = append(resp.Content, antContentBlock{})
				return r.antBlockMembers(&resp.Content[len(resp.Content)-1])
			})
		case `"stop_reason"`:
			return seen.first(3) && r.str(&resp.StopReason)
		case `"usage"`:
			return seen.first(4) && r.antUsage(&resp.Usage)
		case `"error"`:
			return seen.first(5) && optional(r, &resp.Error)
		}
		return r.skip(name)
	})
}

// array reads an array of objects, or null (which leaves the caller's nil
// slice as it is), calling elem for each element; a null or non-object
// element is the struct decoder's call. opened runs at the '[': an array,
// even an empty one, is a non-nil slice, as the struct decoder makes it.
func (r *fastReader) array(opened func(), elem func() bool) bool {
	if r.peek() == 'n' {
		return r.literal("null")
	}
	if !r.open('[') {
		return false
	}
	opened()
	if r.peek() == ']' {
		return r.close(']')
	}
	for {
		if r.peek() != '{' || !elem() {
			return false
		}
		if !r.eat(',') {
			return r.close(']')
		}
	}
}
