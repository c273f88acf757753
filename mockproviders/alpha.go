package mockproviders

import (
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
	switch a.finish {
	case finishLength:
		return "length"
	case finishToolCall:
		return "tool_calls"
	}
	return "stop"
}

func (alphaProto) jsonBody(x *exchange) []byte {
	msg := openai.ResponseMessage{Role: "assistant", Content: &x.ans.text}
	if c := x.ans.call; c != nil {
		msg.Content = nil
		msg.ToolCalls = []openai.ToolCall{{ID: callID("call_", x.ans), Type: "function",
			Function: openai.FunctionCall{Name: c.name, Arguments: c.args}}}
	}
	out := openai.ChatCompletion{
		ID: "chatcmpl-" + x.ans.id, Object: openai.ObjectCompletion, Created: mockCreated, Model: x.ans.model,
		Choices: []openai.Choice{{Message: msg, FinishReason: alphaFinish(x.ans)}},
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

// streamHead opens the message: the role, with an empty content for a text
// answer (as OpenAI does) and none for a tool call, whose first delta is
// its first piece.
func (alphaProto) streamHead(x *exchange) [][]byte {
	d := openai.Delta{Role: "assistant"}
	if x.ans.call == nil {
		empty := ""
		d.Content = &empty
	}
	return [][]byte{x.alphaChunk([]openai.ChunkChoice{{Delta: d}}, nil)}
}

// streamPiece is a content delta, or for a tool call OpenAI's tool-call
// deltas: the first with the call's id, type and name and arguments "",
// then one per piece of the arguments.
func (alphaProto) streamPiece(x *exchange, i int) []byte {
	piece := x.ans.pieces[i]
	if x.ans.call == nil {
		return x.alphaChunk([]openai.ChunkChoice{{Delta: openai.Delta{Content: &piece}}}, nil)
	}
	td := openai.ToolCallDelta{Function: openai.FunctionCallDelta{Arguments: piece}}
	if i == 0 {
		td = openai.ToolCallDelta{ID: callID("call_", x.ans), Type: "function", Function: openai.FunctionCallDelta{Name: piece}}
	}
	return x.alphaChunk([]openai.ChunkChoice{{Delta: openai.Delta{ToolCalls: []openai.ToolCallDelta{td}}}}, nil)
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
