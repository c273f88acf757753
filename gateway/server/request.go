package server

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/llmgw/llmgw/api/keyformat"
	"github.com/llmgw/llmgw/api/wire/openai"
	"github.com/llmgw/llmgw/gateway/provider"
)

// limits bounds what one request may carry; zero values mean "no limit".
type limits struct {
	maxMessages     int
	maxContentChars int
}

// parsedRequest is the validated request: the provider-neutral form plus what
// the relay needs to answer in OpenAI shape.
type parsedRequest struct {
	alias        string
	stream       bool
	includeUsage bool
	inputTokens  int
	req          provider.Request
}

const (
	maxStopSequences = 4
	maxUserChars     = 256
	maxModelChars    = 256
	maxTokensCeiling = 1 << 20
)

// strictJSON is how a body is decoded: encoding/json/v2 semantics
// (github.com/go-json-experiment/json), which by default match field names
// case-sensitively and reject duplicate names, invalid UTF-8 and anything after
// the top-level value; unknown names are rejected on top. A proxy or WAF in
// front that reads the body leniently can therefore never see a different
// request than the gateway does: the gateway refuses every ambiguous body.
var strictJSON = json.RejectUnknownMembers(true)

// parseChatRequest decodes and validates a body. Every rejection is a stable
// 400 (415 for a compressed body) whose code and param say what was wrong; the
// message never quotes the caller's content, and names the caller chose (an
// unknown or duplicated field) only in a short, sanitized, redacted form.
func parseChatRequest(body []byte, lim limits, countTokens func(string) int) (*parsedRequest, *apiError) {
	if looksCompressed(body) {
		return nil, errCompressed()
	}
	cr := new(openai.ChatCompletionRequest)
	if err := json.Unmarshal(body, cr, strictJSON); err != nil {
		return nil, decodeError(err, body)
	}
	if e := rejectUnsupported(cr); e != nil {
		return nil, e
	}
	p := &parsedRequest{}
	if cr.Model == "" {
		return nil, errInvalid("missing_field", "model", "model is required")
	}
	if len(cr.Model) > maxModelChars || !printable(cr.Model) {
		return nil, errInvalid("invalid_value", "model", "model must be a printable name of at most 256 characters")
	}
	p.alias = cr.Model
	if cr.Stream != nil {
		p.stream = *cr.Stream
	}
	if cr.StreamOptions != nil {
		if !p.stream {
			return nil, errInvalid("invalid_value", "stream_options", "stream_options is only allowed when stream is true")
		}
		p.includeUsage = cr.StreamOptions.IncludeUsage != nil && *cr.StreamOptions.IncludeUsage
	}
	if cr.N != nil && *cr.N != 1 {
		return nil, errInvalid("unsupported_parameter", "n", "only n=1 is supported")
	}
	if e := checkSampling(cr, p); e != nil {
		return nil, e
	}
	if e := parseMessages(cr.Messages, lim, p, countTokens); e != nil {
		return nil, e
	}
	return p, nil
}

// rejectUnsupported refuses, by name, the parameters of the protocol the
// gateway does not support, instead of silently dropping them.
func rejectUnsupported(cr *openai.ChatCompletionRequest) *apiError {
	unsupported := []struct {
		name string
		raw  jsontext.Value
	}{
		{"tools", cr.Tools}, {"tool_choice", cr.ToolChoice}, {"functions", cr.Functions},
		{"function_call", cr.FunctionCall}, {"parallel_tool_calls", cr.ParallelToolCalls},
		{"logprobs", cr.Logprobs}, {"top_logprobs", cr.TopLogprobs}, {"response_format", cr.ResponseFormat},
		{"logit_bias", cr.LogitBias}, {"seed", cr.Seed}, {"presence_penalty", cr.PresencePenalty},
		{"frequency_penalty", cr.FrequencyPenalty}, {"modalities", cr.Modalities}, {"audio", cr.Audio},
		{"prediction", cr.Prediction}, {"service_tier", cr.ServiceTier}, {"store", cr.Store},
		{"metadata", cr.Metadata}, {"reasoning_effort", cr.ReasoningEffort},
	}
	for _, u := range unsupported {
		if len(u.raw) > 0 && !bytes.Equal(u.raw, []byte("null")) {
			return errInvalid("unsupported_parameter", u.name, u.name+" is not supported by this gateway (see the compatible subset in docs/protocol.md)")
		}
	}
	return nil
}

func checkSampling(cr *openai.ChatCompletionRequest, p *parsedRequest) *apiError {
	if cr.MaxTokens != nil && cr.MaxCompletionTokens != nil {
		return errInvalid("invalid_value", "max_completion_tokens", "set max_tokens or max_completion_tokens, not both")
	}
	mt := cr.MaxTokens
	name := "max_tokens"
	if cr.MaxCompletionTokens != nil {
		mt, name = cr.MaxCompletionTokens, "max_completion_tokens"
	}
	if mt != nil {
		if *mt < 1 || *mt > maxTokensCeiling {
			return errInvalid("invalid_value", name, fmt.Sprintf("%s must be between 1 and %d", name, maxTokensCeiling))
		}
		v := *mt
		p.req.MaxTokens = &v
	}
	if t := cr.Temperature; t != nil {
		if math.IsNaN(*t) || *t < 0 || *t > 2 {
			return errInvalid("invalid_value", "temperature", "temperature must be between 0 and 2")
		}
		p.req.Temperature = t
	}
	if t := cr.TopP; t != nil {
		if math.IsNaN(*t) || *t < 0 || *t > 1 {
			return errInvalid("invalid_value", "top_p", "top_p must be between 0 and 1")
		}
		p.req.TopP = t
	}
	if cr.User != nil {
		if utf8.RuneCountInString(*cr.User) > maxUserChars {
			return errInvalid("invalid_value", "user", "user must be at most 256 characters")
		}
		p.req.User = *cr.User
	}
	if len(cr.Stop) > 0 {
		stop, e := parseStop(cr.Stop)
		if e != nil {
			return e
		}
		p.req.Stop = stop
	}
	return nil
}

func parseStop(raw jsontext.Value) ([]string, *apiError) {
	if bytes.Equal(raw, []byte("null")) {
		return nil, nil
	}
	var one string
	if err := json.Unmarshal(raw, &one); err == nil {
		if one == "" {
			return nil, errInvalid("invalid_value", "stop", "stop sequences must not be empty")
		}
		return []string{one}, nil
	}
	var many []string
	if err := json.Unmarshal(raw, &many); err != nil {
		return nil, errInvalid("invalid_type", "stop", "stop must be a string or an array of strings")
	}
	if len(many) > maxStopSequences {
		return nil, errInvalid("invalid_value", "stop", "at most 4 stop sequences are allowed")
	}
	for _, s := range many {
		if s == "" {
			return nil, errInvalid("invalid_value", "stop", "stop sequences must not be empty")
		}
	}
	return many, nil
}

func parseMessages(msgs []openai.Message, lim limits, p *parsedRequest, countTokens func(string) int) *apiError {
	if len(msgs) == 0 {
		return errInvalid("missing_field", "messages", "messages must be a non-empty array")
	}
	if lim.maxMessages > 0 && len(msgs) > lim.maxMessages {
		return errInvalid("too_many_messages", "messages", fmt.Sprintf("at most %d messages are allowed", lim.maxMessages))
	}
	p.req.Messages = make([]provider.Message, 0, len(msgs))
	for i, m := range msgs {
		role := m.Role
		switch role {
		case "system", "user", "assistant":
		case "developer": // OpenAI's newer name for system instructions
			role = "system"
		case "":
			return errInvalid("missing_field", msgParam(i, ".role"), "every message needs a role")
		default:
			return errInvalid("unsupported_parameter", msgParam(i, ".role"), "role must be system, developer, user or assistant")
		}
		text, e := flattenContent(m.Content, i)
		if e != nil {
			return e
		}
		if lim.maxContentChars > 0 && utf8.RuneCountInString(text) > lim.maxContentChars {
			return errInvalid("content_too_long", msgParam(i, ".content"), fmt.Sprintf("message content must be at most %d characters", lim.maxContentChars))
		}
		p.inputTokens += countTokens(text)
		p.req.Messages = append(p.req.Messages, provider.Message{Role: role, Content: text})
	}
	return nil
}

// msgParam names a field of messages[i] for an error's param: built only
// when there is an error, as the valid request needs none of these strings.
func msgParam(i int, field string) string {
	return "messages[" + strconv.Itoa(i) + "]" + field
}

// partParam names a field of messages[i].content[j].
func partParam(i, j int, field string) string {
	return msgParam(i, ".content["+strconv.Itoa(j)+"]"+field)
}

// flattenContent accepts a string or an array of text parts; anything else
// (images, audio, files) is outside the supported subset.
func flattenContent(raw jsontext.Value, i int) (string, *apiError) {
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return "", errInvalid("missing_field", msgParam(i, ".content"), "message content is required")
	}
	if raw[0] == '"' {
		// The body's decode has checked the string already; unquoting it
		// needs no reflection, and one without an escape is its bytes.
		if bytes.IndexByte(raw, '\\') < 0 {
			return string(raw[1 : len(raw)-1]), nil
		}
		s, err := jsontext.AppendUnquote(nil, raw)
		if err != nil {
			return "", errInvalid("invalid_type", msgParam(i, ".content"), "content must be a string or an array of text parts")
		}
		return string(s), nil
	}
	if raw[0] != '[' {
		return "", errInvalid("invalid_type", msgParam(i, ".content"), "content must be a string or an array of text parts")
	}
	var parts []jsontext.Value
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", errInvalid("invalid_type", msgParam(i, ".content"), "content must be a string or an array of text parts")
	}
	var sb strings.Builder
	for j, pr := range parts {
		// The type is read first, loosely: an image or audio part is a
		// well-formed OpenAI part the gateway does not support, not a type error.
		var kind struct {
			Type string `json:"type"`
		}
		if err := json.Unmarshal(pr, &kind); err != nil {
			return "", errInvalid("invalid_type", partParam(i, j, ""), "content parts must be objects {\"type\":\"text\",\"text\":...}")
		}
		if kind.Type != "text" {
			return "", errInvalid("unsupported_parameter", partParam(i, j, ".type"), "only text content parts are supported")
		}
		var part openai.ContentPart
		if err := json.Unmarshal(pr, &part, strictJSON); err != nil {
			return "", errInvalid("invalid_type", partParam(i, j, ""), "text content parts are {\"type\":\"text\",\"text\":...}")
		}
		if part.Text == nil {
			return "", errInvalid("missing_field", partParam(i, j, ".text"), "text content parts need text")
		}
		sb.WriteString(*part.Text)
	}
	return sb.String(), nil
}

// decodeError turns the decoder's errors into stable codes without echoing
// any of the caller's values; names the caller chose are quoted only through
// safeName.
func decodeError(err error, body []byte) *apiError {
	var semErr *json.SemanticError
	var synErr *jsontext.SyntacticError
	switch {
	case errors.As(err, &synErr):
		switch {
		case errors.Is(synErr.Err, jsontext.ErrDuplicateName):
			param := paramOf(synErr.JSONPointer)
			return errInvalid("duplicate_field", param, "duplicate field "+strconv.Quote(param)+"; every field may appear only once")
		case !utf8.Valid(body):
			return errInvalid("invalid_utf8", paramOf(synErr.JSONPointer), "request body is not valid UTF-8")
		}
		return errInvalid("invalid_json", "", "request body is not valid JSON")
	case errors.As(err, &semErr):
		if errors.Is(semErr.Err, json.ErrUnknownName) {
			// The name only, not its path (documented); clipped and redacted.
			name := safeName(semErr.JSONPointer.LastToken())
			return errInvalid("unknown_parameter", name, "unknown parameter "+strconv.Quote(name)+"; see the compatible subset in docs/protocol.md")
		}
		if semErr.JSONPointer == "" {
			return errInvalid("invalid_json", "", "request body must be a JSON object")
		}
		param := paramOf(semErr.JSONPointer)
		if semErr.GoType == nil {
			return errInvalid("invalid_type", param, param+" has the wrong type")
		}
		kind := semErr.GoType.Kind()
		if semErr.JSONKind == '0' && errors.Is(semErr.Err, strconv.ErrRange) {
			return errInvalid("invalid_value", param, param+" is out of range")
		}
		return errInvalid("invalid_type", param, param+" must be "+jsonTypeName(kind))
	default:
		return errInvalid("invalid_json", "", "request body is not valid JSON")
	}
}

// jsonTypeName says in JSON terms what a Go kind accepts.
func jsonTypeName(kind reflect.Kind) string {
	switch kind {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Bool:
		return "a boolean"
	case reflect.String:
		return "a string"
	case reflect.Slice, reflect.Array:
		return "an array"
	default:
		return "an object"
	}
}

const (
	maxNameChars  = 40 // a caller-chosen name quoted in an error
	maxParamChars = 96 // a whole param path built from caller-chosen names
)

// paramOf renders a JSON pointer ("/messages/0/role") in the param notation
// of the API ("messages[0].role"); every name is passed through safeName.
func paramOf(p jsontext.Pointer) string {
	var b strings.Builder
	for tok := range p.Tokens() {
		if tok != "" && strings.Trim(tok, "0123456789") == "" && b.Len() > 0 {
			b.WriteString("[" + tok + "]")
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(safeName(tok))
	}
	return clip(keyformat.Redact(b.String()), maxParamChars)
}

// safeName is the only form in which a name the caller chose may appear in an
// error: keys redacted, anything not printable replaced, at most
// maxNameChars characters. Redaction comes before clipping, so that clipping
// cannot turn a key into a fragment that Redact no longer recognizes.
func safeName(s string) string {
	s = strings.ToValidUTF8(keyformat.Redact(s), "?")
	s = strings.Map(func(r rune) rune {
		if !unicode.IsPrint(r) || r == '"' || r == '\\' {
			return '?'
		}
		return r
	}, s)
	return clip(s, maxNameChars)
}

// clip shortens s to at most n characters, the last one an ellipsis.
func clip(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	i, count := 0, 0
	for j := range s {
		if count == n-1 {
			i = j
			break
		}
		count++
	}
	return s[:i] + "…"
}

// looksCompressed reports whether a body starts like a gzip, zlib or zstd
// stream. No JSON text can start with these bytes, so this only turns an
// invalid_json rejection into the clearer 415.
func looksCompressed(b []byte) bool {
	switch {
	case len(b) >= 2 && b[0] == 0x1f && b[1] == 0x8b: // gzip
		return true
	case len(b) >= 4 && b[0] == 0x28 && b[1] == 0xb5 && b[2] == 0x2f && b[3] == 0xfd: // zstd
		return true
	case len(b) >= 2 && b[0] == 0x78 && (uint16(b[0])<<8|uint16(b[1]))%31 == 0: // zlib
		return true
	}
	return false
}

func errCompressed() *apiError {
	return &apiError{status: http.StatusUnsupportedMediaType, typ: typeInvalidRequest, code: "unsupported_content_encoding",
		message: "request bodies must not be compressed; send plain JSON without Content-Encoding"}
}

// checkContentEncoding refuses a request whose body is declared compressed
// (any Content-Encoding other than identity) with 415, before the body is read:
// a proxy that inflates bodies and the gateway, which does not, would read
// different requests.
func checkContentEncoding(h http.Header) *apiError {
	for _, v := range h[hdrContentEncoding] {
		for _, enc := range strings.Split(v, ",") {
			if enc = strings.TrimSpace(enc); enc != "" && !strings.EqualFold(enc, "identity") {
				return errCompressed()
			}
		}
	}
	return nil
}

func printable(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if r < 0x20 || r == 0x7f {
			return false
		}
	}
	return true
}
