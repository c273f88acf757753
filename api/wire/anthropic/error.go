package anthropic

// ErrorResponse is the body of an error answer and the data of an error
// event: {"type":"error","error":{"type":...,"message":...}}.
type ErrorResponse struct {
	Type  string      `json:"type"` // TypeError
	Error ErrorDetail `json:"error"`
	// RequestID is the id of the request that failed, as Anthropic's API
	// writes it into an error answer (it also sends it in request-id).
	RequestID string `json:"request_id,omitzero"`
}

// ErrorDetail says what failed; Type is e.g. invalid_request_error,
// overloaded_error, api_error.
type ErrorDetail struct {
	Type    string `json:"type"`
	Message string `json:"message"`
}
