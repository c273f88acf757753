package snapshot

import (
	"bytes"
	"encoding/json"
	"math"
	"reflect"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"unicode/utf8"
)

// The canonical form (see Encode) is defined by a round trip through a generic
// tree: json.Marshal, decode into map[string]any, re-encode indented. At
// 50,000 keys that round trip takes about two seconds and allocates a map per
// object, and both the controller (every compile) and the gateway (every
// reload) pay it. appendCanonical writes the same bytes straight from the Go
// values: a per-type plan lists each struct's JSON fields sorted by name (the
// order the tree's map encoding produces), so the cost is one pass with no
// intermediate tree. Anything the plan does not model exactly (interfaces,
// embedded structs, `,string` tags, marshalers other than a JSON string)
// makes the plan unsupported and the caller falls back to the tree, so a new
// field of an unusual kind costs speed, never correctness. Equality with the
// tree is tested on the golden files, random snapshots and a fuzz target.

// fastCanonical returns the canonical encoding of v, or ok=false when v's
// type has a kind the fast path does not model.
func fastCanonical(v any) (_ []byte, ok bool) {
	rv := reflect.ValueOf(v)
	p := planFor(rv.Type())
	if p == nil {
		return nil, false
	}
	// Sized like the last encoding: growing an 18 MB buffer by doubling
	// copies it about twice over.
	last := int(lastSize.Load())
	b := make([]byte, 0, max(4096, last+last/8))
	b, ok = p(b, rv, 0)
	if !ok {
		return nil, false
	}
	lastSize.Store(int64(len(b)))
	return append(b, '\n'), true
}

var lastSize atomic.Int64

// encodeFn appends the canonical form of v at nesting depth; ok=false means
// the value needs the tree (a marshaler produced something other than a
// string).
type encodeFn func(b []byte, v reflect.Value, depth int) ([]byte, bool)

var (
	plansMu sync.Mutex
	plans   = map[reflect.Type]encodeFn{}
)

// planFor returns the cached plan for t, nil if t is unsupported.
func planFor(t reflect.Type) encodeFn {
	plansMu.Lock()
	defer plansMu.Unlock()
	return buildPlan(t, map[reflect.Type]bool{})
}

var (
	jsonMarshaler = reflect.TypeFor[json.Marshaler]()
	textMarshaler = reflect.TypeFor[interface{ MarshalText() ([]byte, error) }]()
)

// buildPlan must be called with plansMu held; building marks recursive types
// unsupported (the snapshot has none) rather than looping.
func buildPlan(t reflect.Type, building map[reflect.Type]bool) encodeFn {
	if p, ok := plans[t]; ok {
		return p
	}
	if building[t] {
		return nil
	}
	building[t] = true
	defer delete(building, t)
	p := newPlan(t, building)
	plans[t] = p
	return p
}

func newPlan(t reflect.Type, building map[reflect.Type]bool) encodeFn {
	// A nil pointer encodes as null whatever its methods (encoding/json does
	// not call MarshalJSON on it), so pointers go to the Pointer case and the
	// element type decides.
	if t.Kind() != reflect.Pointer {
		switch {
		case t.Implements(jsonMarshaler):
			return encodeMarshaler // time.Time
		case reflect.PointerTo(t).Implements(jsonMarshaler),
			t.Implements(textMarshaler), reflect.PointerTo(t).Implements(textMarshaler):
			return nil // addressability rules and text marshalers: the tree's business
		}
	}
	switch t.Kind() {
	case reflect.String:
		return func(b []byte, v reflect.Value, _ int) ([]byte, bool) { return appendString(b, v.String()), true }
	case reflect.Bool:
		return func(b []byte, v reflect.Value, _ int) ([]byte, bool) { return strconv.AppendBool(b, v.Bool()), true }
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return func(b []byte, v reflect.Value, _ int) ([]byte, bool) { return strconv.AppendInt(b, v.Int(), 10), true }
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return func(b []byte, v reflect.Value, _ int) ([]byte, bool) {
			return strconv.AppendUint(b, v.Uint(), 10), true
		}
	case reflect.Float32, reflect.Float64:
		// json.Marshal's float text is what the tree keeps (UseNumber).
		return encodeMarshaler
	case reflect.Pointer:
		elem := buildPlan(t.Elem(), building)
		if elem == nil {
			return nil
		}
		return func(b []byte, v reflect.Value, depth int) ([]byte, bool) {
			if v.IsNil() {
				return append(b, "null"...), true
			}
			return elem(b, v.Elem(), depth)
		}
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 {
			return nil // []byte is base64, [N]byte an array: leave both to the tree
		}
		elem := buildPlan(t.Elem(), building)
		if elem == nil {
			return nil
		}
		isSlice := t.Kind() == reflect.Slice
		return func(b []byte, v reflect.Value, depth int) ([]byte, bool) {
			if isSlice && v.IsNil() {
				return append(b, "null"...), true
			}
			n := v.Len()
			if n == 0 {
				return append(b, "[]"...), true
			}
			b = append(b, '[')
			ok := true
			for i := 0; i < n && ok; i++ {
				if i > 0 {
					b = append(b, ',')
				}
				b = newline(b, depth+1)
				b, ok = elem(b, v.Index(i), depth+1)
			}
			b = newline(b, depth)
			return append(b, ']'), ok
		}
	case reflect.Map:
		if t.Key().Kind() != reflect.String || t.Key().Implements(textMarshaler) {
			return nil
		}
		elem := buildPlan(t.Elem(), building)
		if elem == nil {
			return nil
		}
		return func(b []byte, v reflect.Value, depth int) ([]byte, bool) {
			if v.IsNil() {
				return append(b, "null"...), true
			}
			keys := make([]string, 0, v.Len())
			for it := v.MapRange(); it.Next(); {
				keys = append(keys, it.Key().String())
			}
			slices.Sort(keys)
			if len(keys) == 0 {
				return append(b, "{}"...), true
			}
			b = append(b, '{')
			ok := true
			for i, k := range keys {
				if !ok {
					break
				}
				if i > 0 {
					b = append(b, ',')
				}
				b = newline(b, depth+1)
				b = appendString(b, k)
				b = colon(b, depth)
				b, ok = elem(b, v.MapIndex(reflect.ValueOf(k).Convert(t.Key())), depth+1)
			}
			b = newline(b, depth)
			return append(b, '}'), ok
		}
	case reflect.Struct:
		return structPlan(t, building)
	}
	return nil // interfaces, channels, funcs, complex numbers
}

type fieldPlan struct {
	name      string
	index     int
	omitEmpty bool
	enc       encodeFn
}

func structPlan(t reflect.Type, building map[reflect.Type]bool) encodeFn {
	var fields []fieldPlan
	for i := range t.NumField() {
		f := t.Field(i)
		if f.Anonymous {
			return nil // embedding promotes fields; the tree handles it
		}
		if !f.IsExported() {
			continue
		}
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := bytes.Cut([]byte(tag), []byte(","))
		fp := fieldPlan{name: string(name), index: i}
		if fp.name == "" {
			fp.name = f.Name
		}
		if !plainName(fp.name) {
			return nil // encoding/json ignores some odd tag names; not modelled
		}
		for o := range bytes.SplitSeq(opts, []byte(",")) {
			switch string(o) {
			case "omitempty":
				fp.omitEmpty = true
			case "":
			default:
				return nil // ",string", ",omitzero" and future options
			}
		}
		if fp.enc = buildPlan(f.Type, building); fp.enc == nil {
			return nil
		}
		fields = append(fields, fp)
	}
	slices.SortFunc(fields, func(a, b fieldPlan) int { return bytes.Compare([]byte(a.name), []byte(b.name)) })
	for i := 1; i < len(fields); i++ {
		if fields[i].name == fields[i-1].name {
			return nil // encoding/json's conflict rules are the tree's business
		}
	}
	return func(b []byte, v reflect.Value, depth int) ([]byte, bool) {
		b = append(b, '{')
		n, ok := 0, true
		for i := range fields {
			f := &fields[i]
			fv := v.Field(f.index)
			if f.omitEmpty && isEmpty(fv) {
				continue
			}
			if n > 0 {
				b = append(b, ',')
			}
			n++
			b = newline(b, depth+1)
			b = appendString(b, f.name)
			b = colon(b, depth)
			if b, ok = f.enc(b, fv, depth+1); !ok {
				return b, false
			}
		}
		if n == 0 {
			return append(b, '}'), true
		}
		b = newline(b, depth)
		return append(b, '}'), true
	}
}

// isEmpty is encoding/json's omitempty test.
func isEmpty(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Array, reflect.Map, reflect.Slice, reflect.String:
		return v.Len() == 0
	case reflect.Bool:
		return !v.Bool()
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return v.Int() == 0
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return v.Uint() == 0
	case reflect.Float32, reflect.Float64:
		return v.Float() == 0
	case reflect.Interface, reflect.Pointer:
		return v.IsNil()
	}
	return false
}

// encodeMarshaler handles time.Time and floats: their json.Marshal text is
// kept when it is a string (re-escaped as the tree would) or a number.
func encodeMarshaler(b []byte, v reflect.Value, _ int) ([]byte, bool) {
	raw, err := json.Marshal(v.Interface())
	if err != nil || len(raw) == 0 {
		return b, false
	}
	switch c := raw[0]; {
	case c == '"':
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return b, false
		}
		return appendString(b, s), true
	case c == '-' || '0' <= c && c <= '9':
		return append(b, raw...), true
	}
	return b, false
}

// plainName is a JSON field name encoding/json uses as written.
func plainName(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-' || c == '.') {
			return false
		}
	}
	return s != ""
}

// compactDepth is the depth of the compact form: negative at every level,
// so newline writes nothing and colon no space.
const compactDepth = math.MinInt32

// appendCompact appends v as compact JSON with the canonical member order
// (the snapshot's parts), or says the type needs encoding/json.
func appendCompact(b []byte, v any) ([]byte, bool) {
	rv := reflect.ValueOf(v)
	p := planFor(rv.Type())
	if p == nil {
		return b, false
	}
	return p(b, rv, compactDepth)
}

func colon(b []byte, depth int) []byte {
	if depth < 0 {
		return append(b, ':')
	}
	return append(b, ": "...)
}

func newline(b []byte, depth int) []byte {
	if depth < 0 {
		return b
	}
	b = append(b, '\n')
	for range depth {
		b = append(b, "  "...)
	}
	return b
}

// appendString quotes s as encoding/json does with HTML escaping off: the
// common all-printable-ASCII case is copied, anything else goes through the
// standard encoder so every escape rule stays encoding/json's own.
func appendString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if !plainByte[s[i]] {
			return appendStringSlow(b, s)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// plainByte marks the bytes encoding/json writes as they are: printable
// ASCII but the quote and the backslash (HTML escaping is off).
var plainByte = func() (t [256]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

func appendStringSlow(b []byte, s string) []byte {
	// The tree's json.Marshal turns each invalid byte into U+FFFD, which the
	// second encoder then writes as the character itself; encoding s directly
	// would write the escape \ufffd instead.
	if !utf8.ValidString(s) {
		var v []byte
		for i := 0; i < len(s); {
			r, size := utf8.DecodeRuneInString(s[i:])
			v = utf8.AppendRune(v, r) // RuneError for an invalid byte
			i += size
		}
		s = string(v)
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	return append(b, bytes.TrimSuffix(buf.Bytes(), []byte("\n"))...)
}
