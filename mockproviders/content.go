package mockproviders

import (
	"bytes"
	"fmt"
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

func badRequest(param, format string, args ...any) *apiError {
	return &apiError{status: 400, message: fmt.Sprintf(format, args...), param: param}
}

// decodeContent accepts a string or an array of text parts, the two forms
// both protocols allow (part reads a part's type and text); null or absent
// is no text (assistant turns with tool calls have none). Non-text parts are
// refused rather than ignored so a test never silently loses input tokens.
func decodeContent[P any](raw jsontext.Value, param string, part func(P) (typ, text string)) ([]string, *apiError) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	if raw[0] == '"' {
		var s string
		if err := unmarshal(raw, &s); err != nil {
			return nil, badRequest(param, "%s: %v", param, err)
		}
		return []string{s}, nil
	}
	var parts []P
	if err := unmarshal(raw, &parts); err != nil {
		return nil, badRequest(param, "%s must be a string or an array of text parts", param)
	}
	texts := make([]string, 0, len(parts))
	for i, p := range parts {
		typ, text := part(p)
		if typ != "text" {
			return nil, badRequest(param, "%s[%d].type %q is not supported by the mock (only \"text\")", param, i, typ)
		}
		texts = append(texts, text)
	}
	return texts, nil
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
