package mockproviders

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
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

type alphaRequest struct {
	Model    string `json:"model"`
	Messages []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"messages"`
	Stream        bool `json:"stream"`
	StreamOptions *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
	MaxTokens           *int            `json:"max_tokens"`
	MaxCompletionTokens *int            `json:"max_completion_tokens"`
	N                   *int            `json:"n"`
	Stop                json.RawMessage `json:"stop"`
	// Decoded only so a wrongly typed value is a 400, as with the real API.
	Temperature *float64 `json:"temperature"`
	TopP        *float64 `json:"top_p"`
	User        *string  `json:"user"`
}

var alphaRoles = map[string]bool{"system": true, "developer": true, "user": true, "assistant": true, "tool": true}

func (alphaProto) parse(body []byte) (*chatRequest, *apiError) {
	var in alphaRequest
	if err := decodeStrict(body, &in); err != nil {
		return nil, badRequest("", "invalid JSON body: %v", err)
	}
	if e := checkModel(in.Model); e != nil {
		return nil, e
	}
	if len(in.Messages) == 0 {
		return nil, badRequest("messages", "messages must be a non-empty array")
	}
	req := &chatRequest{model: in.Model, stream: in.Stream}
	if in.User != nil {
		req.user = *in.User
	}
	for i, m := range in.Messages {
		if !alphaRoles[m.Role] {
			return nil, badRequest(fmt.Sprintf("messages[%d].role", i), "messages[%d].role %q is not one of system, developer, user, assistant, tool", i, m.Role)
		}
		texts, e := decodeContent(m.Content, fmt.Sprintf("messages[%d].content", i))
		if e != nil {
			return nil, e
		}
		req.messages = append(req.messages, message{role: m.Role, texts: texts})
	}
	if in.StreamOptions != nil {
		if !in.Stream {
			return nil, badRequest("stream_options", "stream_options is only allowed when stream is true")
		}
		req.includeUsage = in.StreamOptions.IncludeUsage
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

type alphaErrorBody struct {
	Error alphaError `json:"error"`
}

type alphaError struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    *string `json:"code"`
}

func strPtr(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// alphaErrorFor picks type and code from the status, as OpenAI clients branch on them.
func alphaErrorFor(e *apiError) alphaErrorBody {
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
	return alphaErrorBody{alphaError{Message: e.message, Type: typ, Param: strPtr(e.param), Code: strPtr(code)}}
}

func (alphaProto) writeError(w http.ResponseWriter, e *apiError) {
	writeJSON(w, e.status, alphaErrorFor(e))
}

type alphaUsage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
	// The details appear when a directive asks for cached or reasoning
	// tokens, so answers without one keep their bytes.
	PromptTokensDetails     *alphaPromptDetails     `json:"prompt_tokens_details,omitempty"`
	CompletionTokensDetails *alphaCompletionDetails `json:"completion_tokens_details,omitempty"`
}

type alphaPromptDetails struct {
	CachedTokens int `json:"cached_tokens"`
}

type alphaCompletionDetails struct {
	ReasoningTokens int `json:"reasoning_tokens"`
}

func usageOf(x *exchange) *alphaUsage {
	u := x.usage()
	out := &alphaUsage{PromptTokens: u.input, CompletionTokens: u.output, TotalTokens: u.input + u.output}
	if x.fault.Has("cached_tokens") || x.fault.Has("reasoning_tokens") {
		out.PromptTokensDetails = &alphaPromptDetails{CachedTokens: u.cached}
		out.CompletionTokensDetails = &alphaCompletionDetails{ReasoningTokens: u.reasoning}
	}
	return out
}

func alphaFinish(a *answer) string {
	if a.finish == finishLength {
		return "length"
	}
	return "stop"
}

type alphaCompletion struct {
	ID      string        `json:"id"`
	Object  string        `json:"object"`
	Created int64         `json:"created"`
	Model   string        `json:"model"`
	Choices []alphaChoice `json:"choices"`
	Usage   *alphaUsage   `json:"usage,omitempty"`
}

type alphaChoice struct {
	Index        int          `json:"index"`
	Message      alphaMessage `json:"message"`
	FinishReason string       `json:"finish_reason"`
}

type alphaMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

func (alphaProto) jsonBody(x *exchange) []byte {
	out := alphaCompletion{
		ID: "chatcmpl-" + x.ans.id, Object: "chat.completion", Created: mockCreated, Model: x.ans.model,
		Choices: []alphaChoice{{Message: alphaMessage{Role: "assistant", Content: x.ans.text}, FinishReason: alphaFinish(x.ans)}},
	}
	if !x.noUsage {
		out.Usage = usageOf(x)
	}
	b, _ := json.Marshal(out)
	return append(b, '\n')
}

type alphaChunk struct {
	ID      string             `json:"id"`
	Object  string             `json:"object"`
	Created int64              `json:"created"`
	Model   string             `json:"model"`
	Choices []alphaChunkChoice `json:"choices"`
	Usage   *alphaUsage        `json:"usage,omitempty"`
}

type alphaChunkChoice struct {
	Index        int        `json:"index"`
	Delta        alphaDelta `json:"delta"`
	FinishReason *string    `json:"finish_reason"`
}

type alphaDelta struct {
	Role    string  `json:"role,omitempty"`
	Content *string `json:"content,omitempty"`
}

func alphaEvent(v any) []byte {
	b, _ := json.Marshal(v)
	return append(append([]byte("data: "), b...), '\n', '\n')
}

func (x *exchange) alphaChunk(choices []alphaChunkChoice, usage *alphaUsage) []byte {
	return alphaEvent(alphaChunk{ID: "chatcmpl-" + x.ans.id, Object: "chat.completion.chunk", Created: mockCreated, Model: x.ans.model, Choices: choices, Usage: usage})
}

func (alphaProto) streamHead(x *exchange) [][]byte {
	empty := ""
	return [][]byte{x.alphaChunk([]alphaChunkChoice{{Delta: alphaDelta{Role: "assistant", Content: &empty}}}, nil)}
}

func (alphaProto) streamPiece(x *exchange, piece string) []byte {
	return x.alphaChunk([]alphaChunkChoice{{Delta: alphaDelta{Content: &piece}}}, nil)
}

func (alphaProto) streamTail(x *exchange) ([][]byte, bool) {
	finish := alphaFinish(x.ans)
	evs := [][]byte{x.alphaChunk([]alphaChunkChoice{{FinishReason: &finish}}, nil)}
	withUsage := x.req.includeUsage && !x.noUsage
	if withUsage {
		evs = append(evs, x.alphaChunk([]alphaChunkChoice{}, usageOf(x)))
	}
	return append(evs, []byte("data: [DONE]\n\n")), withUsage
}

func (alphaProto) streamError(x *exchange) []byte {
	return alphaEvent(alphaErrorFor(&apiError{status: http.StatusInternalServerError, message: "mock fault: error_after requested by an @mock directive"}))
}
