package mockproviders

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"net/url"
	"strings"
	"unicode"

	"github.com/go-json-experiment/json/jsontext"
)

// apiError is a rejection in protocol-neutral form; each flavor renders it in
// its own error body and picks the error type from the status.
type apiError struct {
	status  int
	message string
	param   string // alpha only: the offending request field, if one
}

// ImageInputTokens is what each image counts as input tokens, whatever its
// size (OpenAI's price of a low-detail image). Other attachments — alpha's
// input_audio and file parts, beta's non-text documents — count the same.
// The mock never fetches an image URL.
const ImageInputTokens = 85

func badRequest(param, format string, args ...any) *apiError {
	return &apiError{status: 400, message: fmt.Sprintf(format, args...), param: param}
}

// contentParts reads a content member: a JSON string is one text, an array
// is its parts (P is the protocol's part or block type), null or absent is
// nothing (assistant turns that only call tools have none). Each protocol
// then checks the parts' types for the message's role.
func contentParts[P any](raw jsontext.Value, param string) (text *string, parts []P, e *apiError) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil, nil
	}
	if raw[0] == '"' {
		var s string
		if err := unmarshal(raw, &s); err != nil {
			return nil, nil, badRequest(param, "%s: %v", param, err)
		}
		return &s, nil, nil
	}
	if err := unmarshal(raw, &parts); err != nil {
		return nil, nil, badRequest(param, "%s must be a string or an array of content parts", param)
	}
	return nil, parts, nil
}

// checkBase64 accepts standard base64 with padding, the encoding both
// protocols use for inline images and documents. An empty payload is not
// an image.
func checkBase64(s string) bool {
	if s == "" {
		return false
	}
	_, err := base64.StdEncoding.DecodeString(s)
	return err == nil
}

// httpURL reports whether u is an absolute http or https URL with a host.
// The mock never fetches it.
func httpURL(u string) bool {
	p, err := url.Parse(u)
	return err == nil && (p.Scheme == "https" || p.Scheme == "http") && p.Host != ""
}

// decodeStops accepts a string or an array of strings (OpenAI's stop field).
func decodeStops(raw jsontext.Value, param string) ([]string, *apiError) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var one string
	if err := unmarshal(raw, &one); err == nil {
		return []string{one}, nil
	}
	var many []string
	if err := unmarshal(raw, &many); err != nil {
		return nil, badRequest(param, "%s must be a string or an array of strings", param)
	}
	return many, nil
}

const maxModelLen = 256

// checkModel keeps the model name one whitespace-free token, so the answer's
// "<flavor>/<model>" prefix is a single token and pieces split cleanly.
func checkModel(model string) *apiError {
	if model == "" {
		return badRequest("model", "model is required")
	}
	if len(model) > maxModelLen || strings.IndexFunc(model, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) >= 0 {
		return badRequest("model", "model must be at most %d characters without whitespace", maxModelLen)
	}
	return nil
}
