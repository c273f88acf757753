package translate

import (
	"strings"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/llmgw/llmgw/api/wire/anthropic"
	"github.com/llmgw/llmgw/api/wire/openai"
)

// antAnswerIn is a 2xx answer: a message, or an error envelope some
// servers send with status 200.
type antAnswerIn struct {
	anthropic.MessageResponse
	Error *anthropic.ErrorDetail `json:"error"`
}

// readAntAnswer reads an Anthropic Messages answer: a message, or the
// Failure of an error sent with a 2xx status, or malformed.
func readAntAnswer(raw []byte) (*antAnswerIn, error) {
	var r antAnswerIn
	if err := json.Unmarshal(raw, &r, lenient); err != nil {
		return nil, malformed("malformed answer JSON")
	}
	if r.Type == anthropic.TypeError || r.Error != nil {
		var d anthropic.ErrorDetail
		if r.Error != nil {
			d = *r.Error
		}
		if d.Message == "" {
			d.Message = "error in a 2xx answer"
		}
		return nil, &Failure{Type: d.Type, Message: d.Message}
	}
	if r.Type != anthropic.TypeMessage && r.Content == nil {
		return nil, malformed("answer is not a message")
	}
	return &r, nil
}

func (antPair) Answer(raw []byte, m *Meta) (*Answer, error) {
	r, err := readAntAnswer(raw)
	if err != nil {
		return nil, err
	}

	// Text blocks are the content; tool_use blocks the tool calls.
	// thinking and redacted_thinking blocks are dropped: chat-completions
	// has no standard member for them, and a caller of this API did not ask
	// for them. Blocks of other types (server tools' results) have no
	// equivalent either.
	var text, said strings.Builder
	hasText := false
	var calls []openai.ToolCall
	for i := range r.Content {
		b := &r.Content[i]
		switch b.Type {
		case anthropic.BlockText:
			hasText = true
			text.WriteString(b.TextOf())
		case anthropic.BlockToolUse:
			args, err := antArguments(b.Input)
			if err != nil {
				return nil, err
			}
			calls = append(calls, openai.ToolCall{ID: b.ID, Type: "function", Function: openai.FunctionCall{Name: b.Name, Arguments: args}})
			said.WriteString(args)
		}
	}
	msg := openai.ResponseMessage{Role: openai.RoleAssistant, ToolCalls: calls}
	if hasText || len(calls) == 0 {
		// An answer without tool calls has a content, "" if it said
		// nothing, as OpenAI's do; one that only calls tools has null.
		s := text.String()
		msg.Content = &s
	}
	c := &openai.ChatCompletion{
		ID: m.ID, Object: openai.ObjectCompletion, Created: m.Created, Model: m.Alias,
		Choices: []openai.Choice{{Message: msg, FinishReason: antFinishReason(antDeref(r.StopReason))}},
	}
	a := &Answer{FinishReason: antDeref(r.StopReason)}
	if in, cached, ok := antInput(r.Usage); ok && r.Usage.OutputTokens != nil {
		// Both counts or none: half of them would bill a guess as the
		// provider's number.
		a.Usage = &Usage{InputTokens: in, CachedInputTokens: cached, OutputTokens: *r.Usage.OutputTokens}
		c.Usage = antChatUsage(a.Usage)
	} else {
		a.Text = text.String() + said.String()
	}
	a.Body = append(antAppendAnswer(make([]byte, 0, 512+text.Len()+said.Len()), c), '\n')
	return a, nil
}

// antArguments is a tool_use input as chat-completions' arguments: the
// object as compact JSON text ({} when the block has none).
func antArguments(input jsontext.Value) (string, error) {
	if len(input) == 0 || input.Kind() == 'n' {
		return "{}", nil
	}
	v := input.Clone()
	if err := v.Compact(); err != nil {
		return "", malformed("malformed tool_use input")
	}
	return string(v), nil
}

func antDeref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
