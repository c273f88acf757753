package mockproviders

import (
	"encoding/json"
	"fmt"
	"net/http"
)

// betaProto speaks an Anthropic-Messages-style protocol.
type betaProto struct{}

func (betaProto) path() string { return "/v1/messages" }

func (betaProto) authorized(r *http.Request, want []byte) bool {
	key := r.Header.Get("x-api-key")
	return key != "" && keyMatches(key, want)
}

type betaRequest struct {
	Model     string          `json:"model"`
	MaxTokens *int            `json:"max_tokens"`
	System    json.RawMessage `json:"system"`
	Messages  []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"messages"`
	Stream        bool     `json:"stream"`
	StopSequences []string `json:"stop_sequences"`
	// Decoded only so a wrongly typed value is a 400, as with the real API.
	Temperature *float64        `json:"temperature"`
	TopP        *float64        `json:"top_p"`
	TopK        *int            `json:"top_k"`
	Metadata    *map[string]any `json:"metadata"`
}

func (betaProto) parse(body []byte) (*chatRequest, *apiError) {
	var in betaRequest
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
	system, e := decodeContent(in.System, "system")
	if e != nil {
		return nil, e
	}
	req := &chatRequest{model: in.Model, system: system, stream: in.Stream, maxTokens: *in.MaxTokens, stops: in.StopSequences}
	if in.Metadata != nil {
		req.user, _ = (*in.Metadata)["user_id"].(string)
	}
	for i, m := range in.Messages {
		if m.Role != "user" && m.Role != "assistant" {
			return nil, badRequest("", "messages.%d.role: %q is not user or assistant (the system prompt is the top-level system field)", i, m.Role)
		}
		texts, e := decodeContent(m.Content, fmt.Sprintf("messages.%d.content", i))
		if e != nil {
			return nil, e
		}
		req.messages = append(req.messages, message{role: m.Role, texts: texts})
	}
	return req, nil
}

type betaErrorBody struct {
	Type  string    `json:"type"`
	Error betaError `json:"error"`
}

type betaError struct {
	Type    string `json:"type"`
	Message string `json:"message"`
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
	writeJSON(w, e.status, betaErrorBody{Type: "error", Error: betaError{Type: betaErrorType(e.status), Message: e.message}})
}

// betaUsage follows the Messages protocol: input_tokens excludes the
// tokens read from the prompt cache, which are reported apart (and only
// when a directive asks for them, so other answers keep their bytes).
// Reasoning has no count of its own: it is part of output_tokens.
type betaUsage struct {
	InputTokens          int  `json:"input_tokens"`
	CacheReadInputTokens *int `json:"cache_read_input_tokens,omitempty"`
	OutputTokens         int  `json:"output_tokens"`
}

func betaUsageOf(x *exchange, output int) *betaUsage {
	u := x.usage()
	out := &betaUsage{InputTokens: u.input - u.cached, OutputTokens: output}
	if x.fault.Has("cached_tokens") {
		out.CacheReadInputTokens = &u.cached
	}
	return out
}

type betaBlock struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

type betaMessage struct {
	ID           string      `json:"id"`
	Type         string      `json:"type"`
	Role         string      `json:"role"`
	Model        string      `json:"model"`
	Content      []betaBlock `json:"content"`
	StopReason   *string     `json:"stop_reason"`
	StopSequence *string     `json:"stop_sequence"`
	Usage        *betaUsage  `json:"usage,omitempty"`
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
	out := betaMessage{
		ID: "msg_" + x.ans.id, Type: "message", Role: "assistant", Model: x.ans.model,
		Content:    []betaBlock{{Type: "text", Text: x.ans.text}},
		StopReason: &reason, StopSequence: seq,
	}
	if !x.noUsage {
		out.Usage = betaUsageOf(x, x.usage().output)
	}
	b, _ := json.Marshal(out)
	return append(b, '\n')
}

func betaEvent(name string, v any) []byte {
	b, _ := json.Marshal(v)
	out := make([]byte, 0, len(name)+len(b)+16)
	out = append(out, "event: "...)
	out = append(out, name...)
	out = append(out, "\ndata: "...)
	out = append(out, b...)
	return append(out, '\n', '\n')
}

type betaTyped struct {
	Type string `json:"type"`
}

type betaMessageStart struct {
	Type    string      `json:"type"`
	Message betaMessage `json:"message"`
}

type betaBlockStart struct {
	Type         string    `json:"type"`
	Index        int       `json:"index"`
	ContentBlock betaBlock `json:"content_block"`
}

type betaBlockDelta struct {
	Type  string    `json:"type"`
	Index int       `json:"index"`
	Delta betaBlock `json:"delta"`
}

type betaBlockStop struct {
	Type  string `json:"type"`
	Index int    `json:"index"`
}

type betaMessageDelta struct {
	Type  string `json:"type"`
	Delta struct {
		StopReason   string  `json:"stop_reason"`
		StopSequence *string `json:"stop_sequence"`
	} `json:"delta"`
	Usage *struct {
		OutputTokens int `json:"output_tokens"`
	} `json:"usage,omitempty"`
}

func (betaProto) streamHead(x *exchange) [][]byte {
	start := betaMessageStart{Type: "message_start", Message: betaMessage{
		ID: "msg_" + x.ans.id, Type: "message", Role: "assistant", Model: x.ans.model, Content: []betaBlock{},
	}}
	if !x.noUsage {
		// Like Anthropic: input tokens up front, a placeholder output count; the final
		// output count comes in message_delta.
		start.Message.Usage = betaUsageOf(x, 1)
	}
	return [][]byte{
		betaEvent("message_start", start),
		betaEvent("content_block_start", betaBlockStart{Type: "content_block_start", ContentBlock: betaBlock{Type: "text"}}),
		betaEvent("ping", betaTyped{Type: "ping"}),
	}
}

func (betaProto) streamPiece(x *exchange, piece string) []byte {
	return betaEvent("content_block_delta", betaBlockDelta{Type: "content_block_delta", Delta: betaBlock{Type: "text_delta", Text: piece}})
}

func (betaProto) streamTail(x *exchange) ([][]byte, bool) {
	md := betaMessageDelta{Type: "message_delta"}
	md.Delta.StopReason, md.Delta.StopSequence = betaStop(x.ans)
	if !x.noUsage {
		md.Usage = &struct {
			OutputTokens int `json:"output_tokens"`
		}{x.usage().output}
	}
	return [][]byte{
		betaEvent("content_block_stop", betaBlockStop{Type: "content_block_stop"}),
		betaEvent("message_delta", md),
		betaEvent("message_stop", betaTyped{Type: "message_stop"}),
	}, !x.noUsage
}

func (betaProto) streamError(x *exchange) []byte {
	return betaEvent("error", betaErrorBody{Type: "error", Error: betaError{Type: "overloaded_error", Message: "mock fault: error_after requested by an @mock directive"}})
}
