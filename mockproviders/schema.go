package mockproviders

import (
	"bytes"
	"errors"
	"math"
	"strconv"
	"strings"

	"github.com/go-json-experiment/json/jsontext"
)

// schemaNode is the part of a JSON Schema the mock reads to make a value
// that validates against it: tool arguments when it calls a tool without
// args=, and structured-output answers. It is JSON Schema, not a wire shape
// of either protocol.
type schemaNode struct {
	Type             jsontext.Value            `json:"type"` // a type name or an array of them
	Properties       jsontext.Value            `json:"properties"`
	Required         []string                  `json:"required"`
	Items            jsontext.Value            `json:"items"`
	Enum             []jsontext.Value          `json:"enum"`
	Const            jsontext.Value            `json:"const"`
	AnyOf            []jsontext.Value          `json:"anyOf"`
	OneOf            []jsontext.Value          `json:"oneOf"`
	AllOf            []jsontext.Value          `json:"allOf"`
	Ref              string                    `json:"$ref"`
	Format           string                    `json:"format"`
	MinItems         int                       `json:"minItems"`
	MaxItems         *int                      `json:"maxItems"`
	MinLength        int                       `json:"minLength"`
	Minimum          *float64                  `json:"minimum"`
	Maximum          *float64                  `json:"maximum"`
	ExclusiveMinimum jsontext.Value            `json:"exclusiveMinimum"` // a number (2019+) or a boolean (draft 4)
	ExclusiveMaximum jsontext.Value            `json:"exclusiveMaximum"`
	Defs             map[string]jsontext.Value `json:"$defs"`
	Definitions      map[string]jsontext.Value `json:"definitions"`
}

// maxSchemaDepth stops a recursive $ref (a tree type refers to itself).
const maxSchemaDepth = 16

// formatSamples are strings that pass the common "format" checks.
var formatSamples = map[string]string{
	"date-time": "2026-01-01T00:00:00Z",
	"date":      "2026-01-01",
	"time":      "00:00:00Z",
	"email":     "x@example.com",
	"uri":       "https://example.com/x",
	"url":       "https://example.com/x",
	"uuid":      "00000000-0000-4000-8000-000000000000",
	"ipv4":      "192.0.2.1",
	"hostname":  "example.com",
}

// schemaValue is a compact JSON value that validates against schema, built
// deterministically: const or the first enum value when given, the first
// branch of anyOf/oneOf/allOf, local $refs followed; an object gets its
// required properties (every property when the schema lists none), in
// schema order; an array minItems items (at least 1, unless maxItems is 0);
// a string "x" (repeated to minLength, or a sample for a known format); a
// number or integer 1, moved into its bounds; a boolean true; null. A
// schema that is absent or not an object gives {}.
func schemaValue(schema jsontext.Value) jsontext.Value {
	var root schemaNode
	if schemaObject(schema) != nil || unmarshal(schema, &root) != nil {
		return jsontext.Value("{}")
	}
	g := schemaGen{root: &root}
	return g.value(nil, schema, 0)
}

// schemaObject refuses a schema that is present but not a JSON object.
func schemaObject(v jsontext.Value) error {
	v = bytes.TrimSpace(v)
	if len(v) == 0 || v[0] != '{' || !v.IsValid() {
		return errNotObject
	}
	return nil
}

var errNotObject = errors.New("must be a JSON object")

type schemaGen struct{ root *schemaNode }

func (g schemaGen) value(dst []byte, raw jsontext.Value, depth int) []byte {
	var n schemaNode
	if depth > maxSchemaDepth || unmarshal(raw, &n) != nil {
		return append(dst, "null"...)
	}
	switch {
	case len(n.Const) > 0:
		return append(dst, compactOf(n.Const)...)
	case len(n.Enum) > 0:
		return append(dst, compactOf(n.Enum[0])...)
	case n.Ref != "":
		return g.value(dst, g.resolve(n.Ref), depth+1)
	case len(n.AnyOf) > 0:
		return g.value(dst, firstNonNull(n.AnyOf), depth+1)
	case len(n.OneOf) > 0:
		return g.value(dst, firstNonNull(n.OneOf), depth+1)
	case len(n.AllOf) > 0:
		return g.value(dst, n.AllOf[0], depth+1)
	}
	switch typeOf(&n) {
	case "object":
		return g.object(dst, &n, depth)
	case "array":
		count := max(n.MinItems, 1)
		if n.MaxItems != nil && *n.MaxItems < count {
			count = max(*n.MaxItems, 0)
		}
		dst = append(dst, '[')
		for i := range count {
			if i > 0 {
				dst = append(dst, ',')
			}
			if len(n.Items) == 0 {
				dst = append(dst, `"x"`...)
			} else {
				dst = g.value(dst, n.Items, depth+1)
			}
		}
		return append(dst, ']')
	case "string":
		s, ok := formatSamples[n.Format]
		if !ok {
			s = strings.Repeat("x", max(n.MinLength, 1))
		}
		b, _ := jsontext.AppendQuote(dst, s)
		return b
	case "integer":
		return strconv.AppendFloat(dst, bounded(&n, true), 'f', -1, 64)
	case "number":
		return strconv.AppendFloat(dst, bounded(&n, false), 'f', -1, 64)
	case "boolean":
		return append(dst, "true"...)
	case "null":
		return append(dst, "null"...)
	}
	return append(dst, `"x"`...)
}

func (g schemaGen) object(dst []byte, n *schemaNode, depth int) []byte {
	want := map[string]bool{}
	for _, r := range n.Required {
		want[r] = true
	}
	dst = append(dst, '{')
	first := true
	dec := jsontext.NewDecoder(bytes.NewReader(n.Properties))
	if tok, err := dec.ReadToken(); err == nil && tok.Kind() == '{' {
		for dec.PeekKind() == '"' {
			tok, err := dec.ReadToken()
			if err != nil {
				break
			}
			name := tok.String() // before the next read voids tok
			prop, err := dec.ReadValue()
			if err != nil {
				break
			}
			if n.Required != nil && !want[name] {
				continue
			}
			if !first {
				dst = append(dst, ',')
			}
			first = false
			dst, _ = jsontext.AppendQuote(dst, name)
			dst = append(dst, ':')
			dst = g.value(dst, prop, depth+1)
		}
	}
	return append(dst, '}')
}

// resolve follows a local reference (#/$defs/X or #/definitions/X); any
// other reference is an empty schema.
func (g schemaGen) resolve(ref string) jsontext.Value {
	if name, ok := strings.CutPrefix(ref, "#/$defs/"); ok {
		return g.root.Defs[name]
	}
	if name, ok := strings.CutPrefix(ref, "#/definitions/"); ok {
		return g.root.Definitions[name]
	}
	return jsontext.Value("{}")
}

// typeOf is the schema's type, the first non-null one of a list; without a
// type, properties mean an object and items an array.
func typeOf(n *schemaNode) string {
	var one string
	if unmarshal(n.Type, &one) == nil && one != "" {
		return one
	}
	var many []string
	if unmarshal(n.Type, &many) == nil && len(many) > 0 {
		for _, t := range many {
			if t != "null" {
				return t
			}
		}
		return "null"
	}
	switch {
	case len(n.Properties) > 0:
		return "object"
	case len(n.Items) > 0:
		return "array"
	}
	return ""
}

// firstNonNull prefers a branch that is not {"type":"null"}, so an optional
// value (anyOf [T, null]) is filled with a T.
func firstNonNull(branches []jsontext.Value) jsontext.Value {
	for _, b := range branches {
		var n schemaNode
		if unmarshal(b, &n) == nil && typeOf(&n) != "null" {
			return b
		}
	}
	return branches[0]
}

// bounded is 1 moved into the schema's bounds (inclusive or exclusive).
func bounded(n *schemaNode, integer bool) float64 {
	v := 1.0
	step := 1.0
	if !integer {
		step = 0.5
	}
	if lo, excl := bound(n.Minimum, n.ExclusiveMinimum); !math.IsNaN(lo) {
		if excl && v <= lo {
			v = lo + step
		} else if v < lo {
			v = lo
		}
	}
	if hi, excl := bound(n.Maximum, n.ExclusiveMaximum); !math.IsNaN(hi) {
		if excl && v >= hi {
			v = hi - step
		} else if v > hi {
			v = hi
		}
	}
	if integer {
		v = math.Ceil(v)
	}
	return v
}

// bound reads a limit given as minimum/maximum (with a draft-4 boolean
// exclusive flag) or as a numeric exclusiveMinimum/exclusiveMaximum.
func bound(inclusive *float64, exclusive jsontext.Value) (float64, bool) {
	var x float64
	if unmarshal(exclusive, &x) == nil && len(exclusive) > 0 {
		return x, true
	}
	if inclusive == nil {
		return math.NaN(), false
	}
	var flag bool
	_ = unmarshal(exclusive, &flag)
	return *inclusive, flag
}

func compactOf(v jsontext.Value) []byte {
	c := bytes.Clone(v)
	if (*jsontext.Value)(&c).Compact() != nil {
		return []byte("null")
	}
	return c
}
