package provider

import (
	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// Provider requests are written and answers read with
// github.com/go-json-experiment/json (encoding/json/v2 semantics), in the
// wire types of api/wire/openai and api/wire/anthropic.
//
// Two of v2's strict defaults are turned off when reading, to keep
// encoding/json's tolerance of what vendors send — a repeated member (the
// last wins) and invalid UTF-8 (replaced by U+FFFD) — because rejecting
// either would turn an answer the caller could read into a protocol error.
// Member names match exactly, as every protocol here spells them; members
// the wire types do not declare are skipped.
var lenient = jsonv2.JoinOptions(jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true))

func decodeJSON(data []byte, v any) error { return jsonv2.Unmarshal(data, v, lenient) }

// encodeJSON writes a request. Invalid UTF-8 (which validation keeps out)
// is replaced, as encoding/json does; a number the codec refuses (NaN or an
// infinity, which validation keeps out too) is an error.
func encodeJSON(v any) ([]byte, error) { return jsonv2.Marshal(v, jsontext.AllowInvalidUTF8(true)) }
