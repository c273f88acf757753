package provider

import "github.com/go-json-experiment/json/jsontext"

// antEventTypes and antDeltaTypes are the types a stream carries, kept as
// constants so that reading one costs no allocation.
var antEventTypes = []string{"content_block_delta", "message_delta", "message_start",
	"content_block_start", "content_block_stop", "message_stop", "ping", "error"}

var antDeltaTypes = []string{"text_delta", "input_json_delta", "thinking_delta", "signature_delta"}

// antEvent reads the events a stream is mostly made of (content_block_delta,
// message_delta without usage) into e, its delta into scratch (jsonfast.go);
// false leaves the event to the struct decoder, as it does for any event
// that carries a message, a content block, usage or an error.
func (r *fastReader) antEvent(data []byte, e *antEvent, scratch *antEventDelta) bool {
	var seen [2]bool
	return r.event(data, func(name jsontext.Value) bool {
		var ok bool
		switch string(name) {
		case `"type"`:
			ok = !seen[0] && r.strOf(&e.Type, antEventTypes)
			seen[0] = true
		case `"delta"`:
			ok = !seen[1] && r.antDelta(e, scratch)
			seen[1] = true
		case `"message"`, `"content_block"`, `"usage"`, `"error"`:
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
