package server

import (
	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

const doneEvent = "data: [DONE]\n\n"

// answerJSON is how the gateway writes its own answers (errors), the
// api/wire/openai types: escaping as encoding/json does (<, >, & and
// U+2028/U+2029 as \u escapes), and replacing invalid UTF-8 rather than
// failing.
var answerJSON = jsonv2.JoinOptions(jsontext.EscapeForHTML(true), jsontext.EscapeForJS(true), jsontext.AllowInvalidUTF8(true))

// appendWriter is an io.Writer that appends to b.
type appendWriter struct{ b []byte }

func (w *appendWriter) Write(p []byte) (int, error) {
	w.b = append(w.b, p...)
	return len(p), nil
}

// appendJSON appends v, one of the answer types of api/wire/openai, to w.b.
// Their members are strings, integers and pointers to them, which
// answerJSON writes whatever their values: an error is a defect of the
// types (the encode tests would fail), not of a request.
func appendJSON(w *appendWriter, v any) {
	if err := jsonv2.MarshalWrite(w, v, answerJSON); err != nil {
		panic("server: cannot encode an answer: " + err.Error())
	}
}

// appendErrorEvent is the one structured error event of an interrupted stream.
func appendErrorEvent(b []byte, e *apiError, requestID string) []byte {
	b = append(b, "data: "...)
	b = appendErrorJSON(b, e, requestID)
	return append(b, "\n\n"...)
}
