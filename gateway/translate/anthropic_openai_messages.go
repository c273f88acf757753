package translate

import (
	"fmt"
	"strings"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/llmgw/llmgw/api/wire/anthropic"
	"github.com/llmgw/llmgw/api/wire/openai"
)

// aoRoleSystem is a message role the Anthropic API accepts inside messages
// from some clients (Claude Code sends them): a system message at that
// place of the conversation.
const aoRoleSystem = "system"

// aoToolErrorPrefix starts the content of a tool message whose result
// reported an error (is_error): chat-completions has no member for it, and
// the model should still know the call failed.
const aoToolErrorPrefix = "Error: "

// aoToolResultSeparator joins the text blocks of a tool result into the
// tool message's one string.
const aoToolResultSeparator = "\n\n"

// aoBlockTypes are the block types a content may hold, by its place (the
// role of its message, or a tool result's content); those not listed in
// any place are not carried. Images in a tool result are not: a tool
// message holds text.
var aoBlockTypes = map[string]map[string]bool{
	anthropic.RoleUser: {
		anthropic.BlockText: true, anthropic.BlockImage: true, anthropic.BlockToolResult: true,
		anthropic.BlockThinking: true, anthropic.BlockRedacted: true,
	},
	anthropic.RoleAssistant: {
		anthropic.BlockText: true, anthropic.BlockToolUse: true,
		anthropic.BlockThinking: true, anthropic.BlockRedacted: true,
	},
	aoRoleSystem:     {anthropic.BlockText: true},
	aoToolResultText: {anthropic.BlockText: true},
}

// aoToolResultText is the place of a tool_result's content in aoBlockTypes.
const aoToolResultText = "tool_result"

// aoMessages is the conversation as chat messages: the system prompt
// first, then each message in order. A user message's tool_result blocks
// become tool messages, placed where chat-completions wants the results
// of the assistant's calls: right after the message that made them,
// before the rest of the user's turn. The protocol joins consecutive user
// messages into one turn, so the tool results of all of them come first.
func aoMessages(system jsontext.Value, msgs []anthropic.Message) ([]openai.Message, error) {
	out := make([]openai.Message, 0, len(msgs)+1)
	if sys, ok, err := aoSystem(system, "system"); err != nil {
		return nil, err
	} else if ok {
		out = append(out, sys)
	}
	// The user turn being read: its tool messages, then its other ones.
	var results, rest []openai.Message
	for i := range msgs {
		m := &msgs[i]
		param := fmt.Sprintf("messages[%d]", i)
		if m.Role != anthropic.RoleUser && len(results)+len(rest) > 0 {
			out = append(append(out, results...), rest...)
			results, rest = results[:0], rest[:0]
		}
		var err error
		switch m.Role {
		case aoRoleSystem:
			var sys openai.Message
			var ok bool
			if sys, ok, err = aoSystem(m.Content, param+".content"); ok {
				out = append(out, sys)
			}
		case anthropic.RoleUser:
			results, rest, err = aoUser(results, rest, m.Content, param+".content")
		case anthropic.RoleAssistant:
			var a openai.Message
			if a, err = aoAssistant(m.Content, param+".content"); err == nil {
				out = append(out, a)
			}
		default:
			err = &NotCarried{Param: param + ".role", Reason: "must be user, assistant or system"}
		}
		if err != nil {
			return nil, err
		}
	}
	return append(append(out, results...), rest...), nil
}

// aoSystem is a system prompt (a string or text blocks) as a system
// message: a string stays a string; blocks become text parts, so that
// the caller's division of its prompt is kept. ok is false when there is
// no prompt (absent, null, "" or no blocks).
func aoSystem(v jsontext.Value, param string) (openai.Message, bool, error) {
	m := openai.Message{Role: openai.RoleSystem}
	s, isString, err := aoString(v, param)
	if err != nil || isString {
		m.Content = openai.Text(s)
		return m, err == nil && s != "", err
	}
	blocks, err := aoBlocks(v, param, aoRoleSystem)
	if err != nil || len(blocks) == 0 {
		return m, false, err
	}
	parts := make([]openai.ContentPart, len(blocks))
	for i := range blocks {
		parts[i] = aoTextPart(blocks[i].TextOf())
	}
	m.Content, err = aoRaw(parts)
	return m, err == nil, err
}

// aoUser reads a user message: its tool results as tool messages,
// appended to results, and the rest of its content (text and images as
// content parts; a string as it is) as a user message, appended to rest
// if there is any.
func aoUser(results, rest []openai.Message, v jsontext.Value, param string) ([]openai.Message, []openai.Message, error) {
	s, isString, err := aoString(v, param)
	if err != nil {
		return nil, nil, err
	}
	if isString {
		return results, append(rest, openai.Message{Role: openai.RoleUser, Content: openai.Text(s)}), nil
	}
	blocks, err := aoBlocks(v, param, anthropic.RoleUser)
	if err != nil {
		return nil, nil, err
	}
	var parts []openai.ContentPart
	hadResults := false
	for j := range blocks {
		b := &blocks[j]
		bp := fmt.Sprintf("%s[%d]", param, j)
		switch b.Type {
		case anthropic.BlockText:
			parts = append(parts, aoTextPart(b.TextOf()))
		case anthropic.BlockImage:
			p, err := aoImage(b.Source, bp+".source")
			if err != nil {
				return nil, nil, err
			}
			parts = append(parts, p)
		case anthropic.BlockToolResult:
			t, err := aoToolResult(b, bp)
			if err != nil {
				return nil, nil, err
			}
			results = append(results, t)
			hadResults = true
		}
	}
	switch {
	case len(parts) > 0:
		c, err := aoRaw(parts)
		if err != nil {
			return nil, nil, err
		}
		rest = append(rest, openai.Message{Role: openai.RoleUser, Content: c})
	case !hadResults:
		// No content at all (or only thinking, dropped): an empty turn
		// still holds its place between the assistant's.
		rest = append(rest, openai.Message{Role: openai.RoleUser, Content: openai.Text("")})
	}
	return results, rest, nil
}

// aoAssistant is an assistant message of the history: its texts as the
// content, joined as they were written (text blocks of one answer are
// pieces of one text, split where a citation starts), and its tool_use
// blocks as tool calls. Thinking is dropped: chat-completions has no
// member to send it back in.
func aoAssistant(v jsontext.Value, param string) (openai.Message, error) {
	m := openai.Message{Role: openai.RoleAssistant}
	s, isString, err := aoString(v, param)
	if err != nil || isString {
		m.Content = openai.Text(s)
		return m, err
	}
	blocks, err := aoBlocks(v, param, anthropic.RoleAssistant)
	if err != nil {
		return m, err
	}
	var text strings.Builder
	hasText := false
	for j := range blocks {
		b := &blocks[j]
		switch b.Type {
		case anthropic.BlockText:
			hasText = true
			text.WriteString(b.TextOf())
		case anthropic.BlockToolUse:
			args, err := aoArguments(b.Input, fmt.Sprintf("%s[%d].input", param, j))
			if err != nil {
				return m, err
			}
			m.ToolCalls = append(m.ToolCalls, openai.ToolCall{ID: b.ID, Type: "function", Function: openai.FunctionCall{Name: b.Name, Arguments: args}})
		}
	}
	switch {
	case hasText || len(m.ToolCalls) == 0:
		m.Content = openai.Text(text.String())
	default:
		// Only calls: null, as OpenAI writes such a message.
		m.Content = jsontext.Value("null")
	}
	return m, nil
}

// aoArguments is a tool_use input as a function call's arguments: the
// object as compact JSON text ({} when the block has none).
func aoArguments(input jsontext.Value, param string) (string, error) {
	if len(input) == 0 || input.Kind() == 'n' {
		return "{}", nil
	}
	if input.Kind() != '{' {
		return "", &NotCarried{Param: param, Reason: "must be a JSON object"}
	}
	v := input.Clone()
	if err := v.Compact(); err != nil {
		return "", &NotCarried{Param: param, Reason: "is not valid JSON"}
	}
	return string(v), nil
}

// aoToolResult is a tool_result block as the tool message answering its
// call: its content a string, its text blocks joined, an error result's
// text after aoToolErrorPrefix.
func aoToolResult(b *anthropic.ContentBlock, param string) (openai.Message, error) {
	m := openai.Message{Role: openai.RoleTool, ToolCallID: b.ToolUseID}
	if b.ToolUseID == "" {
		return m, &NotCarried{Param: param + ".tool_use_id", Reason: "is required"}
	}
	param += ".content"
	text, isString, err := aoString(b.Content, param)
	if err != nil {
		return m, err
	}
	if !isString {
		blocks, err := aoBlocks(b.Content, param, aoToolResultText)
		if err != nil {
			return m, err
		}
		texts := make([]string, len(blocks))
		for k := range blocks {
			texts[k] = blocks[k].TextOf()
		}
		text = strings.Join(texts, aoToolResultSeparator)
	}
	if b.IsError != nil && *b.IsError {
		text = aoToolErrorPrefix + text
	}
	m.Content = openai.Text(text)
	return m, nil
}

// aoImage is an image block's source as an image_url part: base64 data as
// a data URL, a URL as it is. A file source names a file uploaded to the
// provider, which an OpenAI provider cannot read.
func aoImage(src *anthropic.ImageSource, param string) (openai.ContentPart, error) {
	if src == nil {
		return openai.ContentPart{}, &NotCarried{Param: param, Reason: "is required"}
	}
	var url string
	switch src.Type {
	case anthropic.SourceBase64:
		url = "data:" + src.MediaType + ";base64," + src.Data
	case anthropic.SourceURL:
		url = src.URL
	default:
		return openai.ContentPart{}, &NotCarried{Param: param + ".type", Reason: "only base64 and url image sources have an equivalent in the OpenAI chat-completions protocol"}
	}
	return openai.ContentPart{Type: openai.PartImage, ImageURL: &openai.ImageURL{URL: url}}, nil
}

// aoString reads a content in its string form; isString is false when it
// is an array. No content, or null, reads as "".
func aoString(v jsontext.Value, param string) (s string, isString bool, err error) {
	switch v.Kind() {
	case 0, 'n':
		return "", true, nil
	case '"':
		if err := json.Unmarshal(v, &s); err != nil {
			return "", true, aoDecodeError(err, param)
		}
		return s, true, nil
	case '[':
		return "", false, nil
	}
	return "", true, &NotCarried{Param: param, Reason: "must be a string or an array of content blocks"}
}

// aoBlocks reads an array content whose blocks are of the types its place
// may hold, leaving out the thinking blocks (dropped). Their
// members are read strictly: one this pair does not know is refused by
// name, unless the block's type is (a block of another type has members
// named after its type, which are not the caller's mistake).
func aoBlocks(v jsontext.Value, param, place string) ([]anthropic.ContentBlock, error) {
	allowed := aoBlockTypes[place]
	var blocks []anthropic.ContentBlock
	if err := json.Unmarshal(v, &blocks, aoStrict); err != nil {
		var lax []anthropic.TypeOnly
		if json.Unmarshal(v, &lax) == nil {
			for j := range lax {
				if !allowed[lax[j].Type] {
					return nil, aoBlockType(param, j, lax[j].Type)
				}
			}
		}
		return nil, aoDecodeError(err, param)
	}
	kept := blocks[:0]
	for j := range blocks {
		switch t := blocks[j].Type; {
		case !allowed[t]:
			return nil, aoBlockType(param, j, t)
		case t == anthropic.BlockThinking || t == anthropic.BlockRedacted:
		default:
			kept = append(kept, blocks[j])
		}
	}
	return kept, nil
}

// aoBlockType refuses the block at j of a content: a type no message has
// an equivalent for, or one this place does not take.
func aoBlockType(param string, j int, typ string) *NotCarried {
	reason := aoNoEquivalent
	for _, types := range aoBlockTypes {
		if types[typ] {
			reason += " in this place"
			break
		}
	}
	return &NotCarried{Param: fmt.Sprintf("%s[%d].type", param, j), Reason: reason}
}

func aoTextPart(s string) openai.ContentPart {
	return openai.ContentPart{Type: openai.PartText, Text: &s}
}

// aoRaw is parts as the raw JSON a message's content holds.
func aoRaw(parts []openai.ContentPart) (jsontext.Value, error) {
	b, err := json.Marshal(parts)
	if err != nil {
		return nil, fmt.Errorf("translate: encode content parts: %w", err)
	}
	return b, nil
}
