package provider

import "github.com/go-json-experiment/json/jsontext"

// antEventTypes and antDeltaTypes are the types a stream carries, kept as
// constants so that reading one costs no allocation.
var antEventTypes = []string{"content_block_delta", "message_delta", "message_start",
	"content_block_start", "content_block_stop", "message_stop", "ping", "error"}

var antDeltaTypes = []string{"text_delta", "input_json_delta", "thinking_delta", "signature_delta"}

var antBlockTypes = []string{"text", "tool_use", "thinking"}

// antEvent reads a stream's events into e, its delta into scratch
// (jsonfast.go); false leaves the event to the struct decoder, as it does
// for an error event. A stream's first and last events (message_start,
// message_delta with usage) each took the struct decoder longer than all
// of its content_block_delta events together (BenchmarkDecodeChunk).
func (r *fastReader) antEvent(data []byte, e *antEvent, scratch *antEventDelta) bool {
	var seen seenOnce
	return r.event(data, func(name jsontext.Value) bool {
		var ok bool
		switch string(name) {
		case `"type"`:
			ok = seen.first(0) && r.strOf(&e.Type, antEventTypes)
		case `"delta"`:
			ok = seen.first(1) && r.antDelta(e, scratch)
		case `"message"`:
			ok = seen.first(2) && r.antMessage(&e.Message)
		case `"content_block"`:
			ok = seen.first(3) && r.antBlock(&e.ContentBlock)
		case `"usage"`:
			ok = seen.first(4) && r.antUsage(&e.Usage)
		case `"error"`:
			ok = false
		default:
			ok = r.skip(name)
		}
		return ok
	})
}

func (r *fastReader) antDelta(e *antEvent, scratch *antEventDelta) bool {
	switch r.peek() {
	case 'n':
		e.Delta = nil
		return r.literal("null")
	case '{':
	default:
		return false
	}
	*scratch = antEventDelta{}
	e.Delta = scratch
	return r.object(func(name jsontext.Value) bool {
		switch string(name) {
		case `"type"`:
			return r.strOf(&scratch.Type, antDeltaTypes)
		case `"text"`:
			return r.str(&scratch.Text)
		case `"stop_reason"`:
			return r.str(&scratch.StopReason)
		}
		return r.skip(name)
	})
}

// antMessage reads message_start's message: only its usage matters. A
// repeated usage is the struct decoder's (it merges the two).
func (r *fastReader) antMessage(dst **antEventMessage) bool {
	return nullable(r, dst, func(m *antEventMessage) bool {
		var seen seenOnce
		return r.object(func(name jsontext.Value) bool {
			if string(name) != `"usage"` {
				return r.skip(name)
			}
			return seen.first(0) && r.antUsage(&m.Usage)
		})
	})
}

// antBlock reads content_block_start's block.
func (r *fastReader) antBlock(dst **antContentBlock) bool {
	return nullable(r, dst, r.antBlockMembers)
}

// antBlockMembers reads a content block (or null) into b: a stream's
// content_block_start, or one of a message's blocks. A repeated member of a
// block or of a usage is a plain value the struct decoder overwrites, as
// these do.
func (r *fastReader) antBlockMembers(b *antContentBlock) bool {
	return r.object(func(name jsontext.Value) bool {
		switch string(name) {
		case `"type"`:
			return r.strOf(&b.Type, antBlockTypes)
		case `"text"`:
			return r.str(&b.Text)
		}
		return r.skip(name)
	})
}

func (r *fastReader) antUsage(dst **antUsage) bool {
	return nullable(r, dst, func(u *antUsage) bool {
		return r.object(func(name jsontext.Value) bool {
			switch string(name) {
			case `"input_tokens"`:
				return r.integerOrNull(&u.InputTokens)
			case `"output_tokens"`:
				return r.integerOrNull(&u.OutputTokens)
			case `"cache_creation_input_tokens"`:
				return r.integer(&u.CacheCreationInputTokens)
			case `"cache_read_input_tokens"`:
				return r.integer(&u.CacheReadInputTokens)
			}
			return r.skip(name)
		})
	})
}
