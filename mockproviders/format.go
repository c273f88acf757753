package mockproviders

import (
	"github.com/go-json-experiment/json/jsontext"
)

// formatKind is the answer format a request asks for: alpha's
// response_format, beta's output_config.format.
type formatKind int

const (
	formatText formatKind = iota
	formatJSONObject
	formatJSONSchema
)

type format struct {
	kind   formatKind
	schema jsontext.Value // formatJSONSchema: the schema, raw
}

// render turns what the answer says into the text of the format: itself;
// {"answer": "<said>"} for a JSON object; for a JSON schema, a value that
// validates against it (schemaValue). JSON answers put a space after each
// colon and comma, so they split into pieces at whitespace like any text.
func (f format) render(said string) string {
	var v []byte
	switch f.kind {
	case formatJSONObject:
		v, _ = jsontext.AppendQuote([]byte(`{"answer":`), said)
		v = append(v, '}')
	case formatJSONSchema:
		v = schemaValue(f.schema)
	default:
		return said
	}
	out, err := jsontext.AppendFormat(nil, v, jsontext.SpaceAfterColon(true), jsontext.SpaceAfterComma(true))
	if err != nil {
		return string(v)
	}
	return string(out)
}
