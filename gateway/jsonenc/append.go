// Package jsonenc appends JSON values exactly as encoding/json's Marshal
// writes them, for the encoders of the hot path that append a known shape
// by hand instead of marshaling a struct by reflection (the completion and
// chunks the gateway answers with, the request it sends a provider). Each
// such encoder has a test that holds it byte for byte to json.Marshal of
// its struct.
package jsonenc

import (
	"encoding/json"
	"math"
	"strconv"
	"unicode/utf8"
)

// AppendString appends s as a JSON string. The SSE relay encodes every
// content delta with it, so the common case (plain ASCII, nothing to escape)
// is a single copy.
func AppendString(b []byte, s string) []byte {
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

// AppendFloat appends a finite f as json.Marshal writes a float64: the
// shortest decimal that reads back as f, in exponent form only below 1e-6
// or from 1e21 on, with a one-digit negative exponent unpadded. The caller
// has checked f is finite (Marshal refuses NaN and infinities).
func AppendFloat(b []byte, f float64) []byte {
	format := byte('f')
	if a := math.Abs(f); a != 0 && (a < 1e-6 || a >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		// e-07 → e-7, as Marshal writes it
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}
