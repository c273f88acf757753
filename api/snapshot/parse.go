package snapshot

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
	"sync"
	"time"

	"github.com/llmgw/llmgw/api/keyformat"
)

// Parse decodes a snapshot strictly, normalizes and validates it, and checks or
// fills its version. Strict means: one JSON object and nothing after it, no unknown
// fields, no duplicate fields, and field names matched case-sensitively
// (encoding/json alone would accept "Name" for "name" and keep the last of two
// duplicates, so two readers could disagree about what a file says).
func Parse(data []byte) (*Snapshot, error) {
	if err := checkFieldNames(data); err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var s Snapshot
	if err := dec.Decode(&s); err != nil {
		// Decode errors can quote input (e.g. a bad expiresAt string).
		return nil, errors.New(keyformat.Redact(err.Error()))
	}
	claimed := s.Version
	s.Normalize()
	if err := s.Validate(); err != nil {
		return nil, err
	}
	v, err := computeVersion(&s)
	if err != nil {
		return nil, err
	}
	if claimed != "" && claimed != v {
		return nil, fmt.Errorf("version %s does not match the content (which hashes to %s); remove the version field to have it recomputed", quote(claimed), v)
	}
	s.Version = v
	return &s, nil
}

// checkFieldNames walks the token stream, rejecting syntax errors, trailing data, a
// non-object top level, duplicate fields and field names not spelled exactly as in
// the schema. Where a known name sits is left to DisallowUnknownFields.
func checkFieldNames(data []byte) error {
	known := knownFieldNames()
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	type frame struct {
		object  bool
		wantKey bool
		seen    map[string]bool
	}
	var stack []*frame
	done := false
	valueDone := func() {
		if len(stack) == 0 {
			done = true
		} else if top := stack[len(stack)-1]; top.object {
			top.wantKey = true
		}
	}
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			if !done {
				return errors.New("empty or truncated JSON")
			}
			return nil
		}
		if err != nil {
			return errors.New(keyformat.Redact(err.Error()))
		}
		if done {
			return errors.New("unexpected data after the top-level object")
		}
		if len(stack) == 0 && tok != json.Delim('{') {
			return errors.New("top level must be a JSON object")
		}
		if n := len(stack); n > 0 && stack[n-1].object && stack[n-1].wantKey {
			top := stack[n-1]
			if tok == json.Delim('}') {
				stack = stack[:n-1]
				valueDone()
				continue
			}
			name := tok.(string) // the tokenizer only yields strings in key position
			if !known[name] {
				return fmt.Errorf("unknown field %s", quote(name))
			}
			if top.seen[name] {
				return fmt.Errorf("duplicate field %s", quote(name))
			}
			top.seen[name] = true
			top.wantKey = false
			continue
		}
		switch tok {
		case json.Delim('{'):
			stack = append(stack, &frame{object: true, wantKey: true, seen: map[string]bool{}})
		case json.Delim('['):
			stack = append(stack, &frame{})
		case json.Delim(']'):
			stack = stack[:len(stack)-1]
			valueDone()
		default:
			valueDone()
		}
	}
}

// knownFieldNames is every JSON field name of the schema, derived from the types so
// that it cannot drift from them.
var knownFieldNames = sync.OnceValue(func() map[string]bool {
	names := map[string]bool{}
	var visit func(t reflect.Type)
	visit = func(t reflect.Type) {
		for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice {
			t = t.Elem()
		}
		if t.Kind() != reflect.Struct || t == reflect.TypeFor[time.Time]() {
			return
		}
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			if f.IsExported() {
				names[jsonName(f)] = true
				visit(f.Type)
			}
		}
	}
	visit(reflect.TypeFor[Snapshot]())
	return names
})

func jsonName(f reflect.StructField) string {
	name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
	if name == "" {
		return f.Name
	}
	return name
}
