package provider

import (
	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// Provider answers are decoded with encoding/json/v2 semantics
// (github.com/go-json-experiment/json): per stream event it costs a third of
// encoding/json's time and no allocation once the decoder's buffers are warm
// (BenchmarkDecodeChunk). Two of v2's strict defaults are turned off to keep
// encoding/json's tolerance of what vendors send — a repeated member (the
// last wins) and invalid UTF-8 (replaced by U+FFFD) — because rejecting
// either would turn an answer the caller could read into a protocol error.
// Member names match exactly, as every protocol here spells them.
var lenient = jsonv2.JoinOptions(jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true))

func decodeJSON(data []byte, v any) error { return jsonv2.Unmarshal(data, v, lenient) }
