package mockproviders

import (
	"strings"
	"testing"

	jsonv2 "github.com/go-json-experiment/json"

	"github.com/llmgw/llmgw/api/tokens"
)

const personSchema = `{"type":"object","properties":{"name":{"type":"string"},"age":{"type":"integer","minimum":18},` +
	`"tags":{"type":"array","items":{"type":"string"}},"email":{"type":["string","null"],"format":"email"}},` +
	`"required":["name","age","tags","email"],"additionalProperties":false}`

type person struct {
	Name  string   `json:"name"`
	Age   int      `json:"age"`
	Tags  []string `json:"tags"`
	Email *string  `json:"email"`
}

func TestStructuredOutput(t *testing.T) {
	tests := []struct {
		name  string
		fl    Flavor
		extra string
		check func(t *testing.T, text string)
	}{
		{"alpha json_object", Alpha, `,"response_format":{"type":"json_object"}`, func(t *testing.T, text string) {
			var v struct {
				Answer string `json:"answer"`
			}
			if err := jsonv2.Unmarshal([]byte(text), &v, jsonv2.RejectUnknownMembers(true)); err != nil {
				t.Fatalf("%q: %v", text, err)
			}
			if !strings.HasPrefix(v.Answer, "alpha/mdl says: ") || tokens.Count(v.Answer) < 10 {
				t.Fatalf("answer %q", v.Answer)
			}
		}},
		{"alpha json_schema", Alpha, `,"response_format":{"type":"json_schema","json_schema":{"name":"person","strict":true,"schema":` + personSchema + `}}`, checkPerson},
		{"beta output_config json_schema", Beta, `,"output_config":{"format":{"type":"json_schema","schema":` + personSchema + `},"effort":"low"}`, checkPerson},
		{"alpha text format is plain text", Alpha, `,"response_format":{"type":"text"}`, func(t *testing.T, text string) {
			if !strings.HasPrefix(text, "alpha/mdl says: ") {
				t.Fatalf("text %q", text)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := newMock(t, Options{Flavor: tt.fl})
			res := m.do(t, t.Context(), chatBody(tt.fl, userMsg("describe someone"), false, tt.extra), nil)
			if res.resp.StatusCode != 200 {
				t.Fatalf("%d %s", res.resp.StatusCode, res.body)
			}
			a := decodeAnswer(t, tt.fl, res.body)
			tt.check(t, a.text)
			if a.out != tokens.Count(a.text) {
				t.Errorf("output tokens %d for %q", a.out, a.text)
			}
			// The stream carries the same text, in pieces at whitespace.
			s := m.do(t, t.Context(), chatBody(tt.fl, userMsg("describe someone"), true, tt.extra), nil)
			pieces := contentPieces(t, tt.fl, parseSSE(t, s.body))
			if strings.Join(pieces, "") != a.text || len(pieces) < 2 {
				t.Errorf("stream pieces %q, JSON text %q", pieces, a.text)
			}
		})
	}
}

func checkPerson(t *testing.T, text string) {
	t.Helper()
	var p person
	if err := jsonv2.Unmarshal([]byte(text), &p, jsonv2.RejectUnknownMembers(true)); err != nil {
		t.Fatalf("%q: %v", text, err)
	}
	if p.Name != "x" || p.Age != 18 || len(p.Tags) != 1 || p.Email == nil || *p.Email != "x@example.com" {
		t.Fatalf("person %+v from %q", p, text)
	}
}

func TestStructuredOutputErrors(t *testing.T) {
	tests := []struct {
		name  string
		fl    Flavor
		extra string
		want  string
	}{
		{"alpha unknown type", Alpha, `,"response_format":{"type":"yaml"}`, `"yaml" is not one of text, json_object, json_schema`},
		{"alpha json_schema without json_schema", Alpha, `,"response_format":{"type":"json_schema"}`, "json_schema with a name is required"},
		{"alpha schema not an object", Alpha, `,"response_format":{"type":"json_schema","json_schema":{"name":"n","schema":[1]}}`, "schema must be a JSON Schema object"},
		{"beta unknown format type", Beta, `,"output_config":{"format":{"type":"xml"}}`, "output_config.format"},
		{"beta format without schema", Beta, `,"output_config":{"format":{"type":"json_schema"}}`, "output_config.format"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := newMock(t, Options{Flavor: tt.fl})
			res := m.do(t, t.Context(), chatBody(tt.fl, userMsg("q"), false, tt.extra), nil)
			if res.resp.StatusCode != 400 {
				t.Fatalf("%d %s", res.resp.StatusCode, res.body)
			}
			if _, _, msg := errorType(t, tt.fl, res.body); !strings.Contains(msg, tt.want) {
				t.Fatalf("message %q, want %q", msg, tt.want)
			}
		})
	}
}
