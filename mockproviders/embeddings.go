package mockproviders

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"hash/fnv"
	"math"
	"net/http"
	"strings"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/llmgw/llmgw/api/tokens"
	"github.com/llmgw/llmgw/api/wire/openai"
)

// embeddingsPath is alpha's embeddings endpoint.
const embeddingsPath = "/v1/embeddings"

const (
	// DefaultEmbeddingDimensions is the length of a vector when the request
	// has no dimensions: small, so tests can read whole answers.
	DefaultEmbeddingDimensions = 8
	// MaxEmbeddingDimensions bounds dimensions.
	MaxEmbeddingDimensions = 4096
	// maxEmbeddingInputs is OpenAI's limit on the inputs of one request.
	maxEmbeddingInputs = 2048
)

// embeddingInput is one input: a text, or an array of token ids.
type embeddingInput struct {
	text     string
	ids      []int64
	isTokens bool
}

// embeddings answers POST /v1/embeddings. Directive lines in any string
// input apply to the call (status, delay_ms, first_byte_delay_ms,
// drop_after/stall_after — half the body —, error_after — a 500 —,
// no_usage; the other keys do nothing here) and are removed before the
// input is hashed and counted.
func (h *handler) embeddings(w http.ResponseWriter, r *http.Request, body []byte, c *callState) {
	var in openai.EmbeddingRequest
	if err := decodeStrict(body, &in); err != nil {
		h.proto.writeError(w, badRequest("", "invalid JSON body: %v", err))
		return
	}
	if e := checkModel(in.Model); e != nil {
		h.proto.writeError(w, e)
		return
	}
	inputs, e := embeddingInputs(in.Input)
	if e != nil {
		h.proto.writeError(w, e)
		return
	}
	dims := DefaultEmbeddingDimensions
	if in.Dimensions != nil {
		dims = *in.Dimensions
		if dims < 1 || dims > MaxEmbeddingDimensions {
			h.proto.writeError(w, badRequest("dimensions", "dimensions must be between 1 and %d", MaxEmbeddingDimensions))
			return
		}
	}
	switch in.EncodingFormat {
	case "", openai.EncodingFloat, openai.EncodingBase64:
	default:
		h.proto.writeError(w, badRequest("encoding_format", "encoding_format %q is not one of float, base64", in.EncodingFormat))
		return
	}
	c.req = &chatRequest{model: in.Model}
	if in.User != nil {
		c.req.user = *in.User
	}
	raw := embeddingTokens(inputs)
	var lines []string
	for i := range inputs {
		clean, l := StripDirectives(inputs[i].text)
		inputs[i].text = clean
		lines = append(lines, l...)
	}
	f, ok := h.directives(w, lines, c)
	if !ok {
		return
	}
	h.calls.faults(f.Labels())
	if !h.preamble(w, r, f) {
		return
	}
	usage := embeddingTokens(inputs)
	out := openai.EmbeddingResponse{Object: openai.ObjectList, Model: in.Model, Data: make([]openai.Embedding, len(inputs))}
	for i, inp := range inputs {
		out.Data[i] = openai.Embedding{Object: openai.ObjectEmbedding, Index: i,
			Embedding: encodeVector(embed(in.Model, inp, dims), in.EncodingFormat)}
	}
	if !f.NoUsage {
		out.Usage = &openai.EmbeddingUsage{PromptTokens: usage, TotalTokens: usage}
	}
	// An embedding has no cache reads or reasoning to report.
	ef := f
	ef.CachedTokens, ef.ReasoningTokens = 0, 0
	x := &exchange{req: c.req, ans: &answer{model: in.Model, inputTokens: usage}, fault: ef, noUsage: f.NoUsage,
		sent: delivery{rawInput: raw}}
	c.x = x
	kind, _ := x.cut()
	if kind == cutError {
		h.proto.writeError(w, &apiError{status: http.StatusInternalServerError, message: "mock fault: error_after requested by an @mock directive"})
		return
	}
	if h.sendJSON(w, r, x, append(marshal(out), '\n'), kind) {
		x.sent.content, x.sent.usageSent = true, !x.noUsage
	}
}

// embeddingInputs reads input: a string, an array of strings, an array of
// token ids, or an array of token-id arrays; none may be empty.
func embeddingInputs(raw jsontext.Value) ([]embeddingInput, *apiError) {
	const forms = "input must be a non-empty string, array of strings, array of token ids (integers >= 0) or array of token-id arrays"
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, badRequest("input", "input is required")
	}
	switch raw.Kind() {
	case '"':
		var s string
		if unmarshal(raw, &s) != nil || s == "" {
			return nil, badRequest("input", forms)
		}
		return []embeddingInput{{text: s}}, nil
	case '[':
	default:
		return nil, badRequest("input", forms)
	}
	var items []jsontext.Value
	if unmarshal(raw, &items) != nil || len(items) == 0 {
		return nil, badRequest("input", forms)
	}
	if len(items) > maxEmbeddingInputs {
		return nil, badRequest("input", "input has %d items, more than %d", len(items), maxEmbeddingInputs)
	}
	if items[0].Kind() == '0' { // one array of token ids
		ids, ok := tokenIDs(raw)
		if !ok {
			return nil, badRequest("input", forms)
		}
		return []embeddingInput{{ids: ids, isTokens: true}}, nil
	}
	out := make([]embeddingInput, len(items))
	for i, it := range items {
		switch {
		case it.Kind() == '"' && items[0].Kind() == '"':
			if unmarshal(it, &out[i].text) != nil || out[i].text == "" {
				return nil, badRequest("input", "input[%d]: %s", i, forms)
			}
		case it.Kind() == '[' && items[0].Kind() == '[':
			ids, ok := tokenIDs(it)
			if !ok {
				return nil, badRequest("input", "input[%d]: %s", i, forms)
			}
			out[i] = embeddingInput{ids: ids, isTokens: true}
		default:
			return nil, badRequest("input", "input[%d]: %s", i, forms)
		}
	}
	return out, nil
}

// tokenIDs reads a non-empty array of non-negative integers.
func tokenIDs(raw jsontext.Value) ([]int64, bool) {
	var ids []int64
	if unmarshal(raw, &ids) != nil || len(ids) == 0 {
		return nil, false
	}
	for _, id := range ids {
		if id < 0 {
			return nil, false
		}
	}
	return ids, true
}

// embeddingTokens counts inputs with chat's counter; a token array counts
// its length.
func embeddingTokens(inputs []embeddingInput) int {
	n := 0
	for _, in := range inputs {
		if in.isTokens {
			n += len(in.ids)
		} else {
			n += tokens.Count(in.text)
		}
	}
	return n
}

// embed is a deterministic unit vector of dims numbers derived from a hash
// of the model and the input (a text word by word, as chat's seed, so
// spacing alone does not change it).
func embed(model string, in embeddingInput, dims int) []float32 {
	h := fnv.New64a()
	h.Write([]byte(model))
	var b [8]byte
	if in.isTokens {
		h.Write([]byte("\x00tokens"))
		for _, id := range in.ids {
			binary.LittleEndian.PutUint64(b[:], uint64(id))
			h.Write(b[:])
		}
	} else {
		h.Write([]byte("\x00text\x00"))
		h.Write([]byte(strings.Join(strings.Fields(in.text), " ")))
	}
	state := h.Sum64()
	v := make([]float64, dims)
	norm := 0.0
	for i := range v {
		v[i] = float64(splitmix64(&state)>>11)/(1<<53)*2 - 1
		norm += v[i] * v[i]
	}
	out := make([]float32, dims)
	if norm == 0 {
		out[0] = 1
		return out
	}
	norm = math.Sqrt(norm)
	for i := range v {
		out[i] = float32(v[i] / norm)
	}
	return out
}

// encodeVector is an embedding's JSON: an array of numbers, or for base64
// a string of the little-endian float32s in standard base64.
func encodeVector(v []float32, encoding string) jsontext.Value {
	if encoding != openai.EncodingBase64 {
		return marshal(v)
	}
	raw := make([]byte, 4*len(v))
	for i, f := range v {
		binary.LittleEndian.PutUint32(raw[4*i:], math.Float32bits(f))
	}
	s, _ := jsontext.AppendQuote(nil, base64.StdEncoding.EncodeToString(raw))
	return s
}
