package mockproviders

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"unicode"
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

// textPart is the one content-block shape both protocols share.
type textPart struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// decodeContent accepts a string or an array of {"type":"text","text":...} parts,
// the two forms both protocols allow; null or absent is no text (assistant turns
// with tool calls have none). Non-text parts are refused rather than ignored so a
// test never silently loses input tokens.
func decodeContent(raw json.RawMessage, param string) ([]string, *apiError) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	if raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, badRequest(param, "%s: %v", param, err)
		}
		return []string{s}, nil
	}
	var parts []textPart
	if err := json.Unmarshal(raw, &parts); err != nil {
		return nil, badRequest(param, "%s must be a string or an array of text parts", param)
	}
	texts := make([]string, 0, len(parts))
	for i, p := range parts {
		if p.Type != "text" {
			return nil, badRequest(param, "%s[%d].type %q is not supported by the mock (only \"text\")", param, i, p.Type)
		}
		texts = append(texts, p.Text)
	}
	return texts, nil
}

// decodeStops accepts a string or an array of strings (OpenAI's stop field).
func decodeStops(raw json.RawMessage, param string) ([]string, *apiError) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var one string
	if err := json.Unmarshal(raw, &one); err == nil {
		return []string{one}, nil
	}
	var many []string
	if err := json.Unmarshal(raw, &many); err != nil {
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

// decodeStrict decodes one JSON object and reports trailing data, which real
// vendors reject too.
func decodeStrict(body []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return fmt.Errorf("unexpected data after the JSON object")
	}
	return nil
}
