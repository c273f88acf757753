package openai

import "github.com/go-json-experiment/json/jsontext"

// ErrorResponse is the body of an error answer, and the data of the one
// error event that ends an interrupted stream: {"error":{...}}.
type ErrorResponse struct {
	Error ErrorDetail `json:"error"`
}

// ErrorDetail says what failed. RequestID and RetryAfterMS are the gateway's
// additions to the protocol's members (it always sends a request_id); other
// servers leave them out.
type ErrorDetail struct {
	Message string `json:"message"`
	Type    string `json:"type"` // some servers send null (read as "") and only a code
	// Code is a string or null in the protocol; compatible servers also send
	// numbers, so it is kept raw (CodeString reads the string form).
	Code         jsontext.Value `json:"code,omitzero"`
	Param        *string        `json:"param"`
	RequestID    *string        `json:"request_id,omitzero"`
	RetryAfterMS int64          `json:"retry_after_ms,omitzero"`
}

// CodeString is Code when it is a JSON string, else "".
func (d *ErrorDetail) CodeString() string {
	if len(d.Code) == 0 || d.Code[0] != '"' {
		return ""
	}
	s, err := jsontext.AppendUnquote(nil, d.Code)
	if err != nil {
		return ""
	}
	return string(s)
}
