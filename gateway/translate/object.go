package translate

import (
	"bytes"
	"errors"
	"io"
	"sync"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// member is one top-level member of a JSON object as it was sent: its name
// unquoted, and its name and value as raw bytes.
type member struct {
	name    string
	rawName jsontext.Value
	value   jsontext.Value
}

var errNotObject = errors.New("not a JSON object")

// lenient reads what providers send with encoding/json's tolerance: a
// repeated member (the last wins) and invalid UTF-8 (replaced by U+FFFD
// when decoded; relayed as sent when passed through), because rejecting
// either would turn an answer the caller could read into a protocol
// error. Members the wire types do not declare are skipped.
var lenient = json.JoinOptions(jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true))

// eachMember calls fn for each top-level member of obj, in order. The raw
// bytes are obj's own (fn may keep them as long as obj lives; m itself is
// reused). Invalid JSON is an error, as anything after the object is;
// duplicate names and invalid UTF-8 too unless opts allow them (lenient,
// for what providers send).
//
// The decoder reads from a *bytes.Buffer: it then parses obj in place. From
// any other reader it copies into a buffer of its own and, on each read,
// overwrites the first byte of the value it returned before (jsontext's
// guard against use after the next read), which would corrupt the name
// held while the value is read.
func eachMember(obj []byte, fn func(m *member) error, opts ...jsontext.Options) error {
	dec := getDecoder(obj, opts...)
	defer dec.put()
	if dec.PeekKind() != '{' {
		return errNotObject
	}
	if _, err := dec.ReadToken(); err != nil {
		return err
	}
	var m member
	for dec.PeekKind() == '"' {
		name, err := dec.ReadValue() // at a name, ReadValue reads the name
		if err != nil {
			return err
		}
		m.rawName = name
		m.name = unquote(name)
		if m.value, err = dec.ReadValue(); err != nil {
			return err
		}
		if err := fn(&m); err != nil {
			return err
		}
	}
	if _, err := dec.ReadToken(); err != nil { // '}', or the error that stopped the loop
		return err
	}
	if _, err := dec.ReadToken(); err != io.EOF {
		// Something after the object: another value, or bytes that are no
		// JSON at all (a syntax error here, which is not the end either).
		return errNotObject
	}
	return nil
}

// unquote is a JSON string's value; one without escapes is its bytes.
func unquote(s jsontext.Value) string {
	if bytes.IndexByte(s, '\\') < 0 && len(s) >= 2 {
		return string(s[1 : len(s)-1])
	}
	b, err := jsontext.AppendUnquote(nil, s)
	if err != nil {
		return ""
	}
	return string(b)
}

// objectWriter builds a JSON object member by member, raw.
type objectWriter struct{ b []byte }

func (w *objectWriter) begin(dst []byte) { w.b = append(dst, '{') }

func (w *objectWriter) raw(name, value []byte) {
	if w.b[len(w.b)-1] != '{' {
		w.b = append(w.b, ',')
	}
	w.b = append(w.b, name...)
	w.b = append(w.b, ':')
	w.b = append(w.b, value...)
}

// set writes a member by its unquoted name.
func (w *objectWriter) set(name string, value []byte) {
	q, _ := jsontext.AppendQuote(nil, name)
	w.raw(q, value)
}

func (w *objectWriter) end() []byte { return append(w.b, '}') }

// quoted is s as a JSON string.
func quoted(s string) jsontext.Value {
	b, _ := jsontext.AppendQuote(nil, s) // only invalid UTF-8 errs, and is replaced
	return b
}

// relayObject appends raw, a provider's JSON object (read leniently), to
// dst with model set to alias (added when the provider left it out), and
// the rest as it was, unless read drops a member. read sees every member
// but model first; an "error" member that is not null is the provider's
// Failure; invalid JSON is a malformed one with message what.
func relayObject(dst, raw []byte, alias, what string, read func(mb *member) (keep bool, err error)) ([]byte, error) {
	var w objectWriter
	w.begin(dst)
	sawModel := false
	err := eachMember(raw, func(mb *member) error {
		switch mb.name {
		case "model":
			w.raw(mb.rawName, quoted(alias))
			sawModel = true
			return nil
		case "error":
			if mb.value.Kind() != 'n' {
				return upstreamError(mb.value)
			}
		}
		keep, err := read(mb)
		if keep && err == nil {
			w.raw(mb.rawName, mb.value)
		}
		return err
	}, lenient)
	if err != nil {
		return nil, asFailure(err, what)
	}
	if !sawModel {
		// A compatible server that leaves model out: the caller is still
		// told the alias it asked for.
		w.set("model", quoted(alias))
	}
	return w.end(), nil
}

// decoders recycles the decoders eachMember and memberSpans read with: a
// jsontext.Decoder holds several KiB of state, allocated anew for every
// chunk of every stream otherwise.
var decoders = sync.Pool{New: func() any { return new(pooledDecoder) }}

type pooledDecoder struct {
	buf bytes.Buffer
	jsontext.Decoder
}

// getDecoder is a decoder of b; give it back with put. It reads b in
// place: fed a *bytes.Buffer, jsontext parses the buffer's bytes without
// copying them, and the raw values it returns are slices of b (with any
// other reader it reuses a buffer of its own, and a value it returned is
// overwritten by the next read).
func getDecoder(b []byte, opts ...jsontext.Options) *pooledDecoder {
	p := decoders.Get().(*pooledDecoder)
	p.buf = *bytes.NewBuffer(b)
	p.Reset(&p.buf, opts...)
	return p
}

func (p *pooledDecoder) put() {
	p.Reset(bytes.NewReader(nil))
	p.buf = bytes.Buffer{}
	decoders.Put(p)
}
