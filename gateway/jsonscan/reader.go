// Package jsonscan reads JSON documents of a known shape straight off
// their bytes, for the gateway's hot paths: every stream event a provider
// sends, every completion and every request body is decoded, and a
// struct decoder spends a good part of its time finding each member's
// field by name, which a switch over the few names that matter does not;
// a scanner over the bytes does not keep the token state of a general
// decoder either (BenchmarkDecodeChunk, BenchmarkParseChatRequest).
//
// A Reader only takes the shapes its caller names: plain member names,
// plain decimal integers, strings, valid JSON throughout (what it skips is
// checked, not trusted). On anything else — an escaped name, trailing
// bytes, a lone surrogate escape or invalid UTF-8, nesting deeper than
// maxSkipDepth, and whatever the caller's member function refuses — a
// read reports false, and the caller decodes the document with its struct
// decoder, whose answer (or error) is then the one given. Each caller has
// a fuzz test that holds the two to the same result.
package jsonscan

import (
	"bytes"
	"encoding/binary"
	"math/bits"
	"strconv"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"
)

// Reader is one scan's position in a document; the zero value is ready,
// and one Reader can read document after document.
type Reader struct {
	data []byte
	pos  int
	// text is the string unquote read: a view of data when it has no
	// escape (no copy), else unescaped into scratch, which the reader owns.
	text    []byte
	scratch []byte
}

// maxSkipDepth bounds the nesting of a skipped value: the documents read
// are shallow, and a deeper one is the struct decoder's to judge.
const maxSkipDepth = 64

// Root reads the one object in data, calling member for each name; it
// fails on anything after the object.
func (r *Reader) Root(data []byte, member func(name jsontext.Value) bool) bool {
	r.data, r.pos = data, 0
	if !r.Open('{') || !r.Members(member) || !r.Close('}') {
		return false
	}
	r.WS()
	return r.pos == len(r.data)
}

// WS passes over JSON whitespace.
func (r *Reader) WS() {
	for r.pos < len(r.data) {
		switch r.data[r.pos] {
		case ' ', '\t', '\n', '\r':
			r.pos++
		default:
			return
		}
	}
}

// Peek is the kind of the next value, as jsontext names kinds: '{', '[',
// '"', 'n', 't', 'f', '0' (a number), or the delimiter '}' or ']'; 0 at
// the end or before anything else.
func (r *Reader) Peek() jsontext.Kind {
	r.WS()
	if r.pos == len(r.data) {
		return 0
	}
	switch c := r.data[r.pos]; c {
	case '{', '[', '"', 'n', 't', 'f', '}', ']':
		return jsontext.Kind(c)
	case '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		return '0'
	}
	return 0
}

// Eat consumes c after any whitespace.
func (r *Reader) Eat(c byte) bool {
	r.WS()
	if r.pos < len(r.data) && r.data[r.pos] == c {
		r.pos++
		return true
	}
	return false
}

// Open and Close read one delimiter of the expected kind.
func (r *Reader) Open(k jsontext.Kind) bool  { return r.Eat(byte(k)) }
func (r *Reader) Close(k jsontext.Kind) bool { return r.Eat(byte(k)) }

// Members calls member for each name of the object being read (its '{'
// consumed) and its value, up to and not including its closing brace.
func (r *Reader) Members(member func(name jsontext.Value) bool) bool {
	if r.Peek() == '}' {
		return true
	}
	for {
		if r.Peek() != '"' {
			return false
		}
		start := r.pos
		if !r.SkipString() {
			return false
		}
		name := jsontext.Value(r.data[start:r.pos])
		if !r.Eat(':') || !member(name) {
			return false
		}
		if !r.Eat(',') {
			return r.Peek() == '}'
		}
	}
}

// Skip passes over an unknown member's value. An escaped name may spell a
// known one, which only the struct decoder would see.
func (r *Reader) Skip(name jsontext.Value) bool {
	return bytes.IndexByte(name, '\\') < 0 && r.SkipValue()
}

// SkipValue passes over one value, checking it is valid JSON.
func (r *Reader) SkipValue() bool { return r.skipDepth(0) }

func (r *Reader) skipDepth(depth int) bool {
	if depth > maxSkipDepth {
		return false
	}
	switch r.Peek() {
	case '"':
		return r.SkipString()
	case '0':
		return r.skipNumber()
	case 'n':
		return r.Literal("null")
	case 't':
		return r.Literal("true")
	case 'f':
		return r.Literal("false")
	case '{':
		r.pos++
		return r.Members(func(jsontext.Value) bool { return r.skipDepth(depth + 1) }) && r.Close('}')
	case '[':
		r.pos++
		if r.Peek() == ']' {
			r.pos++
			return true
		}
		for {
			if !r.skipDepth(depth + 1) {
				return false
			}
			if !r.Eat(',') {
				return r.Close(']')
			}
		}
	}
	return false
}

// Literal consumes word, which must not run on into a letter or digit.
func (r *Reader) Literal(word string) bool {
	end := r.pos + len(word)
	if end > len(r.data) || string(r.data[r.pos:end]) != word {
		return false
	}
	if end < len(r.data) && isWordByte(r.data[end]) {
		return false
	}
	r.pos = end
	return true
}

func isWordByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c >= 0x80
}

// SkipString passes over a string (at its opening quote). It gives up on
// a \u escape of a lone surrogate and on invalid UTF-8, which a lenient
// struct decoder may take or replace and a strict one refuses: its call.
func (r *Reader) SkipString() bool {
	d := r.data
	i := r.pos + 1
	ascii := true
	for i < len(d) {
		i = plainRun(d, i)
		if i == len(d) {
			return false
		}
		switch c := d[i]; {
		case c == '"':
			if !ascii && !utf8.Valid(d[r.pos+1:i]) {
				return false
			}
			r.pos = i + 1
			return true
		case c >= 0x80:
			ascii = false
			i++
		case c == '\\':
			if i+1 >= len(d) {
				return false
			}
			switch d[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				v, ok := hex4(d, i)
				switch {
				case !ok || v >= 0xdc00 && v <= 0xdfff:
					return false
				case v >= 0xd800 && v <= 0xdbff: // only as the first of a pair
					if lo, ok := hex4(d, i+6); !ok || lo < 0xdc00 || lo > 0xdfff {
						return false
					}
					i += 12
				default:
					i += 6
				}
			default:
				return false
			}
		default: // a control character
			return false
		}
	}
	return false
}

// plainRun is where the run of plain bytes (plainByte) from d[i] ends.
// It looks at eight bytes at a time: every string of every stream event is
// scanned, and a byte at a time this was the reader's largest cost
// (FuzzPlainRunMatchesTheTable holds the two ways to the same answer).
func plainRun(d []byte, i int) int {
	for i+8 <= len(d) {
		if m := notPlain(binary.LittleEndian.Uint64(d[i:])); m != 0 {
			// The lowest flag is the first byte that is not plain: a
			// borrow only ever flags bytes above a real one.
			return i + bits.TrailingZeros64(m)>>3
		}
		i += 8
	}
	for i < len(d) && plainByte[d[i]] {
		i++
	}
	return i
}

// notPlain has the high bit of each byte of x (little-endian) set where
// that byte is a control character, '"', '\\' or not ASCII, and maybe of
// bytes after the first such one.
func notPlain(x uint64) uint64 {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	control := (x - ones*0x20) &^ x // bytes below 0x20 (and any above a borrow)
	quote := x ^ (ones * '"')       // zero where '"'
	backslash := x ^ (ones * '\\')  // zero where '\\'
	zero := func(v uint64) uint64 { return (v - ones) &^ v }
	return (control | zero(quote) | zero(backslash) | x) & highs
}

// plainByte marks the bytes a string's scan passes without a second look:
// printable ASCII other than the quote and the backslash.
var plainByte = func() (t [256]bool) {
	for c := 0x20; c < 0x80; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// hex4 reads the four hex digits of a \u escape at d[i:].
func hex4(d []byte, i int) (uint64, bool) {
	if i+6 > len(d) || d[i] != '\\' || d[i+1] != 'u' {
		return 0, false
	}
	v, err := strconv.ParseUint(string(d[i+2:i+6]), 16, 16)
	return v, err == nil
}

// skipNumber passes over a number as JSON spells it:
// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func (r *Reader) skipNumber() bool {
	d, i := r.data, r.pos
	if i < len(d) && d[i] == '-' {
		i++
	}
	switch {
	case i < len(d) && d[i] == '0':
		i++
	case i < len(d) && d[i] >= '1' && d[i] <= '9':
		i = digits(d, i)
	default:
		return false
	}
	if i < len(d) && d[i] == '.' {
		if j := digits(d, i+1); j > i+1 {
			i = j
		} else {
			return false
		}
	}
	if i < len(d) && (d[i] == 'e' || d[i] == 'E') {
		i++
		if i < len(d) && (d[i] == '+' || d[i] == '-') {
			i++
		}
		if j := digits(d, i); j > i {
			i = j
		} else {
			return false
		}
	}
	if i < len(d) && isWordByte(d[i]) || i < len(d) && d[i] == '.' {
		return false
	}
	r.pos = i
	return true
}

func digits(d []byte, i int) int {
	for i < len(d) && d[i] >= '0' && d[i] <= '9' {
		i++
	}
	return i
}

// Value scans one value and returns its bytes.
func (r *Reader) Value() (jsontext.Value, bool) {
	r.WS()
	start := r.pos
	if !r.SkipValue() {
		return nil, false
	}
	return jsontext.Value(r.data[start:r.pos]), true
}

// Mark is where the next value starts (after any whitespace), for From.
func (r *Reader) Mark() int {
	r.WS()
	return r.pos
}

// From is the bytes read since mark: a view of the document.
func (r *Reader) From(mark int) jsontext.Value { return jsontext.Value(r.data[mark:r.pos]) }

// Object reads an object or null, calling member for each name (null
// calls nothing: the caller has zeroed what it fills).
func (r *Reader) Object(member func(name jsontext.Value) bool) bool {
	if r.Peek() == 'n' {
		return r.Literal("null")
	}
	return r.Open('{') && r.Members(member) && r.Close('}')
}

// unquote reads a string or null (as "") into r.text, valid until the next
// read; invalid UTF-8, which the struct decoder replaces, is left to it.
func (r *Reader) unquote() bool {
	switch r.Peek() {
	case 'n':
		r.text = nil
		return r.Literal("null")
	case '"':
	default:
		return false
	}
	start := r.pos
	if !r.SkipString() {
		return false
	}
	raw := r.data[start:r.pos]
	if bytes.IndexByte(raw, '\\') < 0 {
		r.text = raw[1 : len(raw)-1]
		return true
	}
	var err error
	r.scratch, err = jsontext.AppendUnquote(r.scratch[:0], raw)
	r.text = r.scratch
	return err == nil
}

// Str reads a string or null (as "").
func (r *Reader) Str(dst *string) bool {
	if !r.unquote() {
		return false
	}
	if string(r.text) != *dst { // an unchanged text costs no allocation
		*dst = string(r.text)
	}
	return true
}

// StrOf is Str for a value that is usually one of known: that one is
// assigned, so the common case allocates nothing.
func (r *Reader) StrOf(dst *string, known []string) bool {
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

// Nullable reads null as a nil *dst, or a value into a new T with read,
// which *dst then points to: what the struct decoder does with a pointer.
func Nullable[T any](r *Reader, dst **T, read func(*T) bool) bool {
	if r.Peek() == 'n' {
		*dst = nil
		return r.Literal("null")
	}
	v := new(T)
	if !read(v) {
		return false
	}
	*dst = v
	return true
}

// IntegerOrNull reads a plain decimal integer, or null as a nil pointer.
// (Not Nullable with the method value r.Integer: that value would be
// allocated for every call.)
func (r *Reader) IntegerOrNull(dst **int) bool {
	if r.Peek() == 'n' {
		*dst = nil
		return r.Literal("null")
	}
	var v int
	if r.Peek() != '0' || !r.Integer(&v) {
		return false
	}
	*dst = &v
	return true
}

// BoolOrNull reads true or false, or null as a nil pointer.
func (r *Reader) BoolOrNull(dst **bool) bool {
	var v bool
	switch r.Peek() {
	case 'n':
		*dst = nil
		return r.Literal("null")
	case 't':
		v = true
		if !r.Literal("true") {
			return false
		}
	case 'f':
		if !r.Literal("false") {
			return false
		}
	default:
		return false
	}
	*dst = &v
	return true
}

// FloatOrNull reads a number, or null as a nil pointer. A number
// strconv.ParseFloat refuses (out of range) is the struct decoder's to
// report.
func (r *Reader) FloatOrNull(dst **float64) bool {
	if r.Peek() == 'n' {
		*dst = nil
		return r.Literal("null")
	}
	if r.Peek() != '0' {
		return false
	}
	v, ok := r.Value()
	if !ok {
		return false
	}
	f, err := strconv.ParseFloat(string(v), 64)
	if err != nil {
		return false
	}
	*dst = &f
	return true
}

// SeenOnce marks which of an object's members (by the caller's index) were
// read. A repeated one is left to the struct decoder, which merges a
// repeated object and overwrites a repeated value.
type SeenOnce uint32

// First reports whether member i comes for the first time, and marks it.
func (s *SeenOnce) First(i uint) bool {
	ok := *s&(1<<i) == 0
	*s |= 1 << i
	return ok
}

// SoleCount reads an object in which only the integer member key matters;
// the others are skipped.
func (r *Reader) SoleCount(key string, n *int) bool {
	var seen SeenOnce
	return r.Object(func(name jsontext.Value) bool {
		if string(name) != key {
			return r.Skip(name)
		}
		return seen.First(0) && r.Integer(n)
	})
}

// Integer reads a plain decimal integer or null (as 0).
func (r *Reader) Integer(dst *int) bool {
	v, ok := r.Value()
	if !ok {
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

// Array reads an array of objects, or null (which leaves the caller's nil
// slice as it is), calling elem for each element; a null or non-object
// element is the struct decoder's call. opened runs at the '[': an array,
// even an empty one, is a non-nil slice, as the struct decoder makes it.
func (r *Reader) Array(opened func(), elem func() bool) bool {
	if r.Peek() == 'n' {
		return r.Literal("null")
	}
	if !r.Open('[') {
		return false
	}
	opened()
	if r.Peek() == ']' {
		return r.Close(']')
	}
	for {
		if r.Peek() != '{' || !elem() {
			return false
		}
		if !r.Eat(',') {
			return r.Close(']')
		}
	}
}
