package mockproviders

import (
	"fmt"
	"net/http"

	"github.com/llmgw/llmgw/api/wire/anthropic"
)

// betaProto speaks an Anthropic-Messages-style protocol.
type betaProto struct{}

func (betaProto) path() string { return "/v1/messages" }

func (betaProto) authorized(r *http.Request, want []byte) bool {
	key := r.Header.Get("x-api-key")
	return key != "" && keyMatches(key, want)
}

func (betaProto) parse(body []byte) (*chatRequest, *apiError) {
	var in anthropic.MessagesRequest
	if err := decodeStrict(body, &in); err != nil {
		return nil, badRequest("", "invalid JSON body: %v", err)
	}
	if e := checkModel(in.Model); e != nil {
		return nil, e
	}
	if in.MaxTokens == nil {
		return nil, badRequest("max_tokens", "max_tokens: field required")
	}
	if *in.MaxTokens < 1 {
		return nil, badRequest("max_tokens", "max_tokens: must be at least 1")
	}
	if len(in.Messages) == 0 {
		return nil, badRequest("messages", "messages: at least one message is required")
	}
	system, e := decodeContent(in.System, "system", betaPart)
	if e != nil {
		return nil, e
	}
	req := &chatRequest{model: in.Model, system: system, stream: in.Stream, maxTokens: *in.MaxTokens, stops: in.StopSequences}
	if in.Metadata != nil {
		req.user = in.Metadata.UserID
	}
	for i, m := range in.Messages {
		if m.Role != "user" && m.Role != "assistant" {
			return nil, badRequest("", "messages.%d.role: %q is not user or assistant (the system prompt is the top-level system field)", i, m.Role)
		}
		texts, e := decodeContent(m.Content, fmt.Sprintf("messages.%d.content", i), betaPart)
		if e != nil {
			return nil, e
		}
		req.messages = append(req.messages, message{role: m.Role, texts: texts})
	}
	return req, nil
}

// betaPart is a content block's type and text.
func betaPart(b anthropic.ContentBlock) (typ, text string) { return b.Type, b.Text }

// betaErrorType follows Anthropic's status-to-type table.
func betaErrorType(status int) string {
	switch {
	case status == http.StatusUnauthorized:
		return "authentication_error"
	case status == http.StatusForbidden:
		return "permission_error"
	case status == http.StatusNotFound:
		return "not_found_error"
	case status == http.StatusRequestEntityTooLarge:
		return "request_too_large"
	case status == http.StatusTooManyRequests:
		return "rate_limit_error"
	case status == http.StatusServiceUnavailable || status == 529:
		return "overloaded_error"
	case status >= 500:
		return "api_error"
	}
	return "invalid_request_error"
}

func (betaProto) writeError(w http.ResponseWriter, e *apiError) {
	writeJSON(w, e.status, betaError(betaErrorType(e.status), e.message))
}

func betaError(typ, message string) anthropic.ErrorResponse {
	return anthropic.ErrorResponse{Type: anthropic.TypeError, Error: anthropic.ErrorDetail{Type: typ, Message: message}}
}

// betaUsageOf follows the Messages protocol: input_tokens excludes the
// tokens read from the prompt cache, which are reported apart (and only
// when a directive asks for them, so other answers keep their bytes).
// Reasoning has no count of its own: it is part of output_tokens.
func betaUsageOf(x *exchange, output int) *anthropic.Usage {
	u := x.usage()
	input := u.input - u.cached
	out := &anthropic.Usage{InputTokens: &input, OutputTokens: &output}
	if x.fault.Has("cached_tokens") {
		out.CacheReadInputTokens = &u.cached
	}
	return out
}

func betaStop(a *answer) (reason string, seq *string) {
	switch a.finish {
	case finishLength:
		return "max_tokens", nil
	case finishStopSequence:
		return "stop_sequence", &a.stopSequence
	}
	return "end_turn", nil
}

func (betaProto) jsonBody(x *exchange) []byte {
	reason, seq := betaStop(x.ans)
	out := anthropic.MessageResponse{
		ID: "msg_" + x.ans.id, Type: anthropic.TypeMessage, Role: anthropic.RoleAssistant, Model: x.ans.model,
		Content:    []anthropic.ContentBlock{{Type: anthropic.BlockText, Text: x.ans.text}},
		StopReason: &reason, StopSequence: seq,
	}
	if !x.noUsage {
		out.Usage = betaUsageOf(x, x.usage().output)
	}
	return append(marshal(out), '\n')
}

func betaEvent(name string, v any) []byte {
	b := marshal(v)
	out := make([]byte, 0, len(name)+len(b)+16)
	out = append(out, "event: "...)
	out = append(out, name...)
	out = append(out, "\ndata: "...)
	out = append(out, b...)
	return append(out, '\n', '\n')
}

func (betaProto) streamHead(x *exchange) [][]byte {
	start := anthropic.MessageStart{Type: anthropic.EventMessageStart, Message: anthropic.MessageResponse{
		ID: "msg_" + x.ans.id, Type: anthropic.TypeMessage, Role: anthropic.RoleAssistant, Model: x.ans.model,
		Content: []anthropic.ContentBlock{},
	}}
	if !x.noUsage {
		// Like Anthropic: input tokens up front, a placeholder output count; the final
		// output count comes in message_delta.
		start.Message.Usage = betaUsageOf(x, 1)
	}
	return [][]byte{
		betaEvent(anthropic.EventMessageStart, start),
		betaEvent(anthropic.EventContentBlockStart, anthropic.ContentBlockStart{Type: anthropic.EventContentBlockStart,
			ContentBlock: anthropic.ContentBlock{Type: anthropic.BlockText}}),
		betaEvent(anthropic.EventPing, anthropic.TypeOnly{Type: anthropic.EventPing}),
	}
}

func (betaProto) streamPiece(x *exchange, piece string) []byte {
	return betaEvent(anthropic.EventContentBlockDelta, anthropic.ContentBlockDelta{Type: anthropic.EventContentBlockDelta,
		Delta: anthropic.Delta{Type: anthropic.DeltaText, Text: piece}})
}

func (betaProto) streamTail(x *exchange) ([][]byte, bool) {
	md := anthropic.MessageDelta{Type: anthropic.EventMessageDelta}
	md.Delta.StopReason, md.Delta.StopSequence = betaStop(x.ans)
	if !x.noUsage {
		output := x.usage().output
		md.Usage = &anthropic.Usage{OutputTokens: &output}
	}
	return [][]byte{
		betaEvent(anthropic.EventContentBlockStop, anthropic.ContentBlockStop{Type: anthropic.EventContentBlockStop}),
		betaEvent(anthropic.EventMessageDelta, md),
		betaEvent(anthropic.EventMessageStop, anthropic.TypeOnly{Type: anthropic.EventMessageStop}),
	}, !x.noUsage
}

func (betaProto) streamError(x *exchange) []byte {
	return betaEvent(anthropic.EventError, betaError("overloaded_error", "mock fault: error_after requested by an @mock directive"))
}
