package server

import (
	"net/http"
	"strconv"
	"time"

	"github.com/llmgw/llmgw/api/wire/openai"
)

// Error types: the stable, documented vocabulary of the gateway's error shape
// {"error":{"message","type","code","request_id"}}. The type says who failed,
// the code says how.
const (
	typeInvalidRequest  = "invalid_request_error" // the caller's request is wrong (400/404/413)
	typeAuthentication  = "authentication_error"  // 401
	typePermission      = "permission_error"      // 403
	typeRateLimit       = "rate_limit_error"      // gateway 429: the key's own budget
	typeOverloaded      = "overloaded_error"      // gateway 503: too many concurrent requests
	typeProvider        = "provider_error"        // upstream failed or rejected the request
	typeProviderTimeout = "provider_timeout"      // upstream did not answer in time (504)
	typeStream          = "stream_error"          // in-stream: upstream failed after the commit point
	typeInternal        = "internal_error"        // the gateway itself failed
)

// apiError is a response the gateway decided on; it carries everything the
// error body, the headers and the usage record need.
type apiError struct {
	status     int
	typ        string
	code       string
	message    string
	param      string
	retryAfter time.Duration
	// upstreamType is the provider's own error type, kept when the error
	// is relayed to a caller of the provider's protocol (streamError).
	upstreamType string
}

func errInvalid(code, param, msg string) *apiError {
	return &apiError{status: http.StatusBadRequest, typ: typeInvalidRequest, code: code, param: param, message: msg}
}

// appendErrorJSON appends the error body.
func appendErrorJSON(b []byte, e *apiError, requestID string) []byte {
	d := openai.ErrorDetail{Message: e.message, Type: e.typ, Code: openai.Text(e.code), RequestID: &requestID}
	if e.param != "" {
		d.Param = &e.param
	}
	if e.retryAfter > 0 {
		d.RetryAfterMS = e.retryAfter.Milliseconds()
	}
	w := appendWriter{b}
	appendJSON(&w, &openai.ErrorResponse{Error: d})
	return w.b
}

func writeError(w http.ResponseWriter, e *apiError, requestID string) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	if e.retryAfter > 0 {
		h.Set("Retry-After", strconv.FormatInt(retryAfterSeconds(e.retryAfter), 10))
	}
	w.WriteHeader(e.status)
	body := appendErrorJSON(make([]byte, 0, 256), e, requestID)
	_, _ = w.Write(append(body, '\n'))
}
