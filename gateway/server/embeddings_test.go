package server

import (
	"testing"

	"github.com/llmgw/llmgw/api/tokens"
)

func TestParseEmbeddingRequest(t *testing.T) {
	for _, tc := range []struct {
		body   string
		tokens int
		code   string
	}{
		{`{"model":"e","input":"three word text"}`, 3, ""},
		{`{"model":"e","input":["one","two words"],"dimensions":8,"encoding_format":"base64","user":"u"}`, 3, ""},
		{`{"model":"e","input":[1,2,3,4]}`, 4, ""},
		{`{"model":"e","input":[[1,2],[3]]}`, 3, ""},
		{`{"model":"e","input":[]}`, 0, ""},
		{`{"model":"e"}`, 0, "missing_field"},
		{`{"input":"x"}`, 0, "missing_field"},
		{`{"model":"e","input":5}`, 0, "invalid_type"},
		{`{"model":"e","input":[[1,"x"]]}`, 0, "invalid_type"},
		{`{"model":"e","input":[{"a":1}]}`, 0, "invalid_type"},
		{`{"model":"e","input":"x","Input":"y"}`, 0, "duplicate_field"},
	} {
		p, e := parseEmbeddingRequest([]byte(tc.body), limits{}, tokens.Count)
		if tc.code != "" {
			if e == nil || e.code != tc.code {
				t.Errorf("%s: %+v, want %s", tc.body, e, tc.code)
			}
			continue
		}
		if e != nil {
			t.Errorf("%s: %v", tc.body, e.message)
			continue
		}
		if p.inputTokens != tc.tokens || p.maxTokens == nil || *p.maxTokens != 0 || p.stream {
			t.Errorf("%s: %d input tokens (want %d), max tokens %v", tc.body, p.inputTokens, tc.tokens, p.maxTokens)
		}
	}
}
