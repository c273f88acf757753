package provider

import (
	"bytes"
	"io"
	"strconv"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// fastReader reads the members of a provider's stream event that the relay
// uses straight off jsontext's token stream. Every event of a stream is
// decoded, so this runs per event; the struct decoder spends a good part of
// its time finding each member's field by name, which a switch over the few
// names that matter does not (BenchmarkDecodeChunk).
//
// A reader only takes the shapes the vendors send: plain member names,
// integer indexes, string-or-null texts, each top-level member once. On
// anything else — a type the struct would refuse or convert, an escaped
// name, a repeated member, trailing bytes — it reports false and the caller
// decodes the event with the struct decoder, whose answer (or error) is then
// the one given. The fuzz tests FuzzChunkReaderAgrees and
// FuzzAnthropicReaderAgrees hold the two to the same result.
type fastReader struct {
	src  bytes.Buffer // the decoder reads a bytes.Buffer's bytes in place
	dec  jsontext.Decoder
	text []byte
}

// event reads the one object in data, calling member for each name; it
// fails on anything after the object.
func (r *fastReader) event(data []byte, member func(name jsontext.Value) bool) bool {
	r.src = *bytes.NewBuffer(data)
	r.dec.Reset(&r.src, lenient)
	if !r.open('{') || !r.members(member) || !r.close('}') {
		return false
	}
	_, err := r.dec.ReadToken()
	return err == io.EOF
}

// name reads the next member name of the current object; ok is false at
// its end (or on a syntax error, which the closing read then reports).
func (r *fastReader) name() (jsontext.Value, bool) {
	if r.dec.PeekKind() != '"' {
		return nil, false
	}
	n, err := r.dec.ReadValue()
	return n, err == nil
}

// open and close read one delimiter token of the expected kind.
func (r *fastReader) open(k jsontext.Kind) bool {
	if r.dec.PeekKind() != k {
		return false
	}
	_, err := r.dec.ReadToken()
	return err == nil
}

func (r *fastReader) close(k jsontext.Kind) bool {
	t, err := r.dec.ReadToken()
	return err == nil && t.Kind() == k
}

// skip passes over an unknown member's value. An escaped name may spell a
// known one, which only the struct decoder would see.
func (r *fastReader) skip(name jsontext.Value) bool {
	return bytes.IndexByte(name, '\\') < 0 && r.dec.SkipValue() == nil
}

// optional decodes a member that is usually absent or null (usage comes once
// a stream, error never in a good one) with the struct decoder.
func optional[T any](r *fastReader, dst **T) bool {
	if r.dec.PeekKind() == 'n' {
		*dst = nil
		return r.dec.SkipValue() == nil
	}
	var v T
	if jsonv2.UnmarshalDecode(&r.dec, &v) != nil {
		return false
	}
	*dst = &v
	return true
}

// object reads an object or null, calling member for each name (null
// calls nothing: the caller has zeroed what it fills).
func (r *fastReader) object(member func(name jsontext.Value) bool) bool {
	if r.dec.PeekKind() == 'n' {
		return r.dec.SkipValue() == nil
	}
	return r.open('{') && r.members(member) && r.close('}')
}

// members calls member for each name of the object being read, up to its
// closing brace.
func (r *fastReader) members(member func(name jsontext.Value) bool) bool {
	for {
		n, ok := r.name()
		if !ok {
			return true // the closing read reports a syntax error
		}
		if !member(n) {
			return false
		}
	}
}

// unquote reads a string or null (as "") into r.text; invalid UTF-8, which the
// struct decoder replaces, is left to it.
func (r *fastReader) unquote() bool {
	v, err := r.dec.ReadValue()
	if err != nil {
		return false
	}
	switch v.Kind() {
	case 'n':
		r.text = r.text[:0]
		return true
	case '"':
		r.text, err = jsontext.AppendUnquote(r.text[:0], v)
		return err == nil
	}
	return false
}

// str reads a string or null (as "").
func (r *fastReader) str(dst *string) bool {
	if !r.unquote() {
		return false
	}
	if string(r.text) != *dst { // an unchanged text costs no allocation
		*dst = string(r.text)
	}
	return true
}

// strOf is str for a value that is usually one of known: that one is
// assigned, so the common case allocates nothing.
func (r *fastReader) strOf(dst *string, known []string) bool {
	if !r.unquote() {
		return false
	}
	for _, k := range known {
		if string(r.text) == k {
			*dst = k
			return true
		}
	}
	*dst = string(r.text)
	return true
}

// integer reads a plain decimal integer or null (as 0).
func (r *fastReader) integer(dst *int) bool {
	v, err := r.dec.ReadValue()
	if err != nil {
		return false
	}
	switch v.Kind() {
	case 'n':
		*dst = 0
		return true
	case '0':
		n, err := strconv.Atoi(string(v))
		if err != nil {
			return false
		}
		*dst = n
		return true
	}
	return false
}
