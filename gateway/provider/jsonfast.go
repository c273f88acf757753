package provider

import (
	"bytes"
	"encoding/binary"
	"math/bits"
	"strconv"
	"unicode/utf8"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// fastReader reads the members of a provider's stream event that the relay
// uses straight off the event's bytes. Every event of a stream is decoded,
// so this runs per event; the struct decoder spends a good part of its time
// finding each member's field by name, which a switch over the few names
// that matter does not, and a scanner over the bytes does not keep the
// token state of a general decoder (BenchmarkDecodeChunk).
//
// A reader only takes the shapes the vendors send: plain member names,
// integer indexes, string-or-null texts, each top-level member once, valid
// JSON throughout (what it skips is checked, not trusted). On anything else
// — a type the struct would refuse or convert, an escaped name, a repeated
// member, trailing bytes, a surrogate escape or invalid UTF-8 outside a
// text it reads, nesting deeper than maxSkipDepth — it reports false and
// the caller decodes the event with the struct decoder, whose answer (or
// error) is then the one given. The fuzz tests FuzzChunkReaderAgrees and
// FuzzAnthropicReaderAgrees hold the two to the same result.
type fastReader struct {
	data []byte
	pos  int
	// text is the string unquote read: a view of data when it has no
	// escape (no copy), else unescaped into scratch, which the reader owns.
	text    []byte
	scratch []byte
}

// maxSkipDepth bounds the nesting of a skipped value: events are shallow,
// and a deeper one is the struct decoder's to judge.
const maxSkipDepth = 64

// event reads the one object in data, calling member for each name; it
// fails on anything after the object.
func (r *fastReader) event(data []byte, member func(name jsontext.Value) bool) bool {
	r.data, r.pos = data, 0
	if !r.open('{') || !r.members(member) || !r.close('}') {
		return false
	}
	r.ws()
	return r.pos == len(r.data)
}

// ws passes over JSON whitespace.
func (r *fastReader) ws() {
	for r.pos < len(r.data) {
		switch r.data[r.pos] {
		case ' ', '\t', '\n', '\r':
			r.pos++
		default:
			return
		}
	}
}

// peek is the kind of the next value, as jsontext names kinds: '{', '[',
// '"', 'n', 't', 'f', '0' (a number), or the delimiter '}' or ']'; 0 at
// the end or before anything else.
func (r *fastReader) peek() jsontext.Kind {
	r.ws()
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

// eat consumes c after any whitespace.
func (r *fastReader) eat(c byte) bool {
	r.ws()
	if r.pos < len(r.data) && r.data[r.pos] == c {
		r.pos++
		return true
	}
	return false
}

// open and close read one delimiter of the expected kind.
func (r *fastReader) open(k jsontext.Kind) bool  { return r.eat(byte(k)) }
func (r *fastReader) close(k jsontext.Kind) bool { return r.eat(byte(k)) }

// members calls member for each name of the object being read (its '{'
// consumed) and its value, up to and not including its closing brace.
func (r *fastReader) members(member func(name jsontext.Value) bool) bool {
	if r.peek() == '}' {
		return true
	}
	for {
		if r.peek() != '"' {
			return false
		}
		start := r.pos
		if !r.skipString() {
			return false
		}
		name := jsontext.Value(r.data[start:r.pos])
		if !r.eat(':') || !member(name) {
			return false
		}
		if !r.eat(',') {
			return r.peek() == '}'
		}
	}
}

// skip passes over an unknown member's value. An escaped name may spell a
// known one, which only the struct decoder would see.
func (r *fastReader) skip(name jsontext.Value) bool {
	return bytes.IndexByte(name, '\\') < 0 && r.skipValue()
}

// skipValue passes over one value, checking it is valid JSON.
func (r *fastReader) skipValue() bool { return r.skipDepth(0) }

func (r *fastReader) skipDepth(depth int) bool {
	if depth > maxSkipDepth {
		return false
	}
	switch r.peek() {
	case '"':
		return r.skipString()
	case '0':
		return r.skipNumber()
	case 'n':
		return r.literal("null")
	case 't':
		return r.literal("true")
	case 'f':
		return r.literal("false")
	case '{':
		r.pos++
		return r.members(func(jsontext.Value) bool { return r.skipDepth(depth + 1) }) && r.close('}')
	case '[':
		r.pos++
		if r.peek() == ']' {
			r.pos++
			return true
		}
		for {
			if !r.skipDepth(depth + 1) {
				return false
			}
			if !r.eat(',') {
				return r.close(']')
			}
		}
	}
	return false
}

// literal consumes word, which must not run on into a letter or digit.
func (r *fastReader) literal(word string) bool {
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

// skipString passes over a string (at its opening quote). It gives up on
// a \u escape of a lone surrogate and on invalid UTF-8, which the lenient
// struct decoder may take or replace: its call.
func (r *fastReader) skipString() bool {
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
func (r *fastReader) skipNumber() bool {
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

// value scans one value and returns its bytes.
func (r *fastReader) value() (jsontext.Value, bool) {
	r.ws()
	start := r.pos
	if !r.skipValue() {
		return nil, false
	}
	return jsontext.Value(r.data[start:r.pos]), true
}

// optional decodes a member that is usually absent or null (usage comes once
// a stream, error never in a good one) with the struct decoder.
func optional[T any](r *fastReader, dst **T) bool {
	v, ok := r.value()
	if !ok {
		return false
	}
	if v.Kind() == 'n' {
		*dst = nil
		return true
	}
	var x T
	if jsonv2.Unmarshal(v, &x, lenient) != nil {
		return false
	}
	*dst = &x
	return true
}

// object reads an object or null, calling member for each name (null
// calls nothing: the caller has zeroed what it fills).
func (r *fastReader) object(member func(name jsontext.Value) bool) bool {
	if r.peek() == 'n' {
		return r.literal("null")
	}
	return r.open('{') && r.members(member) && r.close('}')
}

// unquote reads a string or null (as "") into r.text, valid until the next
// read; invalid UTF-8, which the struct decoder replaces, is left to it.
func (r *fastReader) unquote() bool {
	switch r.peek() {
	case 'n':
		r.text = nil
		return r.literal("null")
	case '"':
	default:
		return false
	}
	start := r.pos
	if !r.skipString() {
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

// nullable reads null as a nil *dst, or a value into a new T with read,
// which *dst then points to: what the struct decoder does with a pointer.
func nullable[T any](r *fastReader, dst **T, read func(*T) bool) bool {
	if r.peek() == 'n' {
		*dst = nil
		return r.literal("null")
	}
	v := new(T)
	if !read(v) {
		return false
	}
	*dst = v
	return true
}

// integerOrNull reads a plain decimal integer, or null as a nil pointer.
func (r *fastReader) integerOrNull(dst **int) bool { return nullable(r, dst, r.integer) }

// seenOnce marks which of an object's members (by the caller's index) were
// read. A repeated one is left to the struct decoder, which merges a
// repeated object and overwrites a repeated value.
type seenOnce uint8

// first reports whether member i comes for the first time, and marks it.
func (s *seenOnce) first(i uint) bool {
	ok := *s&(1<<i) == 0
	*s |= 1 << i
	return ok
}

// soleCount reads an object in which only the integer member key matters;
// the others are skipped.
func (r *fastReader) soleCount(key string, n *int) bool {
	var seen seenOnce
	return r.object(func(name jsontext.Value) bool {
		if string(name) != key {
			return r.skip(name)
		}
		return seen.first(0) && r.integer(n)
	})
}

// integer reads a plain decimal integer or null (as 0).
func (r *fastReader) integer(dst *int) bool {
	v, ok := r.value()
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
