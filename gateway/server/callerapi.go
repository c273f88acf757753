package server

import (
	"net/http"
	"strconv"
	"time"

	"github.com/llmgw/llmgw/api/wire/anthropic"
	"github.com/llmgw/llmgw/api/wire/openai"
	"github.com/llmgw/llmgw/gateway/translate"
)

// callerAPI is the wire protocol a caller speaks, which decides the shape
// of everything the gateway writes itself: its errors, the events of a
// stream, the ids of the answers it builds. The OpenAI API (chat
// completions, embeddings) is the zero value; OpenAI's Responses API
// (/v1/responses) has OpenAI's errors and events of its own; an Anthropic
// client (/v1/messages, or any request with an anthropic-version header)
// gets Anthropic's shapes.
type callerAPI uint8

const (
	apiOpenAI callerAPI = iota
	apiResponses
	apiAnthropic
)

// hdrAnthropicVersion marks a request from an Anthropic client.
const hdrAnthropicVersion = "Anthropic-Version"

// apiOf is the API of a request to an endpoint both APIs share
// (/v1/models): Anthropic's when the client sent anthropic-version, as
// every Anthropic SDK and Claude Code do.
func apiOf(r *http.Request) callerAPI {
	if len(r.Header[hdrAnthropicVersion]) > 0 {
		return apiAnthropic
	}
	return apiOpenAI
}

// protocol is the provider protocol that is this API: a route to such a
// provider passes the caller's body and the provider's errors through.
func (a callerAPI) protocol() string {
	if a == apiAnthropic {
		return translate.ProtocolAnthropic
	}
	return translate.ProtocolOpenAI // the Responses API: an OpenAI provider that serves it (carry.go)
}

// answerID is the id of an answer the gateway builds for a request.
func (a callerAPI) answerID(requestID string) string {
	switch a {
	case apiAnthropic:
		return "msg_" + requestID
	case apiResponses:
		return "resp_" + requestID
	}
	return "chatcmpl-" + requestID
}

// writeError writes e in the API's error shape.
func (a callerAPI) writeError(w http.ResponseWriter, e *apiError, requestID string) {
	if a != apiAnthropic {
		writeError(w, e, requestID)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h[hdrAnthropicRequestID] = []string{requestID}
	h[hdrErrorCode] = []string{e.code}
	if e.retryAfter > 0 {
		h.Set("Retry-After", strconv.FormatInt(retryAfterSeconds(e.retryAfter), 10))
	}
	w.WriteHeader(e.status)
	_, _ = w.Write(append(appendAnthropicError(make([]byte, 0, 256), e, e.status, requestID), '\n'))
}

// appendErrorEvent appends the one error event of a stream that failed
// after its commit point, and what ends the stream after it: in the
// OpenAI API a data event with the error object, then [DONE]; in the
// Responses API an event named error (a stream whose translator writes
// response.failed does not come here: relay_sse.go); in Anthropic's an
// event named error. After the last two the stream just ends.
func (a callerAPI) appendErrorEvent(b []byte, e *apiError, requestID string) []byte {
	switch a {
	case apiOpenAI:
		return append(appendErrorEvent(b, e, requestID), doneEvent...)
	case apiResponses:
		b = append(b, "event: error\ndata: "...)
		w := appendWriter{b}
		appendJSON(&w, &openai.ResponsesErrorEvent{Type: "error", Code: &e.code, Message: e.message})
		return append(w.b, "\n\n"...)
	}
	b = append(b, "event: error\ndata: "...)
	b = appendAnthropicError(b, e, 0, requestID)
	return append(b, "\n\n"...)
}

// appendEnd appends what ends a stream after its last event: [DONE] in
// the OpenAI chat API; nothing in the Responses API and Anthropic's, whose
// last event (response.completed, message_stop) is the end.
func (a callerAPI) appendEnd(b []byte) []byte {
	if a == apiOpenAI {
		return append(b, doneEvent...)
	}
	return b
}

// appendAnthropicError appends e as Anthropic's error object, its type
// the one Anthropic gives the status (status 0: an error event, typed
// from the gateway's error type). The gateway's own code is in the
// X-Llmgw-Error-Code header of an answer, which Anthropic's shape has no
// member for.
func appendAnthropicError(b []byte, e *apiError, status int, requestID string) []byte {
	typ := e.upstreamType
	if typ == "" {
		typ = anthropicErrorType(status, e.typ)
	}
	w := appendWriter{b}
	appendJSON(&w, &anthropic.ErrorResponse{Type: anthropic.TypeError,
		Error: anthropic.ErrorDetail{Type: typ, Message: e.message}, RequestID: requestID})
	return w.b
}

// anthropicErrorType is the error type Anthropic's API gives an answer of
// status; for an error event (status 0), the one closest to the gateway's
// error type typ.
func anthropicErrorType(status int, typ string) string {
	switch status {
	case http.StatusBadRequest:
		return "invalid_request_error"
	case http.StatusUnauthorized:
		return "authentication_error"
	case http.StatusForbidden:
		return "permission_error"
	case http.StatusNotFound:
		return "not_found_error"
	case http.StatusRequestEntityTooLarge:
		return "request_too_large"
	case http.StatusTooManyRequests:
		return "rate_limit_error"
	case http.StatusServiceUnavailable, 529:
		return "overloaded_error"
	case http.StatusGatewayTimeout:
		return "timeout_error"
	case 0:
	default:
		if status >= 500 {
			return "api_error"
		}
		return "invalid_request_error"
	}
	switch typ {
	case typeRateLimit:
		return "rate_limit_error"
	case typeOverloaded:
		return "overloaded_error"
	case typeProviderTimeout:
		return "timeout_error"
	}
	return "api_error"
}

// retryAfterSeconds is d in whole seconds, rounded up: Retry-After has no
// finer unit.
func retryAfterSeconds(d time.Duration) int64 {
	return int64((d + time.Second - 1) / time.Second)
}
