package mockproviders

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/llmgw/llmgw/api/wire/openai"
)

// mockCreated is the fixed "created" timestamp (2026-01-01T00:00:00Z): a clock
// value would make identical requests produce different bytes.
const mockCreated = 1767225600

// alphaProto speaks the OpenAI chat-completions protocol.
type alphaProto struct{}

func (alphaProto) path() string { return "/v1/chat/completions" }

func (alphaProto) authorized(r *http.Request, want []byte) bool {
	scheme, key, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	return ok && strings.EqualFold(scheme, "Bearer") && keyMatches(strings.TrimSpace(key), want)
}

// alphaPart is a content part's type and text.
func alphaPart(p openai.ContentPart) (typ, text string) {
	if p.Text != nil {
		text = *p.Text
	}
	return p.Type, text
}

var alphaRoles = map[string]bool{"system": true, "developer": true, "user": true, "assistant": true, "tool": true}

func (alphaProto) parse(body []byte) (*chatRequest, *apiError) {
	var in openai.ChatCompletionRequest
	if err := decodeStrict(body, &in); err != nil {
		return nil, badRequest("", "invalid JSON body: %v", err)
	}
	if e := checkModel(in.Model); e != nil {
		return nil, e
	}
	if len(in.Messages) == 0 {
		return nil, badRequest("messages", "messages must be a non-empty array")
	}
	req := &chatRequest{model: in.Model, stream: in.Stream != nil && *in.Stream}
	if in.User != nil {
		req.user = *in.User
	}
	for i, m := range in.Messages {
		if !alphaRoles[m.Role] {
			return nil, badRequest(fmt.Sprintf("messages[%d].role", i), "messages[%d].role %q is not one of system, developer, user, assistant, tool", i, m.Role)
		}
		texts, e := decodeContent(m.Content, fmt.Sprintf("messages[%d].content", i), alphaPart)
		if e != nil {
			return nil, e
		}
		req.messages = append(req.messages, message{role: m.Role, texts: texts})
	}
	if in.StreamOptions != nil {
		if !req.stream {
			return nil, badRequest("stream_options", "stream_options is only allowed when stream is true")
		}
		req.includeUsage = in.StreamOptions.IncludeUsage != nil && *in.StreamOptions.IncludeUsage
	}
	// max_completion_tokens is the newer name; it wins when both are sent.
	for _, f := range []struct {
		name string
		v    *int
	}{{"max_tokens", in.MaxTokens}, {"max_completion_tokens", in.MaxCompletionTokens}} {
		if f.v == nil {
			continue
		}
		if *f.v < 1 {
			return nil, badRequest(f.name, "%s must be at least 1", f.name)
		}
		req.maxTokens = *f.v
	}
	if in.N != nil && *in.N != 1 {
		return nil, badRequest("n", "the mock only supports n=1")
	}
	stops, e := decodeStops(in.Stop, "stop")
	if e != nil {
		return nil, e
	}
	req.stops = stops
	return req, nil
}

func strPtr(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// alphaErrorFor picks type and code from the status, as OpenAI clients branch on them.
func alphaErrorFor(e *apiError) openai.ErrorResponse {
	typ, code := "invalid_request_error", ""
	switch {
	case e.status == http.StatusUnauthorized:
		code = "invalid_api_key"
	case e.status == http.StatusForbidden:
		typ = "permission_error"
	case e.status == http.StatusNotFound:
		code = "not_found"
	case e.status == http.StatusRequestEntityTooLarge:
		code = "request_too_large"
	case e.status == http.StatusTooManyRequests:
		typ, code = "rate_limit_exceeded", "rate_limit_exceeded"
	case e.status >= 500:
		typ, code = "server_error", "server_error"
	}
	c := jsontext.Value("null")
	if code != "" {
		c = openai.Text(code)
	}
	return openai.ErrorResponse{Error: openai.ErrorDetail{Message: e.message, Type: typ, Code: c, Param: strPtr(e.param)}}
}

func (alphaProto) writeError(w http.ResponseWriter, e *apiError) {
	writeJSON(w, e.status, alphaErrorFor(e))
}

// usageOf is the usage of x. The details appear when a directive asks for
// cached or reasoning tokens, so answers without one keep their bytes.
func usageOf(x *exchange) *openai.Usage {
	u := x.usage()
	out := &openai.Usage{PromptTokens: u.input, CompletionTokens: u.output, TotalTokens: u.input + u.output}
	if x.fault.Has("cached_tokens") || x.fault.Has("reasoning_tokens") {
		out.PromptTokensDetails = &openai.PromptTokensDetails{CachedTokens: u.cached}
		out.CompletionTokensDetails = &openai.CompletionTokensDetails{ReasoningTokens: u.reasoning}
	}
	return out
}

func alphaFinish(a *answer) string {
	if a.finish == finishLength {
		return "length"
	}
	return "stop"
}

func (alphaProto) jsonBody(x *exchange) []byte {
	out := openai.ChatCompletion{
		ID: "chatcmpl-" + x.ans.id, Object: openai.ObjectCompletion, Created: mockCreated, Model: x.ans.model,
		Choices: []openai.Choice{{Message: openai.ResponseMessage{Role: "assistant", Content: x.ans.text}, FinishReason: alphaFinish(x.ans)}},
	}
	if !x.noUsage {
		out.Usage = usageOf(x)
	}
	return append(marshal(out), '\n')
}

func alphaEvent(v any) []byte {
	return append(append([]byte("data: "), marshal(v)...), '\n', '\n')
}

func (x *exchange) alphaChunk(choices []openai.ChunkChoice, usage *openai.Usage) []byte {
	return alphaEvent(openai.ChatCompletionChunk{ID: "chatcmpl-" + x.ans.id, Object: openai.ObjectChunk, Created: mockCreated,
		Model: x.ans.model, Choices: choices, Usage: openai.ChunkUsage{Usage: usage}})
}

func (alphaProto) streamHead(x *exchange) [][]byte {
	empty := ""
	return [][]byte{x.alphaChunk([]openai.ChunkChoice{{Delta: openai.Delta{Role: "assistant", Content: &empty}}}, nil)}
}

func (alphaProto) streamPiece(x *exchange, piece string) []byte {
	return x.alphaChunk([]openai.ChunkChoice{{Delta: openai.Delta{Content: &piece}}}, nil)
}

func (alphaProto) streamTail(x *exchange) ([][]byte, bool) {
	finish := alphaFinish(x.ans)
	evs := [][]byte{x.alphaChunk([]openai.ChunkChoice{{FinishReason: &finish}}, nil)}
	withUsage := x.req.includeUsage && !x.noUsage
	if withUsage {
		evs = append(evs, x.alphaChunk([]openai.ChunkChoice{}, usageOf(x)))
	}
	return append(evs, []byte("data: [DONE]\n\n")), withUsage
}

func (alphaProto) streamError(x *exchange) []byte {
	return alphaEvent(alphaErrorFor(&apiError{status: http.StatusInternalServerError, message: "mock fault: error_after requested by an @mock directive"}))
}
