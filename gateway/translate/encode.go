package translate

import (
	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// answerJSON is how the gateway writes the answers it builds: escaping as
// encoding/json does (<, >, & and U+2028/U+2029 as \u escapes), and
// replacing invalid UTF-8 rather than failing.
var answerJSON = json.JoinOptions(jsontext.EscapeForHTML(true), jsontext.EscapeForJS(true), jsontext.AllowInvalidUTF8(true))

// appendJSON appends v, one of the wire types, to b. Their members are
// strings, numbers, raw JSON the gateway validated and pointers to them:
// an error is a defect of the types, not of a request.
func appendJSON(b []byte, v any) []byte {
	out, err := json.Marshal(v, answerJSON)
	if err != nil {
		panic("translate: cannot encode " + err.Error())
	}
	return append(b, out...)
}
