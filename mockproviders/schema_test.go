package mockproviders

import (
	"strings"
	"testing"

	"github.com/go-json-experiment/json/jsontext"
)

func TestSchemaValue(t *testing.T) {
	tests := []struct {
		name, schema, want string
	}{
		{"absent", ``, `{}`},
		{"not an object", `[1]`, `{}`},
		{"invalid JSON", `{"type":`, `{}`},
		{"empty object schema", `{"type":"object"}`, `{}`},
		{"required only, in schema order", `{"type":"object","properties":{"b":{"type":"string"},"a":{"type":"integer"},"c":{"type":"boolean"}},"required":["c","b"]}`, `{"b":"x","c":true}`},
		{"no required list: every property", `{"properties":{"n":{"type":"number"},"z":{"type":"null"}}}`, `{"n":1,"z":null}`},
		{"empty required list: none", `{"type":"object","properties":{"n":{"type":"number"}},"required":[]}`, `{}`},
		{"nested object and array", `{"type":"object","properties":{"o":{"type":"object","properties":{"l":{"type":"array","items":{"type":"integer"}}}}}}`, `{"o":{"l":[1]}}`},
		{"minItems and maxItems", `{"type":"object","properties":{"a":{"type":"array","items":{"type":"string"},"minItems":3},"b":{"type":"array","maxItems":0}}}`, `{"a":["x","x","x"],"b":[]}`},
		{"array without items", `{"type":"array"}`, `["x"]`},
		{"enum and const", `{"properties":{"e":{"enum":["red","green"]},"c":{"const":{"k": [1, 2]}}}}`, `{"e":"red","c":{"k":[1,2]}}`},
		{"string minLength and formats", `{"properties":{"s":{"type":"string","minLength":3},"d":{"type":"string","format":"date-time"},"m":{"type":"string","format":"email"}}}`, `{"s":"xxx","d":"2026-01-01T00:00:00Z","m":"x@example.com"}`},
		{"numeric bounds", `{"properties":{"a":{"type":"integer","minimum":5},"b":{"type":"integer","maximum":-2},"c":{"type":"number","exclusiveMinimum":1},"d":{"type":"integer","exclusiveMaximum":1},"e":{"type":"integer","minimum":1.5},"f":{"type":"number","minimum":1,"exclusiveMinimum":true}}}`, `{"a":5,"b":-2,"c":1.5,"d":0,"e":2,"f":1.5}`},
		{"type list and optional anyOf", `{"properties":{"a":{"type":["null","string"]},"b":{"anyOf":[{"type":"null"},{"type":"integer"}]},"c":{"oneOf":[{"type":"boolean"}]},"d":{"allOf":[{"type":"string"}]}}}`, `{"a":"x","b":1,"c":true,"d":"x"}`},
		{"local refs", `{"$defs":{"P":{"type":"object","properties":{"n":{"type":"string"}},"required":["n"]}},"definitions":{"Q":{"type":"boolean"}},"properties":{"p":{"$ref":"#/$defs/P"},"q":{"$ref":"#/definitions/Q"},"r":{"$ref":"https://example.com/s.json"}}}`, `{"p":{"n":"x"},"q":true,"r":"x"}`},
		{"recursive ref stops", `{"$defs":{"N":{"type":"object","properties":{"next":{"$ref":"#/$defs/N"}}}},"$ref":"#/$defs/N"}`,
			`{"next":` + strings.Repeat(`{"next":`, 7) + `null` + strings.Repeat(`}`, 8)},
		{"root of another type", `{"type":"string"}`, `"x"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := schemaValue(jsontext.Value(tt.schema))
			if string(got) != tt.want {
				t.Fatalf("got %s, want %s", got, tt.want)
			}
			if !got.IsValid() {
				t.Fatalf("invalid JSON %s", got)
			}
		})
	}
}
