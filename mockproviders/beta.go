package mockproviders

import (
	"net/http"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/llmgw/llmgw/api/wire/anthropic"
)

// betaProto speaks an Anthropic-Messages-style protocol.
type betaProto struct{}

func (betaProto) path() string { return "/v1/messages" }

func (betaProto) authorized(r *http.Request, want []byte) bool {
	key := r.Header.Get("x-api-key")
	return key != "" && keyMatches(key, want)
}

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
	case finishToolCall:
		return anthropic.StopToolUse, nil
	}
	return "end_turn", nil
}

func (betaProto) jsonBody(x *exchange) []byte {
	reason, seq := betaStop(x.ans)
	out := anthropic.MessageResponse{
		ID: "msg_" + x.ans.id, Type: anthropic.TypeMessage, Role: anthropic.RoleAssistant, Model: x.ans.model,
		Content:    []anthropic.ContentBlock{anthropic.TextBlock(x.ans.text)},
		StopReason: &reason, StopSequence: seq,
	}
	if c := x.ans.call; c != nil {
		out.Content[0] = betaToolUse(x, jsontext.Value(c.args))
	}
	if !x.noUsage {
		out.Usage = betaUsageOf(x, x.usage().output)
	}
	return append(marshal(out), '\n')
}

// namedEvent is one server-sent event with a name (beta and Responses
// streams name their events; alpha's chat stream does not).
func namedEvent(name string, v any) []byte {
	b := marshal(v)
	out := make([]byte, 0, len(name)+len(b)+16)
	out = append(out, "event: "...)
	out = append(out, name...)
	out = append(out, "\ndata: "...)
	out = append(out, b...)
	return append(out, '\n', '\n')
}

// betaToolUse is the tool_use block of x's call with input.
func betaToolUse(x *exchange, input jsontext.Value) anthropic.ContentBlock {
	return anthropic.ContentBlock{Type: anthropic.BlockToolUse, ID: callID("toolu_", x.ans), Name: x.ans.call.name, Input: input}
}

// streamHead opens the message and, for a text answer, its text block; a
// tool call's block opens with its first piece.
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
	head := [][]byte{namedEvent(anthropic.EventMessageStart, start)}
	if x.ans.call != nil {
		return head
	}
	return append(head,
		namedEvent(anthropic.EventContentBlockStart, anthropic.ContentBlockStart{Type: anthropic.EventContentBlockStart,
			ContentBlock: anthropic.TextBlock("")}),
		namedEvent(anthropic.EventPing, anthropic.TypeOnly{Type: anthropic.EventPing}))
}

// streamPiece is a text_delta, or for a tool call: first content_block_start
// with the tool_use block (input {}) and a ping, as Anthropic orders them,
// then one input_json_delta per piece of the input.
func (betaProto) streamPiece(x *exchange, i int) []byte {
	piece := x.ans.pieces[i]
	if x.ans.call == nil {
		return namedEvent(anthropic.EventContentBlockDelta, anthropic.ContentBlockDelta{Type: anthropic.EventContentBlockDelta,
			Delta: anthropic.Delta{Type: anthropic.DeltaText, Text: piece}})
	}
	if i == 0 {
		return append(namedEvent(anthropic.EventContentBlockStart, anthropic.ContentBlockStart{Type: anthropic.EventContentBlockStart,
			ContentBlock: betaToolUse(x, jsontext.Value("{}"))}),
			namedEvent(anthropic.EventPing, anthropic.TypeOnly{Type: anthropic.EventPing})...)
	}
	return namedEvent(anthropic.EventContentBlockDelta, anthropic.ContentBlockDelta{Type: anthropic.EventContentBlockDelta,
		Delta: anthropic.Delta{Type: anthropic.DeltaInputJSON, PartialJSON: piece}})
}

func (betaProto) streamTail(x *exchange) ([][]byte, bool) {
	md := anthropic.MessageDelta{Type: anthropic.EventMessageDelta}
	md.Delta.StopReason, md.Delta.StopSequence = betaStop(x.ans)
	if !x.noUsage {
		output := x.usage().output
		md.Usage = &anthropic.Usage{OutputTokens: &output}
	}
	return [][]byte{
		namedEvent(anthropic.EventContentBlockStop, anthropic.ContentBlockStop{Type: anthropic.EventContentBlockStop}),
		namedEvent(anthropic.EventMessageDelta, md),
		namedEvent(anthropic.EventMessageStop, anthropic.TypeOnly{Type: anthropic.EventMessageStop}),
	}, !x.noUsage
}

func (betaProto) streamError(x *exchange) []byte {
	return namedEvent(anthropic.EventError, betaError("overloaded_error", "mock fault: error_after requested by an @mock directive"))
}
