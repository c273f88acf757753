package mockproviders

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/llmgw/llmgw/api/wire/anthropic"
)

// betaBlockTypes is which content block types each place takes: a user
// turn, an assistant turn, a tool_result's content, a search_result's
// content. Assistant turns also take every *_tool_result block (results of
// server tools).
var betaBlockTypes = map[string]map[string]bool{
	"user": {"text": true, "image": true, "document": true, "tool_result": true, "search_result": true,
		"container_upload": true},
	"assistant": {"text": true, "thinking": true, "redacted_thinking": true, "tool_use": true,
		"server_tool_use": true, "mcp_tool_use": true, "container_upload": true},
	"tool_result":   {"text": true, "image": true, "document": true, "search_result": true},
	"search_result": {"text": true},
}

// betaImageTypes are the media types Anthropic accepts for a base64 image.
var betaImageTypes = map[string]bool{"image/jpeg": true, "image/png": true, "image/gif": true, "image/webp": true}

// minThinkingBudget is Anthropic's smallest thinking.budget_tokens.
const minThinkingBudget = 1024

// parse reads a Messages request. Every documented member is accepted:
// what the mock implements is read and checked as Anthropic checks it
// (model, max_tokens, messages, system, stop_sequences, metadata, tools,
// tool_choice, thinking, output_config.format); the others
// (context_management, service_tier, top_k, mcp_servers, container,
// output_config.effort, cache_control anywhere...) and unknown members are
// ignored.
func (betaProto) parse(body []byte) (*chatRequest, *apiError) { return parseBeta(body, true) }

// parseBeta is parse; count_tokens requests (withMaxTokens false) have no
// max_tokens.
func parseBeta(body []byte, withMaxTokens bool) (*chatRequest, *apiError) {
	var in anthropic.MessagesRequest
	if err := decodeStrict(body, &in); err != nil {
		return nil, badRequest("", "invalid JSON body: %v", err)
	}
	if e := checkModel(in.Model); e != nil {
		return nil, e
	}
	maxTokens := 0
	switch {
	case !withMaxTokens:
	case in.MaxTokens == nil:
		return nil, badRequest("max_tokens", "max_tokens: field required")
	case *in.MaxTokens < 1:
		return nil, badRequest("max_tokens", "max_tokens: must be at least 1")
	default:
		maxTokens = *in.MaxTokens
	}
	if len(in.Messages) == 0 {
		return nil, badRequest("messages", "messages: at least one message is required")
	}
	system, e := betaSystem(in.System, "system")
	if e != nil {
		return nil, e
	}
	req := &chatRequest{model: in.Model, system: system, stream: in.Stream && withMaxTokens, maxTokens: maxTokens, stops: in.StopSequences}
	if in.Metadata != nil {
		req.user = in.Metadata.UserID
	}
	for i, m := range in.Messages {
		if m.Role == "system" {
			// Claude Code 2.1 sends per-turn system text as a message of
			// role system among the turns (beta per-turn-control); the API
			// takes it as system text, so it is neither a turn nor where
			// directives are read.
			more, e := betaSystem(m.Content, fmt.Sprintf("messages.%d.content", i))
			if e != nil {
				return nil, e
			}
			req.system = append(req.system, more...)
			continue
		}
		if m.Role != "user" && m.Role != "assistant" {
			return nil, badRequest("", "messages.%d.role: %q is not one of user, assistant, system", i, m.Role)
		}
		msg := message{role: m.Role}
		if e := betaContent(&msg, m.Content, fmt.Sprintf("messages.%d.content", i), m.Role); e != nil {
			return nil, e
		}
		req.messages = append(req.messages, msg)
	}
	if len(req.messages) == 0 {
		return nil, badRequest("messages", "messages: at least one user or assistant message is required")
	}
	if e := betaToolPairs(req.messages); e != nil {
		return nil, e
	}
	if e := betaTools(&in, req); e != nil {
		return nil, e
	}
	if e := betaThinking(in.Thinking, in.ToolChoice); e != nil {
		return nil, e
	}
	if oc := in.OutputConfig; oc != nil && oc.Format != nil {
		if oc.Format.Type != "json_schema" || schemaObject(oc.Format.Schema) != nil {
			return nil, badRequest("", "output_config.format: want type json_schema with a schema object")
		}
		req.format = format{kind: formatJSONSchema, schema: oc.Format.Schema}
	}
	return req, nil
}

// betaSystem reads system text (the system member, or the content of a
// system message, named param): a string or text blocks (with
// cache_control or citations, ignored).
func betaSystem(raw jsontext.Value, param string) ([]string, *apiError) {
	text, blocks, e := contentParts[anthropic.ContentBlock](raw, param)
	if e != nil {
		return nil, e
	}
	if text != nil {
		return []string{*text}, nil
	}
	var out []string
	for i, b := range blocks {
		if b.Type != anthropic.BlockText || b.Text == nil {
			return nil, badRequest("", "%s.%d: system text takes text blocks only (got type %q)", param, i, b.Type)
		}
		out = append(out, *b.Text)
	}
	return out, nil
}

// betaContent reads a content member (a string or blocks) into msg; place
// is the role or the block whose content it is (tool_result, search_result).
func betaContent(msg *message, raw jsontext.Value, param, place string) *apiError {
	text, blocks, e := contentParts[anthropic.ContentBlock](raw, param)
	if e != nil {
		return e
	}
	if text != nil {
		msg.texts = append(msg.texts, *text)
	}
	for j, b := range blocks {
		if e := betaBlock(msg, b, fmt.Sprintf("%s.%d", param, j), place); e != nil {
			return e
		}
	}
	return nil
}

func betaBlock(msg *message, b anthropic.ContentBlock, param, place string) *apiError {
	serverResult := place == "assistant" && strings.HasSuffix(b.Type, "_tool_result")
	if !betaBlockTypes[place][b.Type] && !serverResult {
		return badRequest("", "%s.type: %q is not a content block type of a %s", param, b.Type, place)
	}
	switch b.Type {
	case anthropic.BlockText:
		if b.Text == nil {
			return badRequest("", "%s.text: field required", param)
		}
		msg.texts = append(msg.texts, *b.Text)
	case anthropic.BlockImage:
		if e := checkBetaImage(b.Source, param+".source"); e != nil {
			return e
		}
		msg.images++
	case anthropic.BlockDocument:
		return betaDocument(msg, b.Source, param+".source")
	case anthropic.BlockToolResult:
		if b.ToolUseID == "" {
			return badRequest("", "%s.tool_use_id: field required", param)
		}
		from := len(msg.texts)
		if e := betaContent(msg, b.Content, param+".content", "tool_result"); e != nil {
			return e
		}
		msg.results = append(msg.results, toolTurn{id: b.ToolUseID, from: from, to: len(msg.texts), isError: b.IsError != nil && *b.IsError})
	case "search_result":
		return betaContent(msg, b.Content, param+".content", "search_result")
	case anthropic.BlockToolUse:
		if b.ID == "" || b.Name == "" {
			return badRequest("", "%s: a tool_use block needs an id and a name", param)
		}
		if schemaObject(b.Input) != nil {
			return badRequest("", "%s.input: must be a JSON object", param)
		}
		msg.calls = append(msg.calls, b.ID)
		msg.texts = append(msg.texts, string(compactOf(b.Input)))
	}
	// thinking, redacted_thinking, server tool blocks, container_upload:
	// accepted, not counted (a vendor drops earlier thinking from the prompt).
	return nil
}

// checkBetaImage accepts base64 data of the four image types, an http(s)
// URL (never fetched) or an uploaded file's id.
func checkBetaImage(src *anthropic.ImageSource, param string) *apiError {
	if src == nil {
		return badRequest("", "%s: field required", param)
	}
	switch src.Type {
	case anthropic.SourceBase64:
		if !betaImageTypes[src.MediaType] || !checkBase64(src.Data) {
			return badRequest("", "%s: base64 images need media_type image/jpeg, image/png, image/gif or image/webp and base64 data", param)
		}
	case anthropic.SourceURL:
		if !httpURL(src.URL) {
			return badRequest("", "%s.url: must be an http(s) URL", param)
		}
	case anthropic.SourceFile:
		if src.FileID == "" {
			return badRequest("", "%s.file_id: field required", param)
		}
	default:
		return badRequest("", "%s.type: %q is not one of base64, url, file", param, src.Type)
	}
	return nil
}

// betaDocument reads a document block: a text source counts as text, any
// other (a PDF, a URL, a file, content blocks) as one image.
func betaDocument(msg *message, src *anthropic.ImageSource, param string) *apiError {
	if src == nil {
		return badRequest("", "%s: field required", param)
	}
	switch src.Type {
	case anthropic.SourceText:
		msg.texts = append(msg.texts, src.Data)
		return nil
	case anthropic.SourceBase64:
		if src.MediaType == "" || !checkBase64(src.Data) {
			return badRequest("", "%s: base64 documents need a media_type and base64 data", param)
		}
	case anthropic.SourceURL:
		if !httpURL(src.URL) {
			return badRequest("", "%s.url: must be an http(s) URL", param)
		}
	case anthropic.SourceFile:
		if src.FileID == "" {
			return badRequest("", "%s.file_id: field required", param)
		}
	case anthropic.SourceContent:
	default:
		return badRequest("", "%s.type: %q is not one of base64, text, url, content, file", param, src.Type)
	}
	msg.images++
	return nil
}

// betaToolPairs checks tool results as Anthropic does: each tool_result
// answers a tool_use of the assistant turn just before it, and every
// tool_use of an assistant turn that is followed by another turn is
// answered in that turn.
func betaToolPairs(msgs []message) *apiError {
	for i, m := range msgs {
		if len(m.results) > 0 {
			prev := map[string]bool{}
			if i > 0 && msgs[i-1].role == "assistant" {
				for _, id := range msgs[i-1].calls {
					prev[id] = true
				}
			}
			for _, r := range m.results {
				if !prev[r.id] {
					return badRequest("", "messages.%d.content: unexpected tool_use_id found in tool_result blocks: %s. Each tool_result block must have a corresponding tool_use block in the previous message.", i, r.id)
				}
			}
		}
		if m.role != "assistant" || len(m.calls) == 0 || i+1 == len(msgs) {
			continue
		}
		missing := map[string]bool{}
		for _, id := range m.calls {
			missing[id] = true
		}
		for _, r := range msgs[i+1].results {
			delete(missing, r.id)
		}
		if len(missing) > 0 {
			return badRequest("", "messages.%d: tool_use ids were found without tool_result blocks immediately after: %s. Each tool_use block must have a corresponding tool_result block in the next message.", i, sortedKeys(missing))
		}
	}
	return nil
}

// betaTools reads tools and tool_choice. Custom tools (no type, or
// "custom") are callable; tools with another type (web_search_20250305,
// bash_20250124, mcp_toolset...) are accepted and never called.
func betaTools(in *anthropic.MessagesRequest, req *chatRequest) *apiError {
	for i, t := range in.Tools {
		if t.Type != "" && t.Type != "custom" {
			req.tools = append(req.tools, tool{name: t.Name})
			continue
		}
		if !toolNameOK(t.Name, maxToolName) {
			return badRequest("", "tools.%d.custom.name: must match ^[a-zA-Z0-9_-]{1,%d}$", i, maxToolName)
		}
		if schemaObject(t.InputSchema) != nil {
			return badRequest("", "tools.%d.custom.input_schema: a JSON Schema object is required", i)
		}
		req.tools = append(req.tools, tool{name: t.Name, schema: t.InputSchema, callable: true})
	}
	if e := checkToolNames(req.tools, "tools"); e != nil {
		return e
	}
	tc := in.ToolChoice
	if tc == nil {
		return nil
	}
	switch tc.Type {
	case anthropic.ToolChoiceAuto:
	case anthropic.ToolChoiceNone:
		req.toolMode = toolsNone
	case anthropic.ToolChoiceAny:
		req.toolMode = toolsRequired
	case anthropic.ToolChoiceTool:
		offered := false
		for _, t := range req.tools {
			offered = offered || t.name == tc.Name
		}
		if tc.Name == "" || !offered {
			return badRequest("", "tool_choice.name: %q is not the name of a tool in tools", tc.Name)
		}
		if toolNamed(req.tools, tc.Name) != nil { // a server tool forced is left to auto
			req.toolMode, req.toolName = toolsNamed, tc.Name
		}
	default:
		return badRequest("", "tool_choice.type: %q is not one of auto, any, tool, none", tc.Type)
	}
	return nil
}

// betaThinking checks the thinking member; the mock does not think.
func betaThinking(raw jsontext.Value, choice *anthropic.ToolChoice) *apiError {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	var tc anthropic.ThinkingConfig
	if unmarshal(raw, &tc) != nil {
		return badRequest("", "thinking: must be an object with a type")
	}
	switch tc.Type {
	case anthropic.ThinkingEnabled:
		if tc.BudgetTokens == nil || *tc.BudgetTokens < minThinkingBudget {
			return badRequest("", "thinking.enabled.budget_tokens: an integer of at least %d is required", minThinkingBudget)
		}
	case anthropic.ThinkingAdaptive, anthropic.ThinkingDisabled:
	default:
		return badRequest("", "thinking.type: %q is not one of enabled, adaptive, disabled", tc.Type)
	}
	if tc.Type != anthropic.ThinkingDisabled && choice != nil && (choice.Type == anthropic.ToolChoiceAny || choice.Type == anthropic.ToolChoiceTool) {
		return badRequest("", "Thinking may not be enabled when tool_choice forces tool use.")
	}
	return nil
}
