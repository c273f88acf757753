package server

import (
	"encoding/json"
	"unicode/utf8"
)

// appendJSONString appends s as a JSON string. The SSE relay encodes every
// content delta with it, so the common case (plain ASCII, nothing to escape)
// is a single copy.
func appendJSONString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c == '"' || c == '\\' || c >= utf8.RuneSelf || c == '<' || c == '>' || c == '&' {
			enc, _ := json.Marshal(s) // rare path: let the stdlib get escaping exactly right
			return append(b, enc...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}
