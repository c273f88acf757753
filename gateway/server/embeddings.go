package server

import (
	"net/http"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/llmgw/llmgw/gateway/provider"
)

// handleEmbeddings serves POST /v1/embeddings: the chat request's path
// (keys, limits, budgets, routing, fallback, one record) with a JSON answer.
func (s *Server) handleEmbeddings(w http.ResponseWriter, r *http.Request) {
	s.handleExchange(w, r, &embeddingsIngress)
}

// parseEmbeddingRequest reads what the gateway needs of an embeddings
// request: the alias, and the input for the estimate. The rest (dimensions,
// encoding_format, user...) is the provider's to judge.
func parseEmbeddingRequest(body []byte, _ limits, countTokens func(string) int) (*parsedRequest, *apiError) {
	var model string
	var input embeddingInput
	if e := readBodyFields(body, []readMember{{"model", &model}, {"input", &input}}); e != nil {
		return nil, e
	}
	p := &parsedRequest{op: provider.OpEmbeddings, body: body}
	if e := checkModel(model, p); e != nil {
		return nil, e
	}
	if !input.set {
		return nil, errInvalid("missing_field", "input", "input is required")
	}
	p.inputTokens = input.tokens(countTokens)
	// An embedding has no output: admission reserves none (not
	// limits.defaultMaxTokens, which a chat request without max_tokens
	// reserves).
	p.maxTokens = new(int)
	return p, nil
}

// embeddingInput is what the gateway reads of an embeddings input for its
// estimate: the strings, and the number of tokens of token arrays.
type embeddingInput struct {
	set     bool
	texts   []string
	ntokens int
}

var errInputShape = &errShape{msg: "must be a string, an array of strings, an array of tokens or an array of token arrays"}

// UnmarshalJSONFrom reads an input of any of its four forms.
func (in *embeddingInput) UnmarshalJSONFrom(dec *jsontext.Decoder) error {
	in.set = true
	switch dec.PeekKind() {
	case '"':
		tok, err := dec.ReadToken()
		in.texts = append(in.texts, tok.String())
		return err
	case '[':
	default:
		return errInputShape
	}
	if _, err := dec.ReadToken(); err != nil {
		return err
	}
	for dec.PeekKind() != ']' {
		switch dec.PeekKind() {
		case '"':
			tok, err := dec.ReadToken()
			if err != nil {
				return err
			}
			in.texts = append(in.texts, tok.String())
		case '0':
			if _, err := dec.ReadToken(); err != nil {
				return err
			}
			in.ntokens++
		case '[':
			if _, err := dec.ReadToken(); err != nil {
				return err
			}
			for dec.PeekKind() == '0' {
				if _, err := dec.ReadToken(); err != nil {
					return err
				}
				in.ntokens++
			}
			if dec.PeekKind() != ']' {
				return errInputShape
			}
			if _, err := dec.ReadToken(); err != nil {
				return err
			}
		default:
			return errInputShape
		}
	}
	_, err := dec.ReadToken()
	return err
}

func (in *embeddingInput) tokens(countTokens func(string) int) int {
	n := in.ntokens
	for _, t := range in.texts {
		n += countTokens(t)
	}
	return n
}
