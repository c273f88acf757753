package server

import (
	"github.com/go-json-experiment/json/jsontext"

	"github.com/llmgw/llmgw/gateway/jsonscan"
)

// scanChatRequest fills cr from body the way the strict decoder
// (strictJSON) would, for the bodies OpenAI's SDKs send: a body is decoded
// for every request, and the struct decoder took about 2.5 % of the
// gateway's CPU for it (BenchmarkParseChatRequest). It takes only members
// of chatRequest that the gateway supports, each once, with the types the
// struct holds (a message's content as a string, stop as a string or an
// array of strings); anything else — an unknown or unsupported member, a
// duplicate, a null where the decoder would zero a field, a number it
// would refuse, content parts, invalid UTF-8 — returns false, and the
// caller decodes the body with the strict decoder instead, whose answer or
// error is the one given. FuzzRequestScanAgrees holds the two to the same
// struct.
//
// cr must be zero; on false it is left partly filled, for the caller to
// zero again. Message contents are views of body, valid while body is.
func scanChatRequest(body []byte, cr *chatRequest) bool {
	r := &cr.scan // a local one would be allocated: the closures below take its address
	var seen jsonscan.SeenOnce
	return r.Root(body, func(name jsontext.Value) bool {
		switch string(name) {
		case `"model"`:
			return seen.First(0) && r.Peek() == '"' && r.Str(&cr.Model)
		case `"messages"`:
			return seen.First(1) && scanMessages(r, cr)
		case `"stream"`:
			return seen.First(2) && r.BoolOrNull(&cr.Stream)
		case `"stream_options"`:
			return seen.First(3) && jsonscan.Nullable(r, &cr.StreamOptions, func(o *streamOptions) bool {
				var seenOpt jsonscan.SeenOnce
				return r.Object(func(name jsontext.Value) bool {
					return string(name) == `"include_usage"` && seenOpt.First(0) && r.BoolOrNull(&o.IncludeUsage)
				})
			})
		case `"max_tokens"`:
			return seen.First(4) && r.IntegerOrNull(&cr.MaxTokens)
		case `"max_completion_tokens"`:
			return seen.First(5) && r.IntegerOrNull(&cr.MaxCompletionTokens)
		case `"temperature"`:
			return seen.First(6) && r.FloatOrNull(&cr.Temperature)
		case `"top_p"`:
			return seen.First(7) && r.FloatOrNull(&cr.TopP)
		case `"stop"`:
			return seen.First(8) && scanStop(r, &cr.Stop)
		case `"user"`:
			return seen.First(9) && jsonscan.Nullable(r, &cr.User, r.Str)
		case `"n"`:
			return seen.First(10) && r.IntegerOrNull(&cr.N)
		}
		return false
	})
}

// roles are the names a message's role usually has, kept as constants so
// that reading one costs no allocation.
var roles = []string{"user", "assistant", "system", "developer", "tool"}

// scanMessages reads messages: objects of a role and a string content.
func scanMessages(r *jsonscan.Reader, cr *chatRequest) bool {
	if r.Peek() != '[' {
		return false // null, which the decoder takes as no messages: its call
	}
	return r.Array(func() { cr.Messages = make([]chatMessage, 0, 4) }, func() bool {
		cr.Messages = append(cr.Messages, chatMessage{})
		m := &cr.Messages[len(cr.Messages)-1]
		var seen jsonscan.SeenOnce
		return r.Object(func(name jsontext.Value) bool {
			switch string(name) {
			case `"role"`:
				return seen.First(0) && r.Peek() == '"' && r.StrOf(&m.Role, roles)
			case `"content"`:
				if !seen.First(1) || r.Peek() != '"' {
					return false
				}
				v, ok := r.Value()
				m.Content = v
				return ok
			}
			return false
		})
	})
}

// scanStop reads a string or an array of strings, kept as the value's
// bytes as the decoder keeps them (parseStop reads them); anything nested
// deeper, whose names the strict decoder checks for duplicates, is its call.
func scanStop(r *jsonscan.Reader, dst **jsontext.Value) bool {
	mark := r.Mark()
	switch r.Peek() {
	case '"':
		if !r.SkipString() {
			return false
		}
	case '[':
		r.Open('[')
		if r.Peek() != ']' {
			for {
				if r.Peek() != '"' || !r.SkipString() {
					return false // an element that is not a string, or a bad one
				}
				if !r.Eat(',') {
					break
				}
			}
		}
		if !r.Close(']') {
			return false
		}
	default:
		return false
	}
	v := r.From(mark).Clone()
	*dst = &v
	return true
}
