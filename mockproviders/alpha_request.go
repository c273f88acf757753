package mockproviders

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/llmgw/llmgw/api/wire/openai"
)

var alphaRoles = map[string]bool{"system": true, "developer": true, "user": true, "assistant": true, "tool": true}

// alphaPartTypes is which content part types each role may send, as
// OpenAI documents them. input_audio and file parts count like images.
var alphaPartTypes = map[string]map[string]bool{
	"system":    {"text": true},
	"developer": {"text": true},
	"user":      {"text": true, "image_url": true, "input_audio": true, "file": true},
	"assistant": {"text": true, "refusal": true},
	"tool":      {"text": true},
}

// maxAlphaToolName is OpenAI's limit on a function name.
const maxAlphaToolName = 64

// parse reads a chat-completions request. Members the mock does not
// implement (seed, logprobs, penalties, metadata, store, reasoning_effort,
// parallel_tool_calls, prediction, modalities, ...) and unknown ones are
// accepted and ignored; what it reads is checked as OpenAI checks it.
func (alphaProto) parse(body []byte) (*chatRequest, *apiError) {
	var in openai.ChatCompletionRequest
	if err := decodeStrict(body, &in); err != nil {
		return nil, badRequest("", "invalid JSON body: %v", err)
	}
	if e := checkModel(in.Model); e != nil {
		return nil, e
	}
	if len(in.Messages) == 0 {
		return nil, badRequest("messages", "messages must be a non-empty array")
	}
	req := &chatRequest{model: in.Model, stream: in.Stream != nil && *in.Stream}
	if in.User != nil {
		req.user = *in.User
	}
	for i, m := range in.Messages {
		msg, e := alphaMessage(m, i)
		if e != nil {
			return nil, e
		}
		req.messages = append(req.messages, msg)
	}
	if e := alphaToolPairs(req.messages); e != nil {
		return nil, e
	}
	if in.StreamOptions != nil {
		if !req.stream {
			return nil, badRequest("stream_options", "stream_options is only allowed when stream is true")
		}
		req.includeUsage = in.StreamOptions.IncludeUsage != nil && *in.StreamOptions.IncludeUsage
	}
	// max_completion_tokens is the newer name; it wins when both are sent.
	for _, f := range []struct {
		name string
		v    *int
	}{{"max_tokens", in.MaxTokens}, {"max_completion_tokens", in.MaxCompletionTokens}} {
		if f.v == nil {
			continue
		}
		if *f.v < 1 {
			return nil, badRequest(f.name, "%s must be at least 1", f.name)
		}
		req.maxTokens = *f.v
	}
	if in.N != nil && *in.N != 1 {
		return nil, badRequest("n", "the mock only supports n=1")
	}
	stops, e := decodeStops(in.Stop, "stop")
	if e != nil {
		return nil, e
	}
	req.stops = stops
	if e := alphaTools(&in, req); e != nil {
		return nil, e
	}
	if req.format, e = alphaFormat(in.ResponseFormat); e != nil {
		return nil, e
	}
	return req, nil
}

// alphaMessage reads one message: its texts and images, the tool calls of
// an assistant message (their arguments count as input) and the result a
// tool message carries.
func alphaMessage(m openai.Message, i int) (message, *apiError) {
	param := fmt.Sprintf("messages[%d]", i)
	if !alphaRoles[m.Role] {
		return message{}, badRequest(param+".role", "%s.role %q is not one of system, developer, user, assistant, tool", param, m.Role)
	}
	msg := message{role: m.Role}
	text, parts, e := contentParts[openai.ContentPart](m.Content, param+".content")
	if e != nil {
		return msg, e
	}
	if text != nil {
		msg.texts = append(msg.texts, *text)
	}
	for j, p := range parts {
		pp := fmt.Sprintf("%s.content[%d]", param, j)
		if !alphaPartTypes[m.Role][p.Type] {
			return msg, badRequest(pp+".type", "%s.type %q is not allowed in a %s message", pp, p.Type, m.Role)
		}
		switch p.Type {
		case openai.PartText:
			if p.Text == nil {
				return msg, badRequest(pp+".text", "%s.text is required", pp)
			}
			msg.texts = append(msg.texts, *p.Text)
		case openai.PartImage:
			if e := checkImageURL(p.ImageURL, pp+".image_url"); e != nil {
				return msg, e
			}
			msg.images++
		case "refusal":
			// An assistant's earlier refusal; its text is not modelled in ContentPart.
		default: // input_audio, file
			msg.images++
		}
	}
	switch m.Role {
	case openai.RoleTool:
		if m.ToolCallID == "" {
			return msg, badRequest(param+".tool_call_id", "%s.tool_call_id is required for a tool message", param)
		}
		msg.results = []toolTurn{{id: m.ToolCallID, from: 0, to: len(msg.texts)}}
	case openai.RoleAssistant:
		for j, c := range m.ToolCalls {
			cp := fmt.Sprintf("%s.tool_calls[%d]", param, j)
			if c.ID == "" || c.Type != "function" || c.Function.Name == "" {
				return msg, badRequest(cp, "%s needs an id, type \"function\" and function.name", cp)
			}
			msg.calls = append(msg.calls, c.ID)
			msg.texts = append(msg.texts, c.Function.Arguments)
		}
	}
	return msg, nil
}

// checkImageURL accepts an http(s) URL, never fetched, or a data: URL
// holding base64, and OpenAI's detail values.
func checkImageURL(img *openai.ImageURL, param string) *apiError {
	if img == nil {
		return badRequest(param, "%s is required", param)
	}
	switch img.Detail {
	case "", "auto", "low", "high":
	default:
		return badRequest(param+".detail", "%s.detail %q is not one of auto, low, high", param, img.Detail)
	}
	if rest, ok := strings.CutPrefix(img.URL, "data:"); ok {
		meta, data, ok := strings.Cut(rest, ",")
		if !ok || !strings.HasPrefix(meta, "image/") || !strings.HasSuffix(meta, ";base64") || !checkBase64(data) {
			return badRequest(param+".url", "%s.url: a data URL must be data:image/<type>;base64,<data>", param)
		}
		return nil
	}
	if !httpURL(img.URL) {
		return badRequest(param+".url", "%s.url must be an http(s) URL or a data: URL", param)
	}
	return nil
}

// alphaToolPairs checks tool messages as OpenAI does: each must follow an
// assistant message with tool_calls (or another tool message answering
// it) and answer one of its calls; the calls of an assistant message
// followed by another message must all be answered.
func alphaToolPairs(msgs []message) *apiError {
	open, openAt := map[string]bool(nil), -1
	for i, m := range msgs {
		if m.role == openai.RoleTool {
			id := m.results[0].id
			if openAt < 0 {
				return badRequest(fmt.Sprintf("messages[%d].role", i), "messages with role 'tool' must be a response to a preceding message with 'tool_calls' (messages[%d])", i)
			}
			if !open[id] {
				return badRequest(fmt.Sprintf("messages[%d].tool_call_id", i), "messages[%d].tool_call_id %q is not an unanswered tool call of messages[%d]", i, id, openAt)
			}
			delete(open, id)
			continue
		}
		if len(open) > 0 {
			return badRequest(fmt.Sprintf("messages[%d].role", openAt), "an assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'; messages[%d] leaves %s unanswered", openAt, sortedKeys(open))
		}
		open, openAt = nil, -1
		if m.role == openai.RoleAssistant && len(m.calls) > 0 {
			open, openAt = map[string]bool{}, i
			for _, id := range m.calls {
				open[id] = true
			}
		}
	}
	return nil
}

// alphaTools reads tools and tool_choice. Function tools are callable;
// custom tools are accepted and never called.
func alphaTools(in *openai.ChatCompletionRequest, req *chatRequest) *apiError {
	for i, t := range in.Tools {
		param := fmt.Sprintf("tools[%d]", i)
		switch t.Type {
		case "function":
			if t.Function == nil || !toolNameOK(t.Function.Name, maxAlphaToolName) {
				return badRequest(param+".function.name", "%s.function.name must match ^[a-zA-Z0-9_-]{1,%d}$", param, maxAlphaToolName)
			}
			if len(t.Function.Parameters) > 0 && schemaObject(t.Function.Parameters) != nil {
				return badRequest(param+".function.parameters", "%s.function.parameters must be a JSON Schema object", param)
			}
			req.tools = append(req.tools, tool{name: t.Function.Name, schema: t.Function.Parameters, callable: true})
		case "custom":
			req.tools = append(req.tools, tool{})
		default:
			return badRequest(param+".type", "%s.type %q is not one of function, custom", param, t.Type)
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
		var named openai.NamedToolChoice
		if unmarshal(raw, &named) != nil {
			return badRequest("tool_choice", "tool_choice must be a string or an object")
		}
		switch named.Type {
		case "function":
			if toolNamed(req.tools, named.Function.Name) == nil {
				return badRequest("tool_choice", "tool_choice names the function %q, which is not in tools", named.Function.Name)
			}
			req.toolMode, req.toolName = toolsNamed, named.Function.Name
		case "allowed_tools", "custom":
			// Accepted; the mock treats them as auto.
		default:
			return badRequest("tool_choice.type", "tool_choice.type %q is not one of function, allowed_tools, custom", named.Type)
		}
	}
	if req.toolMode != toolsAuto && req.toolMode != toolsNone && len(req.tools) == 0 {
		return badRequest("tool_choice", "tool_choice is only allowed when tools are specified")
	}
	return nil
}

// alphaFormat reads response_format.
func alphaFormat(rf *openai.ResponseFormat) (format, *apiError) {
	if rf == nil {
		return format{}, nil
	}
	switch rf.Type {
	case "text":
		return format{}, nil
	case "json_object":
		return format{kind: formatJSONObject}, nil
	case "json_schema":
		js := rf.JSONSchema
		if js == nil || js.Name == "" {
			return format{}, badRequest("response_format.json_schema", "response_format.json_schema with a name is required for type json_schema")
		}
		if len(js.Schema) > 0 && schemaObject(js.Schema) != nil {
			return format{}, badRequest("response_format.json_schema.schema", "response_format.json_schema.schema must be a JSON Schema object")
		}
		return format{kind: formatJSONSchema, schema: js.Schema}, nil
	}
	return format{}, badRequest("response_format.type", "response_format.type %q is not one of text, json_object, json_schema", rf.Type)
}
