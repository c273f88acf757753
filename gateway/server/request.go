package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
	"unicode/utf8"

	"github.com/llmgw/llmgw/gateway/provider"
)

// chatRequest is the supported subset of OpenAI's chat-completions request.
// Known OpenAI parameters the gateway does not support are decoded only so
// that they can be rejected by name instead of being silently dropped.
type chatRequest struct {
	Model               string           `json:"model"`
	Messages            []chatMessage    `json:"messages"`
	Stream              *bool            `json:"stream"`
	StreamOptions       *streamOptions   `json:"stream_options"`
	MaxTokens           *int             `json:"max_tokens"`
	MaxCompletionTokens *int             `json:"max_completion_tokens"`
	Temperature         *float64         `json:"temperature"`
	TopP                *float64         `json:"top_p"`
	Stop                *json.RawMessage `json:"stop"`
	User                *string          `json:"user"`
	N                   *int             `json:"n"`

	Tools             json.RawMessage `json:"tools"`
	ToolChoice        json.RawMessage `json:"tool_choice"`
	Functions         json.RawMessage `json:"functions"`
	FunctionCall      json.RawMessage `json:"function_call"`
	ParallelToolCalls json.RawMessage `json:"parallel_tool_calls"`
	Logprobs          json.RawMessage `json:"logprobs"`
	TopLogprobs       json.RawMessage `json:"top_logprobs"`
	ResponseFormat    json.RawMessage `json:"response_format"`
	LogitBias         json.RawMessage `json:"logit_bias"`
	Seed              json.RawMessage `json:"seed"`
	PresencePenalty   json.RawMessage `json:"presence_penalty"`
	FrequencyPenalty  json.RawMessage `json:"frequency_penalty"`
	Modalities        json.RawMessage `json:"modalities"`
	Audio             json.RawMessage `json:"audio"`
	Prediction        json.RawMessage `json:"prediction"`
	ServiceTier       json.RawMessage `json:"service_tier"`
	Store             json.RawMessage `json:"store"`
	Metadata          json.RawMessage `json:"metadata"`
	ReasoningEffort   json.RawMessage `json:"reasoning_effort"`
}

type streamOptions struct {
	IncludeUsage *bool `json:"include_usage"`
}

type chatMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

type contentPart struct {
	Type string  `json:"type"`
	Text *string `json:"text"`
}

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

// parseChatRequest decodes and validates a body. Every rejection is a stable
// 400 whose code and param say what was wrong; the message never quotes the
// caller's content.
func parseChatRequest(body []byte, lim limits, countTokens func(string) int) (*parsedRequest, *apiError) {
	var cr chatRequest
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&cr); err != nil {
		return nil, decodeError(err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errInvalid("invalid_json", "", "request body must be a single JSON object")
	}
	if e := rejectUnsupported(&cr); e != nil {
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
	if e := checkSampling(&cr, p); e != nil {
		return nil, e
	}
	if e := parseMessages(cr.Messages, lim, p, countTokens); e != nil {
		return nil, e
	}
	return p, nil
}

func rejectUnsupported(cr *chatRequest) *apiError {
	unsupported := []struct {
		name string
		raw  json.RawMessage
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

func checkSampling(cr *chatRequest, p *parsedRequest) *apiError {
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
	if cr.Stop != nil {
		stop, e := parseStop(*cr.Stop)
		if e != nil {
			return e
		}
		p.req.Stop = stop
	}
	return nil
}

func parseStop(raw json.RawMessage) ([]string, *apiError) {
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

func parseMessages(msgs []chatMessage, lim limits, p *parsedRequest, countTokens func(string) int) *apiError {
	if len(msgs) == 0 {
		return errInvalid("missing_field", "messages", "messages must be a non-empty array")
	}
	if lim.maxMessages > 0 && len(msgs) > lim.maxMessages {
		return errInvalid("too_many_messages", "messages", fmt.Sprintf("at most %d messages are allowed", lim.maxMessages))
	}
	p.req.Messages = make([]provider.Message, 0, len(msgs))
	for i, m := range msgs {
		param := fmt.Sprintf("messages[%d]", i)
		role := m.Role
		switch role {
		case "system", "user", "assistant":
		case "developer": // OpenAI's newer name for system instructions
			role = "system"
		case "":
			return errInvalid("missing_field", param+".role", "every message needs a role")
		default:
			return errInvalid("unsupported_parameter", param+".role", "role must be system, developer, user or assistant")
		}
		text, e := flattenContent(m.Content, param+".content")
		if e != nil {
			return e
		}
		if lim.maxContentChars > 0 && utf8.RuneCountInString(text) > lim.maxContentChars {
			return errInvalid("content_too_long", param+".content", fmt.Sprintf("message content must be at most %d characters", lim.maxContentChars))
		}
		p.inputTokens += countTokens(text)
		p.req.Messages = append(p.req.Messages, provider.Message{Role: role, Content: text})
	}
	return nil
}

// flattenContent accepts a string or an array of text parts; anything else
// (images, audio, files) is outside the supported subset.
func flattenContent(raw json.RawMessage, param string) (string, *apiError) {
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return "", errInvalid("missing_field", param, "message content is required")
	}
	if raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return "", errInvalid("invalid_type", param, "content must be a string or an array of text parts")
		}
		return s, nil
	}
	if raw[0] != '[' {
		return "", errInvalid("invalid_type", param, "content must be a string or an array of text parts")
	}
	var parts []json.RawMessage
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", errInvalid("invalid_type", param, "content must be a string or an array of text parts")
	}
	var sb strings.Builder
	for j, pr := range parts {
		pp := fmt.Sprintf("%s[%d]", param, j)
		// The type is read first, loosely: an image or audio part is a
		// well-formed OpenAI part the gateway does not support, not a type error.
		var kind struct {
			Type string `json:"type"`
		}
		if err := json.Unmarshal(pr, &kind); err != nil {
			return "", errInvalid("invalid_type", pp, "content parts must be objects {\"type\":\"text\",\"text\":...}")
		}
		if kind.Type != "text" {
			return "", errInvalid("unsupported_parameter", pp+".type", "only text content parts are supported")
		}
		var part contentPart
		d := json.NewDecoder(bytes.NewReader(pr))
		d.DisallowUnknownFields()
		if err := d.Decode(&part); err != nil {
			return "", errInvalid("invalid_type", pp, "text content parts are {\"type\":\"text\",\"text\":...}")
		}
		if part.Text == nil {
			return "", errInvalid("missing_field", pp+".text", "text content parts need text")
		}
		sb.WriteString(*part.Text)
	}
	return sb.String(), nil
}

// decodeError turns encoding/json's errors into stable codes without echoing
// any of the caller's values.
func decodeError(err error) *apiError {
	var typeErr *json.UnmarshalTypeError
	var synErr *json.SyntaxError
	switch {
	case errors.As(err, &typeErr):
		field := typeErr.Field
		if field == "" {
			return errInvalid("invalid_json", "", "request body must be a JSON object")
		}
		return errInvalid("invalid_type", field, fmt.Sprintf("%s must be of type %s", field, jsonTypeName(typeErr.Type.Kind().String())))
	case errors.As(err, &synErr), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return errInvalid("invalid_json", "", "request body is not valid JSON")
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		field := strings.Trim(strings.TrimPrefix(err.Error(), "json: unknown field "), `"`)
		if len(field) > 64 || !printable(field) {
			field = ""
		}
		return errInvalid("unknown_parameter", field, "unknown parameter "+strings.TrimSpace(field)+"; see the compatible subset in docs/protocol.md")
	default:
		return errInvalid("invalid_json", "", "request body is not valid JSON")
	}
}

func jsonTypeName(kind string) string {
	switch kind {
	case "int", "int64", "float64":
		return "number"
	case "bool":
		return "boolean"
	case "slice":
		return "array"
	case "struct", "ptr", "map":
		return "object"
	default:
		return kind
	}
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
