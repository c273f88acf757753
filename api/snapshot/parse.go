package snapshot

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"reflect"
	"regexp"
	"strconv"
	"strings"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/llmgw/llmgw/api/keyformat"
	"github.com/llmgw/llmgw/api/money"
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
		return nil, decodeErrorIn(data, err)
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

// decodeErrorIn words the decoder's errors for an error decoding data;
// they can quote input (a bad expiresAt string, a field name), so every
// quote goes through quote, which redacts keys, and the whole text through
// Redact. Paths name an element of keys, groups, providers and aliases by
// its id or name, as written in data (keys[team-a].budget.amount), and a
// number where a decimal string belongs is said so in the snapshot's terms.
func decodeErrorIn(data []byte, err error) error {
	var semErr *json.SemanticError
	var synErr *jsontext.SyntacticError
	switch {
	case errors.As(err, &synErr):
		at := where(data, synErr.JSONPointer.Parent())
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
		return fmt.Errorf("%s%s", keyformat.Redact(msg), where(data, synErr.JSONPointer))
	case errors.As(err, &semErr):
		if errors.Is(semErr.Err, json.ErrUnknownName) {
			return fmt.Errorf("unknown field %s%s", quote(semErr.JSONPointer.LastToken()), where(data, semErr.JSONPointer.Parent()))
		}
		if semErr.JSONPointer != "" {
			return semanticError(data, semErr)
		}
	}
	return errors.New(keyformat.Redact(strings.TrimPrefix(err.Error(), "json: ")))
}

// decimalFields are the snapshot's fields that hold a decimal string
// (money.DecimalPattern): a budget's amount and a price's rates. Written
// as JSON numbers they would be read through a float by many a tool, so
// the snapshot takes them only as strings, and says so.
var decimalFields = map[string]bool{
	"amount":                true, // keys[].budget, groups[].budget
	"inputPerMillion":       true, // providers[].prices[]
	"cachedInputPerMillion": true,
	"outputPerMillion":      true,
	"reasoningPerMillion":   true,
}

// semanticError words a value of the wrong JSON type at its path: a number
// or boolean where a string belongs in the snapshot's terms, anything else
// as the decoder says it, its location replaced by the path.
func semanticError(data []byte, e *json.SemanticError) error {
	path := pathOf(data, e.JSONPointer)
	if kind := scalarKinds[e.JSONKind]; kind != "" && e.GoType == reflect.TypeFor[string]() {
		v := valueAt(data, e.JSONPointer)
		got := kind + literal(v)
		if decimalFields[e.JSONPointer.LastToken()] {
			return fmt.Errorf("%s must be a string like %s, not %s", path, decimalExample(v), got)
		}
		return fmt.Errorf("%s must be a string, not %s", path, got)
	}
	// The decoder's words without its location (a raw pointer, cut at 100
	// characters), then the path, then its cause.
	bare := *e
	bare.JSONPointer, bare.ByteOffset, bare.Err = "", 0, nil
	msg := strings.TrimPrefix(bare.Error(), "json: ") + " at " + path
	if e.Err != nil {
		msg += ": " + strings.TrimPrefix(e.Err.Error(), "jsontext: ")
	}
	return errors.New(keyformat.Redact(msg))
}

// scalarKinds names the JSON values a string field can be given instead,
// as its error says them.
var scalarKinds = map[jsontext.Kind]string{'0': "the number", 't': "the boolean", 'f': "the boolean"}

// decimalExample is the decimal string to write instead of the number v:
// the number itself, quoted, when it is a valid decimal (25, 0.125), else
// "25".
func decimalExample(v jsontext.Value) string {
	if decimalSyntax.Match(v) {
		return strconv.Quote(string(v))
	}
	return `"25"`
}

var decimalSyntax = regexp.MustCompile(money.DecimalPattern)

// literal is " " and v as it is written, shortened past 32 bytes; "" when
// there is no v. Numbers and booleans only: they cannot hold a key.
func literal(v jsontext.Value) string {
	switch {
	case v == nil:
		return ""
	case len(v) > 32:
		return " " + string(v[:32]) + "…"
	}
	return " " + string(v)
}

// where is " at path" for a non-empty JSON pointer (see pathOf).
func where(data []byte, p jsontext.Pointer) string {
	if p == "" {
		return ""
	}
	return " at " + pathOf(data, p)
}

// namedArrays are the top-level arrays whose elements have a name, and its
// member: a path names such an element by it, not by its index.
var namedArrays = map[string]string{"keys": "id", "groups": "name", "providers": "name", "aliases": "name"}

// pathOf writes p as the snapshot's path syntax (keys[team-a].budget.amount,
// keys[k].owners["example.com/team"]), with keys redacted. An element of
// namedArrays is named by its id or name in data when it has one string
// for it; otherwise, and in every other array, by its index. Without data
// (or where data does not have p), an all-digit token is taken for an
// index.
func pathOf(data []byte, p jsontext.Pointer) string {
	var b strings.Builder
	v := jsontext.Value(bytes.TrimSpace(data))
	top := ""
	depth := 0
	for tok := range p.Tokens() {
		isIndex := v.Kind() == '[' || (v == nil && tok != "" && strings.Trim(tok, "0123456789") == "")
		var next jsontext.Value
		if v != nil {
			next = child(v, tok)
		}
		switch {
		case isIndex && depth == 1 && namedArrays[top] != "":
			name := elementName(next, namedArrays[top])
			if name == "" {
				name = tok
			}
			b.WriteString("[" + name + "]")
		case isIndex:
			b.WriteString("[" + tok + "]")
		case !plainMember.MatchString(tok):
			b.WriteString("[" + quote(tok) + "]")
		case b.Len() > 0:
			b.WriteString("." + tok)
		default:
			b.WriteString(tok)
		}
		if depth == 0 {
			top = tok
		}
		v = next
		depth++
	}
	return keyformat.Redact(b.String())
}

// plainMember is a member name that reads unquoted after a dot; any other
// (an owner label such as example.com/team, an unknown field) is written
// ["quoted"].
var plainMember = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// plainElement is an element's id or name that reads unquoted in
// brackets: keys[team-a.prod], aliases[gpt-4o].
var plainElement = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.:/@+-]{0,252}$`)

// elementName is the string member of the object v, as a path shows it
// in brackets; "" when v has none, or more than one (the path then shows
// the index: the duplicate may be what the error is about).
func elementName(v jsontext.Value, member string) string {
	if v.Kind() != '{' {
		return ""
	}
	dec := jsontext.NewDecoder(bytes.NewReader(v), jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true))
	if _, err := dec.ReadToken(); err != nil {
		return ""
	}
	var raw jsontext.Value
	for dec.PeekKind() == '"' {
		tok, err := dec.ReadToken()
		if err != nil {
			return ""
		}
		name := tok.String() // before the next read, which reuses the token's buffer
		val, err := dec.ReadValue()
		if err != nil {
			return ""
		}
		if name == member {
			if raw != nil {
				return ""
			}
			raw = val.Clone()
		}
	}
	var s string
	if raw.Kind() != '"' || json.Unmarshal(raw, &s) != nil || s == "" {
		return ""
	}
	if plainElement.MatchString(s) {
		return s
	}
	return quote(s)
}

// lenient reads a document that failed to decode well enough to find a
// path in it: a duplicate name or invalid UTF-8 elsewhere does not hide
// the rest.
var lenient = json.JoinOptions(jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true))

// child is the member tok of object v, or its element at index tok; nil
// when there is none.
func child(v jsontext.Value, tok string) jsontext.Value {
	switch v.Kind() {
	case '{':
		var m map[string]jsontext.Value
		if json.Unmarshal(v, &m, lenient) != nil {
			return nil
		}
		return m[tok]
	case '[':
		i, err := strconv.Atoi(tok)
		if err != nil || i < 0 {
			return nil
		}
		var a []jsontext.Value
		if json.Unmarshal(v, &a, lenient) != nil || i >= len(a) {
			return nil
		}
		return a[i]
	}
	return nil
}

// valueAt is the value at p in data, nil when there is none.
func valueAt(data []byte, p jsontext.Pointer) jsontext.Value {
	v := jsontext.Value(bytes.TrimSpace(data))
	for tok := range p.Tokens() {
		if v = child(v, tok); v == nil {
			return nil
		}
	}
	return v
}

// jsonName is the JSON name of a struct field, as its tag says.
func jsonName(f reflect.StructField) string {
	name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
	if name == "" {
		return f.Name
	}
	return name
}
