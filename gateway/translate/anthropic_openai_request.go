package translate

import (
	"errors"
	"fmt"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/llmgw/llmgw/api/wire/anthropic"
	"github.com/llmgw/llmgw/api/wire/openai"
)

// aoStrict decodes what the caller sent: a member this pair does not know
// must be refused by name, not dropped.
var aoStrict = json.RejectUnknownMembers(true)

// aoEmptySchema is the parameters of a tool declared without input_schema.
var aoEmptySchema = jsontext.Value(`{"type":"object","properties":{}}`)

// aoSchemaName names the JSON schema of a structured answer: the protocol
// requires a name, the Anthropic API has none.
const aoSchemaName = "output"

// Request is the chat-completions request for req. Every member is
// rewritten, so it is encoded anew, except the data of large base64
// images, which is sent from the caller's bytes (aoShareImages).
func (anthropicToOpenAI) Request(req *ChatRequest, model string) ([][]byte, error) {
	var r anthropic.MessagesRequest
	if err := json.Unmarshal(req.Body, &r, aoStrict); err != nil {
		nc := aoDecodeError(err, "")
		// A member the request type lacks is reported by name, unless a
		// check below names the cause better (a server tool has members
		// named after its type, which are not the caller's mistake).
		var lax anthropic.MessagesRequest
		if errors.Is(err, json.ErrUnknownName) && json.Unmarshal(req.Body, &lax) == nil {
			if _, err := aoBuildRequest(&lax, model, req.Stream); err != nil {
				return nil, err
			}
		}
		return nil, nc
	}
	cr, err := aoBuildRequest(&r, model, req.Stream)
	if err != nil {
		return nil, err
	}
	b, err := json.Marshal(cr)
	if err != nil {
		return nil, fmt.Errorf("translate: encode the chat-completions request: %w", err)
	}
	return aoShareImages(b, req.Body), nil
}

// aoBuildRequest is the chat-completions request for r.
func aoBuildRequest(r *anthropic.MessagesRequest, model string, stream bool) (*openai.ChatCompletionRequest, error) {
	if err := aoRefuseUnmodelled(r); err != nil {
		return nil, err
	}
	out := &openai.ChatCompletionRequest{
		Model: model, MaxCompletionTokens: r.MaxTokens, Temperature: r.Temperature, TopP: r.TopP,
	}
	if len(r.StopSequences) > 0 {
		stop, err := json.Marshal(r.StopSequences)
		if err != nil {
			return nil, fmt.Errorf("translate: encode stop sequences: %w", err)
		}
		out.Stop = stop
	}
	if stream {
		// The gateway bills the provider's counts, which a chat stream
		// reports only when asked.
		out.Stream = new(true)
		out.StreamOptions = &openai.StreamOptions{IncludeUsage: new(true)}
	}
	var err error
	if out.Messages, err = aoMessages(r.System, r.Messages); err != nil {
		return nil, err
	}
	if out.Tools, err = aoTools(r.Tools); err != nil {
		return nil, err
	}
	if len(out.Tools) > 0 {
		// Without tools there is nothing to choose or call in parallel, and
		// OpenAI refuses both members.
		if out.ToolChoice, err = aoToolChoice(r.ToolChoice); err != nil {
			return nil, err
		}
		if tc := r.ToolChoice; tc != nil && tc.DisableParallelToolUse != nil && *tc.DisableParallelToolUse {
			out.ParallelToolCalls = new(false)
		}
	}
	if out.ResponseFormat, err = aoResponseFormat(r.OutputConfig); err != nil {
		return nil, err
	}
	return out, nil
}

// aoRefuseUnmodelled refuses, by name, a parameter chat-completions cannot
// carry, set to a value that asks for something.
func aoRefuseUnmodelled(r *anthropic.MessagesRequest) error {
	switch {
	case r.TopK != nil:
		return &NotCarried{Param: "top_k", Reason: aoNoEquivalent}
	case !aoIsNullOrEmpty(r.MCPServers):
		return &NotCarried{Param: "mcp_servers", Reason: "MCP servers the provider connects to " + aoNoEquivalent}
	case len(r.Container) > 0 && r.Container.Kind() != 'n':
		return &NotCarried{Param: "container", Reason: "a provider's code execution container " + aoNoEquivalent}
	}
	return nil
}

// aoIsNullOrEmpty: absent, null or an empty array.
func aoIsNullOrEmpty(v jsontext.Value) bool {
	var a []jsontext.Value
	return len(v) == 0 || v.Kind() == 'n' || (v.Kind() == '[' && json.Unmarshal(v, &a) == nil && len(a) == 0)
}

// aoTools declares the caller's client tools as functions. A tool of
// another type is a server tool the provider runs (or an Anthropic-defined
// client tool whose schema only the provider knows): chat-completions has
// neither.
func aoTools(tools []anthropic.Tool) ([]openai.Tool, error) {
	if len(tools) == 0 {
		return nil, nil
	}
	out := make([]openai.Tool, len(tools))
	for i := range tools {
		t := &tools[i]
		if t.Type != "" && t.Type != "custom" {
			return nil, &NotCarried{Param: fmt.Sprintf("tools[%d].type", i), Reason: "only client tools (with an input_schema) have an equivalent in the OpenAI chat-completions protocol"}
		}
		schema := t.InputSchema
		if len(schema) == 0 || schema.Kind() == 'n' {
			schema = aoEmptySchema
		}
		out[i] = openai.Tool{Type: "function", Function: &openai.FunctionDef{
			Name: t.Name, Description: t.Description, Parameters: schema, Strict: t.Strict,
		}}
	}
	return out, nil
}

// aoToolChoice maps tool_choice: auto, any (some tool: "required"), a
// named tool (a named function) or none.
func aoToolChoice(c *anthropic.ToolChoice) (jsontext.Value, error) {
	if c == nil {
		return nil, nil
	}
	switch c.Type {
	case anthropic.ToolChoiceAuto:
		return openai.Text(openai.ToolChoiceAuto), nil
	case anthropic.ToolChoiceAny:
		return openai.Text(openai.ToolChoiceRequired), nil
	case anthropic.ToolChoiceNone:
		return openai.Text(openai.ToolChoiceNone), nil
	case anthropic.ToolChoiceTool:
		b, err := json.Marshal(openai.NamedToolChoice{Type: "function", Function: openai.FunctionName{Name: c.Name}})
		if err != nil {
			return nil, &NotCarried{Param: "tool_choice.name", Reason: "is not valid UTF-8"}
		}
		return b, nil
	}
	return nil, &NotCarried{Param: "tool_choice.type", Reason: "must be auto, any, tool or none"}
}

// aoResponseFormat maps output_config.format: a JSON schema becomes a
// json_schema response format. strict is left out (the provider's
// default, false): OpenAI's strict mode accepts a narrower set of schemas
// than the Anthropic API, and would refuse some of the caller's.
func aoResponseFormat(c *anthropic.OutputConfig) (*openai.ResponseFormat, error) {
	if c == nil || c.Format == nil {
		return nil, nil
	}
	if c.Format.Type != "json_schema" {
		return nil, &NotCarried{Param: "output_config.format.type", Reason: "only json_schema has an equivalent in the OpenAI chat-completions protocol"}
	}
	if len(c.Format.Schema) == 0 || c.Format.Schema.Kind() == 'n' {
		return nil, &NotCarried{Param: "output_config.format.schema", Reason: "is required"}
	}
	return &openai.ResponseFormat{Type: "json_schema", JSONSchema: &openai.JSONSchema{Name: aoSchemaName, Schema: c.Format.Schema}}, nil
}

// aoDecodeError is a decode error of the value at param as the caller's
// parameter: an unknown member by its name, any other by the place of the
// value the decoder could not read (antParam writes the API's notation).
func aoDecodeError(err error, param string) *NotCarried {
	var se *json.SemanticError
	if !errors.As(err, &se) {
		return &NotCarried{Param: param, Reason: "is not valid JSON"}
	}
	param = antParam(param, se.JSONPointer)
	if errors.Is(err, json.ErrUnknownName) {
		return &NotCarried{Param: param, Reason: aoNoEquivalent}
	}
	return &NotCarried{Param: param, Reason: "has a value of the wrong type"}
}
