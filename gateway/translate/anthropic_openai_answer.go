package translate

import (
	"bytes"
	"strings"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/llmgw/llmgw/api/wire/anthropic"
	"github.com/llmgw/llmgw/api/wire/openai"
)

// chatAnswerIn is a 2xx chat-completions answer: a chat.completion, or an
// error object some servers send with status 200.
type chatAnswerIn struct {
	Choices []openai.Choice `json:"choices"`
	Usage   *openai.Usage   `json:"usage"`
	Error   jsontext.Value  `json:"error"`
}

// readChatAnswer reads a chat.completion with at least one choice, or the
// Failure of an error sent with a 2xx status, or malformed.
func readChatAnswer(raw []byte) (*chatAnswerIn, error) {
	var r chatAnswerIn
	if err := json.Unmarshal(raw, &r, lenient); err != nil {
		return nil, malformed("malformed answer JSON")
	}
	if len(r.Error) > 0 && r.Error.Kind() != 'n' {
		return nil, upstreamError(r.Error)
	}
	if len(r.Choices) == 0 {
		return nil, malformed("response has no choices")
	}
	return &r, nil
}

// Answer is the Messages answer for a chat.completion: the first choice's
// content and refusal as text blocks (the protocol has no refusal block;
// its stop_reason says it), its tool calls as tool_use blocks.
func (anthropicToOpenAI) Answer(raw []byte, m *Meta) (*Answer, error) {
	r, err := readChatAnswer(raw)
	if err != nil {
		return nil, err
	}
	c := &r.Choices[0]
	var said strings.Builder
	content := []anthropic.ContentBlock{}
	for _, s := range []*string{c.Message.Content, c.Message.Refusal} {
		if s != nil && *s != "" {
			content = append(content, anthropic.TextBlock(*s))
			said.WriteString(*s)
		}
	}
	for _, tc := range c.Message.ToolCalls {
		input, err := aoInputObject(tc.Function.Arguments)
		if err != nil {
			return nil, err
		}
		content = append(content, anthropic.ContentBlock{Type: anthropic.BlockToolUse, ID: tc.ID, Name: tc.Function.Name, Input: input})
		said.WriteString(tc.Function.Arguments)
	}
	stop := aoStopReason(c.FinishReason)
	msg := &anthropic.MessageResponse{
		ID: m.ID, Type: anthropic.TypeMessage, Role: anthropic.RoleAssistant, Model: m.Alias,
		Content: content, StopReason: &stop,
	}
	a := &Answer{FinishReason: c.FinishReason}
	if r.Usage != nil {
		a.Usage = oaiUsage(r.Usage)
		msg.Usage = aoUsageJSON(a.Usage)
	} else {
		// The protocol's answer always has a usage, which clients read:
		// zeros, as the provider reported none (the gateway counts Text).
		msg.Usage = aoUsageJSON(&Usage{})
		a.Text = said.String()
	}
	a.Body = append(appendJSON(make([]byte, 0, 512+said.Len()), msg), '\n')
	return a, nil
}

// aoUsageJSON is u in the protocol's shape: input_tokens without the
// cached tokens, which are cache reads; chat-completions reports no cache
// writes.
func aoUsageJSON(u *Usage) *anthropic.Usage {
	in, cached := aoInput(u)
	return &anthropic.Usage{InputTokens: &in, CacheCreationInputTokens: new(0), CacheReadInputTokens: &cached, OutputTokens: new(u.OutputTokens)}
}

// aoInputObject is a tool call's arguments as a tool_use input, which the
// protocol requires to be an object: empty arguments are no arguments,
// arguments that are not one JSON object make the answer unreadable, as
// do arguments that name a member twice (which of the two the caller's
// decoder would keep is not known). Invalid UTF-8 is tolerated as in the
// rest of the answer, and replaced when written.
func aoInputObject(args string) (jsontext.Value, error) {
	v := jsontext.Value(bytes.TrimSpace([]byte(args)))
	if len(v) == 0 {
		return jsontext.Value("{}"), nil
	}
	utf8 := jsontext.AllowInvalidUTF8(true)
	if v.Kind() != '{' || !v.IsValid(utf8) || v.Compact(utf8) != nil {
		return nil, malformed("tool call arguments are not a JSON object")
	}
	return v, nil
}
