package snapshot

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/llmgw/llmgw/api/keyformat"
)

// Parse decodes a snapshot strictly, normalizes and validates it, and checks or
// fills its version. Strict means: one JSON object and nothing after it, no unknown
// fields, no duplicate fields, field names matched case-sensitively and valid
// UTF-8, so that two readers cannot disagree about what a file says. All of it
// is the decoder's own: encoding/json/v2 semantics
// (github.com/go-json-experiment/json) reject duplicates, case variants and
// invalid UTF-8 by default, and RejectUnknownMembers adds unknown fields.
func Parse(data []byte) (*Snapshot, error) {
	switch start := bytes.TrimLeft(data, " \t\r\n"); {
	case len(start) == 0:
		return nil, errors.New("empty or truncated JSON")
	case start[0] != '{':
		return nil, errors.New("top level must be a JSON object")
	}
	var s Snapshot
	if err := json.Unmarshal(data, &s, json.RejectUnknownMembers(true)); err != nil {
		return nil, decodeError(err)
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

// decodeError words the decoder's errors; they can quote input (a bad
// expiresAt string, a field name), so every quote goes through quote, which
// redacts keys, and the whole text through Redact.
func decodeError(err error) error {
	var semErr *json.SemanticError
	var synErr *jsontext.SyntacticError
	switch {
	case errors.As(err, &synErr):
		at := where(synErr.JSONPointer.Parent())
		switch {
		case errors.Is(synErr.Err, jsontext.ErrDuplicateName):
			return fmt.Errorf("duplicate field %s%s", quote(synErr.JSONPointer.LastToken()), at)
		case errors.Is(synErr.Err, io.ErrUnexpectedEOF):
			return errors.New("empty or truncated JSON")
		}
		msg := strings.TrimPrefix(synErr.Err.Error(), "jsontext: ")
		if strings.Contains(msg, "after top-level value") {
			return errors.New("unexpected data after the top-level object")
		}
		return fmt.Errorf("%s%s", keyformat.Redact(msg), where(synErr.JSONPointer))
	case errors.As(err, &semErr):
		if errors.Is(semErr.Err, json.ErrUnknownName) {
			return fmt.Errorf("unknown field %s%s", quote(semErr.JSONPointer.LastToken()), where(semErr.JSONPointer.Parent()))
		}
	}
	return errors.New(keyformat.Redact(strings.TrimPrefix(err.Error(), "json: ")))
}

// where is " at /path" for a non-empty JSON pointer, its names redacted.
func where(p jsontext.Pointer) string {
	if p == "" {
		return ""
	}
	return " at " + keyformat.Redact(string(p))
}

// jsonName is the JSON name of a struct field, as its tag says.
func jsonName(f reflect.StructField) string {
	name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
	if name == "" {
		return f.Name
	}
	return name
}
