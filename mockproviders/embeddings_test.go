package mockproviders

import (
	"encoding/base64"
	"encoding/binary"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/llmgw/llmgw/api/wire/openai"
)

// vectors decodes an embeddings answer: the vectors by index, and the usage.
func vectors(t *testing.T, body []byte) ([][]float32, *openai.EmbeddingUsage) {
	t.Helper()
	var r openai.EmbeddingResponse
	mustUnmarshal(t, string(body), &r)
	if r.Object != "list" || r.Model != "emb" {
		t.Fatalf("answer %s", body)
	}
	out := make([][]float32, len(r.Data))
	for i, d := range r.Data {
		if d.Object != "embedding" || d.Index != i {
			t.Fatalf("item %d: %+v", i, d)
		}
		if d.Embedding.Kind() == '"' {
			var s string
			mustUnmarshal(t, string(d.Embedding), &s)
			raw, err := base64.StdEncoding.DecodeString(s)
			if err != nil || len(raw)%4 != 0 {
				t.Fatalf("base64 %q: %v", s, err)
			}
			for j := 0; j < len(raw); j += 4 {
				out[i] = append(out[i], math.Float32frombits(binary.LittleEndian.Uint32(raw[j:])))
			}
			continue
		}
		mustUnmarshal(t, string(d.Embedding), &out[i])
	}
	return out, r.Usage
}

func embBody(extra string) []byte { return []byte(`{"model":"emb"` + extra + `}`) }

func TestEmbeddings(t *testing.T) {
	tests := []struct {
		name   string
		extra  string
		count  int
		dims   int
		tokens int
	}{
		{"string", `,"input":"hello there world"`, 1, DefaultEmbeddingDimensions, 3},
		{"array of strings", `,"input":["hello there world","bye"]`, 2, DefaultEmbeddingDimensions, 4},
		{"array of tokens", `,"input":[15339,1917,0]`, 1, DefaultEmbeddingDimensions, 3},
		{"array of token arrays", `,"input":[[1,2],[3],[4,5,6,7]]`, 3, DefaultEmbeddingDimensions, 7},
		{"dimensions", `,"input":"x","dimensions":3`, 1, 3, 1},
		{"one dimension", `,"input":"x","dimensions":1`, 1, 1, 1},
		{"largest dimensions", `,"input":"x","dimensions":4096`, 1, 4096, 1},
		{"explicit float", `,"input":["a","b"],"encoding_format":"float","user":"u1"`, 2, DefaultEmbeddingDimensions, 2},
		{"base64", `,"input":["a","b"],"encoding_format":"base64","dimensions":16`, 2, 16, 2},
		{"directive lines are removed", `,"input":["hello there world\n@mock *:chunks=2"]`, 1, DefaultEmbeddingDimensions, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := newMock(t, Options{Flavor: Alpha})
			res := m.doAt(t, t.Context(), embeddingsPath, embBody(tt.extra), nil)
			if res.resp.StatusCode != 200 || res.resp.Header.Get("Content-Type") != "application/json" {
				t.Fatalf("%d %s", res.resp.StatusCode, res.body)
			}
			vs, u := vectors(t, res.body)
			if len(vs) != tt.count || u == nil || u.PromptTokens != tt.tokens || u.TotalTokens != tt.tokens {
				t.Fatalf("%d vectors, usage %+v: %s", len(vs), u, res.body)
			}
			for i, v := range vs {
				if len(v) != tt.dims {
					t.Fatalf("vector %d has %d dimensions", i, len(v))
				}
				sum := 0.0
				for _, x := range v {
					sum += float64(x) * float64(x)
				}
				if math.Abs(sum-1) > 1e-5 {
					t.Errorf("vector %d length² %v", i, sum)
				}
			}
			for i := 1; i < len(vs); i++ {
				if slices.Equal(vs[i], vs[0]) {
					t.Errorf("inputs 0 and %d have the same vector", i)
				}
			}
			again := m.doAt(t, t.Context(), embeddingsPath, embBody(tt.extra), nil)
			if string(again.body) != string(res.body) {
				t.Error("same request, different bytes")
			}
			c := m.settled(t)
			if c.ByPath[embeddingsPath] != 2 || c.Tokens.InputTokens != int64(2*tt.tokens) || c.Tokens.OutputTokens != 0 {
				t.Errorf("calls %+v", c)
			}
		})
	}
}

// TestEmbeddingsAgree: a vector depends on the model and the input only,
// whatever the form, encoding or spacing; base64 decodes to the float vector.
func TestEmbeddingsAgree(t *testing.T) {
	m := newMock(t, Options{Flavor: Alpha})
	get := func(extra string) [][]float32 {
		res := m.doAt(t, t.Context(), embeddingsPath, embBody(extra), nil)
		if res.resp.StatusCode != 200 {
			t.Fatalf("%d %s", res.resp.StatusCode, res.body)
		}
		vs, _ := vectors(t, res.body)
		return vs
	}
	one := get(`,"input":"red  apple"`)[0]
	many := get(`,"input":["green pear","red apple"]`)
	b64 := get(`,"input":["red apple"],"encoding_format":"base64"`)[0]
	tok := get(`,"input":[[1,2]]`)[0]
	if !slices.Equal(one, many[1]) || !slices.Equal(one, b64) {
		t.Fatalf("same text, different vectors: %v %v %v", one, many[1], b64)
	}
	if slices.Equal(one, many[0]) || slices.Equal(one, tok) {
		t.Fatal("different inputs, same vector")
	}
	if !slices.Equal(tok, get(`,"input":[1,2]`)[0]) {
		t.Fatal("a token array and the same array in an array differ")
	}
	res := m.doAt(t, t.Context(), embeddingsPath, []byte(`{"model":"emb2","input":"red apple"}`), nil)
	var r openai.EmbeddingResponse
	mustUnmarshal(t, string(res.body), &r)
	var other []float32
	mustUnmarshal(t, string(r.Data[0].Embedding), &other)
	if slices.Equal(one, other) {
		t.Fatal("another model gives the same vector")
	}
}

func TestEmbeddingsErrors(t *testing.T) {
	tests := []struct {
		name, body, param, want string
	}{
		{"no input", `{"model":"emb"}`, "input", "input is required"},
		{"null input", `{"model":"emb","input":null}`, "input", "input is required"},
		{"empty string", `{"model":"emb","input":""}`, "input", "non-empty string"},
		{"empty array", `{"model":"emb","input":[]}`, "input", "non-empty string"},
		{"empty string in array", `{"model":"emb","input":["a",""]}`, "input", "input[1]"},
		{"empty token array", `{"model":"emb","input":[[1],[]]}`, "input", "input[1]"},
		{"mixed strings and tokens", `{"model":"emb","input":["a",1]}`, "input", "input[1]"},
		{"mixed arrays and strings", `{"model":"emb","input":[[1],"a"]}`, "input", "input[1]"},
		{"negative token", `{"model":"emb","input":[1,-2]}`, "input", "integers >= 0"},
		{"fractional token", `{"model":"emb","input":[1.5]}`, "input", "integers >= 0"},
		{"object input", `{"model":"emb","input":{"text":"a"}}`, "input", "non-empty string"},
		{"number input", `{"model":"emb","input":5}`, "input", "non-empty string"},
		{"too many inputs", `{"model":"emb","input":[` + strings.TrimSuffix(strings.Repeat(`"a",`, maxEmbeddingInputs+1), ",") + `]}`, "input", "more than 2048"},
		{"dimensions 0", `{"model":"emb","input":"a","dimensions":0}`, "dimensions", "between 1 and 4096"},
		{"dimensions too big", `{"model":"emb","input":"a","dimensions":4097}`, "dimensions", "between 1 and 4096"},
		{"dimensions not a number", `{"model":"emb","input":"a","dimensions":"8"}`, "", "invalid JSON"},
		{"bad encoding", `{"model":"emb","input":"a","encoding_format":"hex"}`, "encoding_format", `"hex" is not one of float, base64`},
		{"missing model", `{"input":"a"}`, "model", "model is required"},
		{"bad directive", `{"model":"emb","input":"a\n@mock *:nope=1"}`, "messages", "unknown key"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := newMock(t, Options{Flavor: Alpha})
			res := m.doAt(t, t.Context(), embeddingsPath, []byte(tt.body), nil)
			if res.resp.StatusCode != 400 {
				t.Fatalf("%d %s", res.resp.StatusCode, res.body)
			}
			var e openai.ErrorResponse
			mustUnmarshal(t, string(res.body), &e)
			param := ""
			if e.Error.Param != nil {
				param = *e.Error.Param
			}
			if e.Error.Type != "invalid_request_error" || param != tt.param || !strings.Contains(e.Error.Message, tt.want) {
				t.Fatalf("error %+v (param %q), want param %q and %q", e.Error, param, tt.param, tt.want)
			}
		})
	}
}

// TestEmbeddingsCallPath: auth, path, method and faults work as for chat.
func TestEmbeddingsCallPath(t *testing.T) {
	m := newMock(t, Options{Flavor: Alpha, RequireKey: "k-1"})
	body := embBody(`,"input":"a b"`)
	if res := m.doAt(t, t.Context(), embeddingsPath, body, nil); res.resp.StatusCode != 401 {
		t.Fatalf("no key: %d", res.resp.StatusCode)
	}
	auth := map[string]string{"Authorization": "Bearer k-1"}
	if res := m.doAt(t, t.Context(), embeddingsPath, body, auth); res.resp.StatusCode != 200 {
		t.Fatalf("with key: %d %s", res.resp.StatusCode, res.body)
	}
	res := m.doAt(t, t.Context(), embeddingsPath, embBody(`,"input":["a b","c\n@mock alpha:status=503 alpha:retry_after=3"]`), auth)
	if res.resp.StatusCode != 503 || res.resp.Header.Get("Retry-After") != "3" {
		t.Fatalf("status directive: %d %s", res.resp.StatusCode, res.body)
	}
	res = m.doAt(t, t.Context(), embeddingsPath, embBody(`,"input":"a b\n@mock *:no_usage=1"`), auth)
	if _, u := vectors(t, res.body); res.resp.StatusCode != 200 || u != nil {
		t.Fatalf("no_usage: %s", res.body)
	}
	res = m.doAt(t, t.Context(), embeddingsPath, embBody(`,"input":"a b\n@mock *:drop_after=0"`), auth)
	if res.readErr == nil {
		t.Fatalf("drop_after: body read in full: %s", res.body)
	}
	if res := m.doAt(t, t.Context(), embeddingsPath, embBody(`,"input":"a\n@mock *:error_after=0"`), auth); res.resp.StatusCode != 500 {
		t.Fatalf("error_after: %d", res.resp.StatusCode)
	}
	c := m.settled(t)
	// Input tokens of the answers with usage (2) and without it (2 + the
	// directive line's 2), nothing for the cut and failed ones.
	if c.ByPath[embeddingsPath] != 6 || c.ByStatus["401"] != 1 || c.ByStatus["503"] != 1 || c.ByFault["status=503"] != 1 ||
		c.Tokens.InputTokens != 2 || c.Tokens.UnreportedInputTokens != 4 {
		t.Fatalf("calls %+v", c)
	}

	beta := newMock(t, Options{Flavor: Beta})
	if res := beta.doAt(t, t.Context(), embeddingsPath, body, nil); res.resp.StatusCode != 404 {
		t.Fatalf("beta serves embeddings: %d", res.resp.StatusCode)
	}
	get, err := m.Client().Get(m.URL + embeddingsPath)
	if err != nil {
		t.Fatal(err)
	}
	get.Body.Close()
	if get.StatusCode != 405 {
		t.Fatalf("GET: %d", get.StatusCode)
	}
}
