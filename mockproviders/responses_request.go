package mockproviders

import (
	"bytes"
	"fmt"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/llmgw/llmgw/api/wire/openai"
)

// responsesProto speaks OpenAI's Responses protocol (POST /v1/responses) on
// mock alpha, for Codex. Auth and error bodies are alpha's (OpenAI's).
type responsesProto struct{ alphaProto }

func (responsesProto) path() string { return "/v1/responses" }

// responsesRoles are the roles of a message item.
var responsesRoles = map[string]bool{"user": true, "assistant": true, "system": true, "developer": true}

// responsesPartTypes is which content part types a message of each role
// takes, as OpenAI documents them; input_file parts count like images.
var responsesPartTypes = map[string]map[string]bool{
	"user":      {openai.PartInputText: true, openai.PartInputImage: true, openai.PartInputFile: true},
	"system":    {openai.PartInputText: true, openai.PartInputImage: true, openai.PartInputFile: true},
	"developer": {openai.PartInputText: true, openai.PartInputImage: true, openai.PartInputFile: true},
	"assistant": {openai.PartOutputText: true, openai.PartRefusal: true},
	// A tool call's output.
	"tool": {openai.PartInputText: true, openai.PartInputImage: true, openai.PartInputFile: true},
}

// minMaxOutputTokens is OpenAI's smallest max_output_tokens.
const minMaxOutputTokens = 16

// parse reads a Responses request into the shared form: instructions are
// system text; input is one user message (a string) or items — messages
// (role system and developer ones stay messages, as in chat), function and
// custom tool calls (an assistant turn whose arguments count as input) and
// their outputs (a tool turn: the caller's turn, where directives are read
// when it ends the input). Reasoning items passed back are accepted and
// not counted, like earlier thinking; other item types (item_reference,
// web_search_call...) are accepted and ignored. Members the mock does not
// implement (reasoning, store, include, prompt_cache_key,
// parallel_tool_calls, temperature, client_metadata, ...) and unknown ones
// are accepted and ignored; previous_response_id and conversation are
// refused, as a server that stored nothing must.
func (responsesProto) parse(body []byte) (*chatRequest, *apiError) {
	var in openai.ResponsesRequest
	if err := decodeStrict(body, &in); err != nil {
		return nil, badRequest("", "invalid JSON body: %v", err)
	}
	if e := checkModel(in.Model); e != nil {
		return nil, e
	}
	req := &chatRequest{model: in.Model, stream: in.Stream != nil && *in.Stream}
	if in.User != nil {
		req.user = *in.User
	}
	if in.PreviousResponseID != nil {
		return nil, badRequest("previous_response_id", "Previous response with id '%s' not found (the mock stores no responses).", *in.PreviousResponseID)
	}
	if len(in.Conversation) > 0 && string(in.Conversation) != "null" {
		return nil, badRequest("conversation", "conversation: the mock stores no conversations")
	}
	if raw := bytes.TrimSpace(in.Instructions); len(raw) > 0 && string(raw) != "null" {
		var s string
		if unmarshal(raw, &s) != nil {
			return nil, badRequest("instructions", "instructions must be a string")
		}
		req.system = []string{s}
	}
	if e := responsesInput(req, in.Input); e != nil {
		return nil, e
	}
	if e := responsesToolPairs(req.messages); e != nil {
		return nil, e
	}
	if in.MaxOutputTokens != nil {
		if *in.MaxOutputTokens < minMaxOutputTokens {
			return nil, badRequest("max_output_tokens", "Invalid 'max_output_tokens': integer below minimum value. Expected a value >= %d, but got %d instead.", minMaxOutputTokens, *in.MaxOutputTokens)
		}
		req.maxTokens = *in.MaxOutputTokens
	}
	if e := responsesTools(&in, req); e != nil {
		return nil, e
	}
	var e *apiError
	if in.Text != nil {
		req.format, e = responsesFormat(in.Text.Format)
	}
	return req, e
}

// responsesInput reads input: a string is one user message; an array is
// items.
func responsesInput(req *chatRequest, raw jsontext.Value) *apiError {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return badRequest("input", "Missing required parameter: 'input'.")
	}
	if raw[0] == '"' {
		var s string
		if err := unmarshal(raw, &s); err != nil {
			return badRequest("input", "input: %v", err)
		}
		req.messages = append(req.messages, message{role: "user", texts: []string{s}})
		return nil
	}
	var items []openai.InputItem
	if err := unmarshal(raw, &items); err != nil {
		return badRequest("input", "input must be a string or an array of input items")
	}
	if len(items) == 0 {
		return badRequest("input", "input must not be an empty array")
	}
	for i, it := range items {
		msg, keep, e := responsesItem(it, fmt.Sprintf("input[%d]", i))
		if e != nil {
			return e
		}
		if keep {
			req.messages = append(req.messages, msg)
		}
	}
	return nil
}

// responsesItem reads one input item; keep is false for items that are
// accepted and not part of the conversation the mock derives from.
func responsesItem(it openai.InputItem, param string) (msg message, keep bool, e *apiError) {
	switch it.Type {
	case openai.ItemMessage, "":
		if it.Type == "" && it.Role == "" {
			return msg, false, badRequest(param+".type", "%s: an item needs a type (or a role, for a message)", param)
		}
		if !responsesRoles[it.Role] {
			return msg, false, badRequest(param+".role", "%s.role %q is not one of user, assistant, system, developer", param, it.Role)
		}
		msg = message{role: it.Role}
		return msg, true, responsesParts(&msg, it.Content, param+".content", it.Role)
	case openai.ItemFunctionCall, openai.ItemCustomToolCall:
		args, what := it.Arguments, "arguments"
		if it.Type == openai.ItemCustomToolCall {
			args, what = it.Input, "input"
		}
		if it.CallID == "" || it.Name == "" || args == nil {
			return msg, false, badRequest(param, "%s: a %s item needs call_id, name and %s", param, it.Type, what)
		}
		return message{role: "assistant", calls: []string{it.CallID}, texts: []string{*args}}, true, nil
	case openai.ItemFunctionCallOutput, openai.ItemCustomToolCallOutput:
		if it.CallID == "" {
			return msg, false, badRequest(param+".call_id", "%s.call_id is required for a %s item", param, it.Type)
		}
		if len(bytes.TrimSpace(it.Output)) == 0 {
			return msg, false, badRequest(param+".output", "%s.output is required for a %s item", param, it.Type)
		}
		msg = message{role: "tool"}
		if e := responsesParts(&msg, it.Output, param+".output", "tool"); e != nil {
			return msg, false, e
		}
		msg.results = []toolTurn{{id: it.CallID, from: 0, to: len(msg.texts)}}
		return msg, true, nil
	}
	// reasoning (passed back with encrypted_content), item_reference,
	// hosted tool calls...: accepted, not counted.
	return msg, false, nil
}

// responsesParts reads content (a message's, or a tool output's when role
// is "tool"): a string or parts of the types the role takes.
func responsesParts(msg *message, raw jsontext.Value, param, role string) *apiError {
	text, parts, e := contentParts[openai.ContentItem](raw, param)
	if e != nil {
		return e
	}
	if text != nil {
		msg.texts = append(msg.texts, *text)
	}
	for j, p := range parts {
		pp := fmt.Sprintf("%s[%d]", param, j)
		if !responsesPartTypes[role][p.Type] {
			return badRequest(pp+".type", "%s.type %q is not allowed here (%s)", pp, p.Type, sortedKeys(responsesPartTypes[role]))
		}
		switch p.Type {
		case openai.PartInputText, openai.PartOutputText:
			if p.Text == nil {
				return badRequest(pp+".text", "%s.text is required", pp)
			}
			msg.texts = append(msg.texts, *p.Text)
		case openai.PartRefusal:
			if p.Refusal == nil {
				return badRequest(pp+".refusal", "%s.refusal is required", pp)
			}
			msg.texts = append(msg.texts, *p.Refusal)
		case openai.PartInputImage:
			if e := checkResponsesImage(p, pp); e != nil {
				return e
			}
			msg.images++
		case openai.PartInputFile:
			if p.FileID == "" && p.FileData == "" && p.FileURL == "" {
				return badRequest(pp, "%s: an input_file needs file_id, file_data or file_url", pp)
			}
			msg.images++
		}
	}
	return nil
}

// checkResponsesImage accepts an input_image with an http(s) or data: URL
// (never fetched) or an uploaded file's id.
func checkResponsesImage(p openai.ContentItem, param string) *apiError {
	switch p.Detail {
	case "", "auto", "low", "high", "original":
	default:
		return badRequest(param+".detail", "%s.detail %q is not one of auto, low, high, original", param, p.Detail)
	}
	switch {
	case p.ImageURL != "":
		return checkImageURL(&openai.ImageURL{URL: p.ImageURL}, param+".image_url")
	case p.FileID != "":
		return nil
	}
	return badRequest(param, "%s: an input_image needs image_url or file_id", param)
}

// responsesToolPairs checks tool outputs as OpenAI does: each answers a
// call made earlier in the input, and every call is answered.
func responsesToolPairs(msgs []message) *apiError {
	open := map[string]bool{}
	for _, m := range msgs {
		for _, id := range m.calls {
			open[id] = true
		}
		for _, r := range m.results {
			if !open[r.id] {
				return badRequest("input", "No tool call found for function call output with call_id %s.", r.id)
			}
			delete(open, r.id)
		}
	}
	if len(open) > 0 {
		return badRequest("input", "No tool output found for function call %s.", sortedKeys(open))
	}
	return nil
}

// responsesTools reads tools and tool_choice. Function tools are callable;
// custom tools, hosted tools (web_search, file_search, mcp...) and Codex's
// namespace groups are accepted and never called.
func responsesTools(in *openai.ResponsesRequest, req *chatRequest) *apiError {
	for i, t := range in.Tools {
		param := fmt.Sprintf("tools[%d]", i)
		switch t.Type {
		case openai.ResponsesToolFunction:
			if !toolNameOK(t.Name, maxAlphaToolName) {
				return badRequest(param+".name", "%s.name must match ^[a-zA-Z0-9_-]{1,%d}$", param, maxAlphaToolName)
			}
			if len(t.Parameters) > 0 && string(t.Parameters) != "null" && schemaObject(t.Parameters) != nil {
				return badRequest(param+".parameters", "%s.parameters must be a JSON Schema object", param)
			}
			req.tools = append(req.tools, tool{name: t.Name, schema: t.Parameters, callable: true})
		case "":
			return badRequest(param+".type", "%s.type is required", param)
		default:
			req.tools = append(req.tools, tool{})
		}
	}
	if e := checkToolNames(req.tools, "tools"); e != nil {
		return e
	}
	raw := bytes.TrimSpace(in.ToolChoice)
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	var mode string
	if unmarshal(raw, &mode) == nil {
		switch mode {
		case openai.ToolChoiceNone:
			req.toolMode = toolsNone
		case openai.ToolChoiceAuto:
		case openai.ToolChoiceRequired:
			req.toolMode = toolsRequired
		default:
			return badRequest("tool_choice", "tool_choice %q is not one of none, auto, required", mode)
		}
	} else {
		var named openai.ResponsesToolChoice
		if unmarshal(raw, &named) != nil || named.Type == "" {
			return badRequest("tool_choice", "tool_choice must be a string or an object with a type")
		}
		if named.Type == openai.ResponsesToolFunction {
			if toolNamed(req.tools, named.Name) == nil {
				return badRequest("tool_choice", "tool_choice names the function %q, which is not in tools", named.Name)
			}
			req.toolMode, req.toolName = toolsNamed, named.Name
		}
		// allowed_tools, custom and hosted tool types: accepted, treated as auto.
	}
	if req.toolMode != toolsAuto && req.toolMode != toolsNone && len(req.tools) == 0 {
		return badRequest("tool_choice", "tool_choice is only allowed when tools are specified")
	}
	return nil
}

// responsesFormat reads text.format.
func responsesFormat(f *openai.ResponsesTextFormat) (format, *apiError) {
	if f == nil {
		return format{}, nil
	}
	switch f.Type {
	case "text":
		return format{}, nil
	case "json_object":
		return format{kind: formatJSONObject}, nil
	case "json_schema":
		if f.Name == "" {
			return format{}, badRequest("text.format.name", "Missing required parameter: 'text.format.name'.")
		}
		if schemaObject(f.Schema) != nil {
			return format{}, badRequest("text.format.schema", "text.format.schema must be a JSON Schema object")
		}
		return format{kind: formatJSONSchema, schema: f.Schema}, nil
	}
	return format{}, badRequest("text.format.type", "text.format.type %q is not one of text, json_object, json_schema", f.Type)
}
