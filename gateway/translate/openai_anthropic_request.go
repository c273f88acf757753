package translate

import (
	"bytes"
	"errors"
	"fmt"
	"strings"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/llmgw/llmgw/api/wire/anthropic"
	"github.com/llmgw/llmgw/api/wire/openai"
)

// antDefaultMaxTokens fills the protocol's required max_tokens when the
// caller set none (chat-completions' is optional).
const antDefaultMaxTokens = 4096

// antSeparator joins the system and developer messages into one system
// prompt, and consecutive same-role texts into one turn: the protocol has
// one system prompt and requires user and assistant turns to alternate.
const antSeparator = "\n\n"

// antNoEquivalent is the reason a parameter the protocol lacks is refused.
const antNoEquivalent = "has no equivalent in the Anthropic Messages protocol"

// antStrict decodes what the caller sent: a member this pair does not know
// must be refused by name, not dropped.
var antStrict = json.RejectUnknownMembers(true)

// antEmptySchema is the input_schema of a function declared without
// parameters: the protocol requires one.
var antEmptySchema = jsontext.Value(`{"type":"object","properties":{}}`)

// antEmptyInput is the input of a tool call whose arguments are empty.
var antEmptyInput = jsontext.Value(`{}`)

// antImageTypes are the media types the protocol accepts in an image block.
var antImageTypes = map[string]bool{"image/jpeg": true, "image/png": true, "image/gif": true, "image/webp": true}

// Request is the Messages request for req. Every member is rewritten, so
// it is encoded anew, except the data of large base64 images, which is sent
// from the caller's bytes (antShareImages).
func (antPair) Request(req *ChatRequest, model string) ([][]byte, error) {
	var r openai.ChatCompletionRequest
	if err := json.Unmarshal(req.Body, &r, antStrict); err != nil {
		nc := antDecodeError(err, "")
		// A member the request type lacks is reported by name, unless a
		// check below names the cause better (a tool of another type has a
		// member named after that type, which is not the caller's mistake).
		var lax openai.ChatCompletionRequest
		if errors.Is(err, json.ErrUnknownName) && json.Unmarshal(req.Body, &lax) == nil {
			if _, err := antBuildRequest(&lax, model, req.Stream); err != nil {
				return nil, err
			}
		}
		return nil, nc
	}
	mr, err := antBuildRequest(&r, model, req.Stream)
	if err != nil {
		return nil, err
	}
	b, err := json.Marshal(mr)
	if err != nil {
		return nil, fmt.Errorf("translate: encode the Anthropic request: %w", err)
	}
	return antShareImages(b, req.Body), nil
}

// antBuildRequest is the Messages request for r.
func antBuildRequest(r *openai.ChatCompletionRequest, model string, stream bool) (*anthropic.MessagesRequest, error) {
	if err := antRefuseUnmodelled(r); err != nil {
		return nil, err
	}
	out := &anthropic.MessagesRequest{Model: model, Stream: stream, TopP: r.TopP}
	maxTokens := antDefaultMaxTokens
	switch {
	case r.MaxCompletionTokens != nil:
		maxTokens = *r.MaxCompletionTokens
	case r.MaxTokens != nil:
		maxTokens = *r.MaxTokens
	}
	out.MaxTokens = &maxTokens
	if t := r.Temperature; t != nil {
		// chat-completions accepts 0..2, this protocol 0..1: clamp rather
		// than have the provider reject a request valid for the caller.
		c := min(max(*t, 0), 1)
		out.Temperature = &c
	}
	stop, err := antStop(r.Stop)
	if err != nil {
		return nil, err
	}
	out.StopSequences = stop
	if r.User != nil && *r.User != "" {
		out.Metadata = &anthropic.Metadata{UserID: *r.User}
	}
	if out.System, out.Messages, err = antMessages(r.Messages); err != nil {
		return nil, err
	}
	if out.Tools, err = antTools(r.Tools); err != nil {
		return nil, err
	}
	if out.ToolChoice, err = antToolChoice(r.ToolChoice); err != nil {
		return nil, err
	}
	if r.ParallelToolCalls != nil && !*r.ParallelToolCalls && len(out.Tools) > 0 {
		// Without tools there is nothing to call in parallel; with "none"
		// nothing to call at all (and that type takes no such member).
		if out.ToolChoice == nil {
			out.ToolChoice = &anthropic.ToolChoice{Type: anthropic.ToolChoiceAuto}
		}
		if out.ToolChoice.Type != anthropic.ToolChoiceNone {
			out.ToolChoice.DisableParallelToolUse = new(true)
		}
	}
	if out.OutputConfig, err = antOutputConfig(r.ResponseFormat); err != nil {
		return nil, err
	}
	return out, nil
}

// antUnmodelled are the parameters the protocol has no equivalent for,
// each with the values that ask for nothing (what the caller gets anyway),
// which are carried by leaving them out.
var antUnmodelled = []struct {
	name    string
	value   func(*openai.ChatCompletionRequest) jsontext.Value
	neutral func(jsontext.Value) bool
}{
	{"logprobs", func(r *openai.ChatCompletionRequest) jsontext.Value { return r.Logprobs }, antIsFalse},
	{"top_logprobs", func(r *openai.ChatCompletionRequest) jsontext.Value { return r.TopLogprobs }, antIsZero},
	{"logit_bias", func(r *openai.ChatCompletionRequest) jsontext.Value { return r.LogitBias }, antIsEmpty},
	{"seed", func(r *openai.ChatCompletionRequest) jsontext.Value { return r.Seed }, antIsNull},
	{"presence_penalty", func(r *openai.ChatCompletionRequest) jsontext.Value { return r.PresencePenalty }, antIsZero},
	{"frequency_penalty", func(r *openai.ChatCompletionRequest) jsontext.Value { return r.FrequencyPenalty }, antIsZero},
	{"audio", func(r *openai.ChatCompletionRequest) jsontext.Value { return r.Audio }, antIsNull},
	{"modalities", func(r *openai.ChatCompletionRequest) jsontext.Value { return r.Modalities }, antIsTextOnly},
	{"prediction", func(r *openai.ChatCompletionRequest) jsontext.Value { return r.Prediction }, antIsNull},
	{"service_tier", func(r *openai.ChatCompletionRequest) jsontext.Value { return r.ServiceTier }, antIsAutoTier},
	{"store", func(r *openai.ChatCompletionRequest) jsontext.Value { return r.Store }, antIsFalse},
	{"metadata", func(r *openai.ChatCompletionRequest) jsontext.Value { return r.Metadata }, antIsEmpty},
	{"reasoning_effort", func(r *openai.ChatCompletionRequest) jsontext.Value { return r.ReasoningEffort }, antIsNull},
	{"functions", func(r *openai.ChatCompletionRequest) jsontext.Value { return r.Functions }, antIsNull},
	{"function_call", func(r *openai.ChatCompletionRequest) jsontext.Value { return r.FunctionCall }, antIsNull},
}

// antRefuseUnmodelled refuses, by name, a parameter the protocol cannot
// carry, set to a value that asks for something.
func antRefuseUnmodelled(r *openai.ChatCompletionRequest) error {
	if r.N != nil && *r.N != 1 {
		return &NotCarried{Param: "n", Reason: "only n=1 has an equivalent in the Anthropic Messages protocol (one answer per request)"}
	}
	for _, u := range antUnmodelled {
		if v := u.value(r); len(v) > 0 && !u.neutral(v) {
			return &NotCarried{Param: u.name, Reason: antNoEquivalent}
		}
	}
	return nil
}

func antIsNull(v jsontext.Value) bool  { return v.Kind() == 'n' }
func antIsFalse(v jsontext.Value) bool { return v.Kind() == 'n' || v.Kind() == 'f' }

// antIsZero: null or a number equal to 0 (0, 0.0, -0, 0e5).
func antIsZero(v jsontext.Value) bool {
	var f float64
	return v.Kind() == 'n' || (v.Kind() == '0' && json.Unmarshal(v, &f) == nil && f == 0)
}

// antIsEmpty: null or an object without members.
func antIsEmpty(v jsontext.Value) bool {
	var m map[string]jsontext.Value
	return v.Kind() == 'n' || (v.Kind() == '{' && json.Unmarshal(v, &m) == nil && len(m) == 0)
}

// antIsTextOnly: null or ["text"], the output every answer has.
func antIsTextOnly(v jsontext.Value) bool {
	var m []string
	return v.Kind() == 'n' || (json.Unmarshal(v, &m) == nil && len(m) == 1 && m[0] == "text")
}

// antIsAutoTier: null or "auto", chat-completions' default, which leaves
// the tier to the provider as this protocol's default does.
func antIsAutoTier(v jsontext.Value) bool {
	var s string
	return v.Kind() == 'n' || (json.Unmarshal(v, &s) == nil && s == "auto")
}

// antStop is stop (a string or an array of strings) as stop sequences.
func antStop(v jsontext.Value) ([]string, error) {
	switch v.Kind() {
	case 0, 'n':
		return nil, nil
	case '"':
		var s string
		if err := json.Unmarshal(v, &s); err != nil {
			return nil, antDecodeError(err, "stop")
		}
		return []string{s}, nil
	}
	var ss []string
	if err := json.Unmarshal(v, &ss); err != nil {
		return nil, &NotCarried{Param: "stop", Reason: "must be a string or an array of strings"}
	}
	return ss, nil
}

// antTools declares the caller's functions as client tools. strict has no
// member in a client tool here: it is dropped, and the tool's input is
// then as good as the model makes it, as it is for a caller without strict.
func antTools(tools []openai.Tool) ([]anthropic.Tool, error) {
	if len(tools) == 0 {
		return nil, nil
	}
	out := make([]anthropic.Tool, len(tools))
	for i, t := range tools {
		if t.Type != "function" {
			return nil, &NotCarried{Param: fmt.Sprintf("tools[%d].type", i), Reason: "only function tools have an equivalent in the Anthropic Messages protocol"}
		}
		if t.Function == nil {
			return nil, &NotCarried{Param: fmt.Sprintf("tools[%d].function", i), Reason: "is required"}
		}
		schema := t.Function.Parameters
		if len(schema) == 0 || schema.Kind() == 'n' {
			schema = antEmptySchema
		}
		out[i] = anthropic.Tool{Name: t.Function.Name, Description: t.Function.Description, InputSchema: schema}
	}
	return out, nil
}

// antToolChoice maps tool_choice: "auto", "required" (any tool), "none",
// or a named function.
func antToolChoice(v jsontext.Value) (*anthropic.ToolChoice, error) {
	switch v.Kind() {
	case 0, 'n':
		return nil, nil
	case '"':
		var s string
		if err := json.Unmarshal(v, &s); err != nil {
			return nil, antDecodeError(err, "tool_choice")
		}
		switch s {
		case openai.ToolChoiceAuto:
			return &anthropic.ToolChoice{Type: anthropic.ToolChoiceAuto}, nil
		case openai.ToolChoiceRequired:
			return &anthropic.ToolChoice{Type: anthropic.ToolChoiceAny}, nil
		case openai.ToolChoiceNone:
			return &anthropic.ToolChoice{Type: anthropic.ToolChoiceNone}, nil
		}
		return nil, &NotCarried{Param: "tool_choice", Reason: "must be none, auto, required or a function"}
	case '{':
		var kind struct {
			Type string `json:"type"`
		}
		if err := json.Unmarshal(v, &kind); err != nil {
			return nil, antDecodeError(err, "tool_choice")
		}
		if kind.Type != "function" {
			// allowed_tools and custom choices
			return nil, &NotCarried{Param: "tool_choice.type", Reason: antNoEquivalent}
		}
		var c openai.NamedToolChoice
		if err := json.Unmarshal(v, &c, antStrict); err != nil {
			return nil, antDecodeError(err, "tool_choice")
		}
		return &anthropic.ToolChoice{Type: anthropic.ToolChoiceTool, Name: c.Function.Name}, nil
	}
	return nil, &NotCarried{Param: "tool_choice", Reason: "must be none, auto, required or a function"}
}

// antOutputConfig maps response_format: a JSON schema becomes the
// protocol's structured output; plain JSON without a schema it cannot ask
// for. The schema's name, description and strict have no member: the
// protocol always holds the answer to the schema.
func antOutputConfig(f *openai.ResponseFormat) (*anthropic.OutputConfig, error) {
	if f == nil {
		return nil, nil
	}
	switch f.Type {
	case "text":
		return nil, nil
	case "json_schema":
		if f.JSONSchema == nil || len(f.JSONSchema.Schema) == 0 || f.JSONSchema.Schema.Kind() == 'n' {
			return nil, &NotCarried{Param: "response_format.json_schema.schema", Reason: "is required by the Anthropic Messages protocol"}
		}
		return &anthropic.OutputConfig{Format: &anthropic.OutputFormat{Type: "json_schema", Schema: f.JSONSchema.Schema}}, nil
	}
	return nil, &NotCarried{Param: "response_format.type", Reason: "only text and json_schema have an equivalent in the Anthropic Messages protocol"}
}

// antDecodeError is a decode error of the value at param as the caller's
// parameter: an unknown member by its name, any other by the place of the
// value the decoder could not read.
func antDecodeError(err error, param string) *NotCarried {
	var se *json.SemanticError
	if !errors.As(err, &se) {
		return &NotCarried{Param: param, Reason: "is not valid JSON"}
	}
	param = antParam(param, se.JSONPointer)
	if errors.Is(err, json.ErrUnknownName) {
		return &NotCarried{Param: param, Reason: antNoEquivalent}
	}
	return &NotCarried{Param: param, Reason: "has a value of the wrong type"}
}

// antParam is the parameter at p under prefix in the API's notation
// (messages[0].content[1].text). Names are written as they are, one of
// them maybe an unknown name the caller chose: the server makes the
// parameter safe to show (NotCarried).
func antParam(prefix string, p jsontext.Pointer) string {
	var b strings.Builder
	b.WriteString(prefix)
	for tok := range p.Tokens() {
		if antIsIndex(tok) {
			b.WriteString("[" + tok + "]")
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(tok)
	}
	return b.String()
}

func antIsIndex(tok string) bool {
	if tok == "" || len(tok) > 9 {
		return false
	}
	for _, c := range []byte(tok) {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// antIsBlank: arguments a model left empty mean no arguments.
func antIsBlank(s string) bool { return strings.TrimSpace(s) == "" }

// antObject reports whether s is one JSON object (with nothing after it).
func antObject(s string) (jsontext.Value, bool) {
	v := jsontext.Value(bytes.TrimSpace([]byte(s)))
	return v, v.Kind() == '{' && v.IsValid()
}
