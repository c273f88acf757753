package provider

import (
	"github.com/go-json-experiment/json/jsontext"

	"github.com/llmgw/llmgw/gateway/jsonscan"
)

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
	var seen jsonscan.SeenOnce
	return r.Root(data, func(name jsontext.Value) bool {
		var ok bool
		switch string(name) {
		case `"type"`:
			ok = seen.First(0) && r.StrOf(&e.Type, antEventTypes)
		case `"delta"`:
			ok = seen.First(1) && r.antDelta(e, scratch)
		case `"message"`:
			ok = seen.First(2) && r.antMessage(&e.Message)
		case `"content_block"`:
			ok = seen.First(3) && r.antBlock(&e.ContentBlock)
		case `"usage"`:
			ok = seen.First(4) && r.antUsage(&e.Usage)
		case `"error"`:
			ok = false
		default:
			ok = r.Skip(name)
		}
		return ok
	})
}

func (r *fastReader) antDelta(e *antEvent, scratch *antEventDelta) bool {
	switch r.Peek() {
	case 'n':
		e.Delta = nil
		return r.Literal("null")
	case '{':
	default:
		return false
	}
	*scratch = antEventDelta{}
	e.Delta = scratch
	return r.Object(func(name jsontext.Value) bool {
		switch string(name) {
		case `"type"`:
			return r.StrOf(&scratch.Type, antDeltaTypes)
		case `"text"`:
			return r.Str(&scratch.Text)
		case `"stop_reason"`:
			return r.Str(&scratch.StopReason)
		}
		return r.Skip(name)
	})
}

// antMessage reads message_start's message: only its usage matters. A
// repeated usage is the struct decoder's (it merges the two).
func (r *fastReader) antMessage(dst **antEventMessage) bool {
	return jsonscan.Nullable(&r.Reader, dst, func(m *antEventMessage) bool {
		var seen jsonscan.SeenOnce
		return r.Object(func(name jsontext.Value) bool {
			if string(name) != `"usage"` {
				return r.Skip(name)
			}
			return seen.First(0) && r.antUsage(&m.Usage)
		})
	})
}

// antBlock reads content_block_start's block.
func (r *fastReader) antBlock(dst **antContentBlock) bool {
	return jsonscan.Nullable(&r.Reader, dst, r.antBlockMembers)
}

// antBlockMembers reads a content block (or null) into b: a stream's
// content_block_start, or one of a message's blocks. A repeated member of a
// block or of a usage is a plain value the struct decoder overwrites, as
// these do.
func (r *fastReader) antBlockMembers(b *antContentBlock) bool {
	return r.Object(func(name jsontext.Value) bool {
		switch string(name) {
		case `"type"`:
			return r.StrOf(&b.Type, antBlockTypes)
		case `"text"`:
			return r.Str(&b.Text)
		}
		return r.Skip(name)
	})
}

func (r *fastReader) antUsage(dst **antUsage) bool {
	return jsonscan.Nullable(&r.Reader, dst, func(u *antUsage) bool {
		return r.Object(func(name jsontext.Value) bool {
			switch string(name) {
			case `"input_tokens"`:
				return r.IntegerOrNull(&u.InputTokens)
			case `"output_tokens"`:
				return r.IntegerOrNull(&u.OutputTokens)
			case `"cache_creation_input_tokens"`:
				return r.Integer(&u.CacheCreationInputTokens)
			case `"cache_read_input_tokens"`:
				return r.Integer(&u.CacheReadInputTokens)
			}
			return r.Skip(name)
		})
	})
}
