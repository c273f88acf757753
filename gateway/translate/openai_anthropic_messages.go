package translate

import (
	"fmt"
	"strings"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/llmgw/llmgw/api/wire/anthropic"
	"github.com/llmgw/llmgw/api/wire/openai"
)

// antTurn is one turn of the conversation being built: its content stays
// a string while every message joined into it was a string (so that a
// plain text conversation is sent as it always was), and becomes blocks
// from the first message that needs them.
type antTurn struct {
	role     string
	text     string
	blocks   []anthropic.ContentBlock
	isBlocks bool
}

// addText joins s to the turn: to its string, or as a text block (an
// empty one is left out: the protocol rejects empty text blocks).
func (t *antTurn) addText(s string) {
	switch {
	case t.isBlocks:
		if s != "" {
			t.blocks = append(t.blocks, anthropic.TextBlock(s))
		}
	case t.text == "":
		t.text = s
	default:
		t.text += antSeparator + s
	}
}

// addBlocks appends bs to the turn, turning its string into a text block.
func (t *antTurn) addBlocks(bs []anthropic.ContentBlock) {
	if !t.isBlocks {
		t.isBlocks = true
		if t.text != "" {
			t.blocks = append(t.blocks, anthropic.TextBlock(t.text))
		}
		t.text = ""
	}
	t.blocks = append(t.blocks, bs...)
}

// antSystemPart is one text of the system prompt, and whether it came from
// an array content (then the prompt keeps it as a block of its own).
type antSystemPart struct {
	text      string
	fromParts bool
}

// antMessages splits the caller's messages into the system prompt and
// alternating turns. System and developer messages, wherever they stand,
// go to the one system prompt. A tool message becomes a tool_result block
// of a user turn, so consecutive tool messages and a user message after
// them share one turn, as the protocol wants the results of one assistant
// turn's calls. A message's name has no equivalent (the protocol has no
// per-message author) and is dropped: it is optional metadata, which
// chat-completions itself only passes to the model as a hint.
func antMessages(msgs []openai.Message) (jsontext.Value, []anthropic.Message, error) {
	var system []antSystemPart
	turns := make([]antTurn, 0, len(msgs))
	turn := func(role string) *antTurn {
		if n := len(turns); n > 0 && turns[n-1].role == role {
			return &turns[n-1]
		}
		turns = append(turns, antTurn{role: role})
		return &turns[len(turns)-1]
	}
	for i := range msgs {
		m := &msgs[i]
		switch m.Role {
		case openai.RoleSystem, openai.RoleDeveloper:
			parts, err := antSystem(m, i)
			if err != nil {
				return nil, nil, err
			}
			system = append(system, parts...)
		case openai.RoleUser:
			if err := antUser(turn(anthropic.RoleUser), m, i); err != nil {
				return nil, nil, err
			}
		case openai.RoleAssistant:
			if err := antAssistant(turn(anthropic.RoleAssistant), m, i); err != nil {
				return nil, nil, err
			}
		case openai.RoleTool:
			b, err := antToolResult(m, i)
			if err != nil {
				return nil, nil, err
			}
			turn(anthropic.RoleUser).addBlocks([]anthropic.ContentBlock{b})
		default:
			return nil, nil, &NotCarried{Param: fmt.Sprintf("messages[%d].role", i), Reason: antNoEquivalent}
		}
	}
	if len(turns) == 0 {
		// chat-completions answers a system prompt alone; this protocol
		// requires a message, and making one up would change the prompt.
		return nil, nil, &NotCarried{Param: "messages", Reason: "a conversation of only system and developer messages has no equivalent in the Anthropic Messages protocol"}
	}
	return antFinish(turns, system)
}

// antFinish encodes the turns a translator gathered as Messages messages
// (a string content, or its blocks) and the system prompt.
func antFinish(turns []antTurn, system []antSystemPart) (jsontext.Value, []anthropic.Message, error) {
	out := make([]anthropic.Message, len(turns))
	for i := range turns {
		t := &turns[i]
		out[i].Role = t.role
		if !t.isBlocks {
			out[i].Content = anthropic.Text(t.text)
			continue
		}
		v, err := antRaw(t.blocks)
		if err != nil {
			return nil, nil, err
		}
		out[i].Content = v
	}
	sys, err := antSystemValue(system)
	return sys, out, err
}

// antSystemValue is the system prompt: a string when every system message
// was one (joined as the gateway always joined them), else one text block
// per text, so that the caller's division of its parts is kept.
func antSystemValue(parts []antSystemPart) (jsontext.Value, error) {
	blocks := false
	texts := make([]string, 0, len(parts))
	for _, p := range parts {
		blocks = blocks || p.fromParts
		if p.text != "" {
			texts = append(texts, p.text)
		}
	}
	if len(texts) == 0 {
		return nil, nil
	}
	if !blocks {
		return anthropic.Text(strings.Join(texts, antSeparator)), nil
	}
	bs := make([]anthropic.ContentBlock, len(texts))
	for i, s := range texts {
		bs[i] = anthropic.TextBlock(s)
	}
	return antRaw(bs)
}

func antSystem(m *openai.Message, i int) ([]antSystemPart, error) {
	if s, ok, err := antString(m.Content, i); ok || err != nil {
		return []antSystemPart{{text: s}}, err
	}
	parts, err := antParts(m.Content, i, openai.PartText)
	if err != nil {
		return nil, err
	}
	out := make([]antSystemPart, len(parts))
	for j := range parts {
		out[j] = antSystemPart{text: antStr(parts[j].Text), fromParts: true}
	}
	return out, nil
}

func antUser(t *antTurn, m *openai.Message, i int) error {
	if s, ok, err := antString(m.Content, i); ok || err != nil {
		t.addText(s)
		return err
	}
	bs, err := antPartBlocks(m.Content, i, openai.PartText, openai.PartImage)
	if err != nil {
		return err
	}
	t.addBlocks(bs)
	return nil
}

// antAssistant adds an assistant message of the history: its text, its
// refusal as text (the protocol has no refusal block; what was said is
// what the model sees), then its tool calls as tool_use blocks.
func antAssistant(t *antTurn, m *openai.Message, i int) error {
	s, isString, err := antString(m.Content, i)
	if err != nil {
		return err
	}
	if isString && m.Refusal == nil && len(m.ToolCalls) == 0 {
		t.addText(s)
		return nil
	}
	var bs []anthropic.ContentBlock
	if isString {
		if s != "" {
			bs = append(bs, anthropic.TextBlock(s))
		}
	} else if bs, err = antPartBlocks(m.Content, i, openai.PartText, openai.PartRefusal); err != nil {
		return err
	}
	if m.Refusal != nil && *m.Refusal != "" {
		bs = append(bs, anthropic.TextBlock(*m.Refusal))
	}
	for j, c := range m.ToolCalls {
		if c.Type != "function" && c.Type != "" { // "" read leniently: a call is a function call
			return &NotCarried{Param: fmt.Sprintf("messages[%d].tool_calls[%d].type", i, j), Reason: "only function calls have an equivalent in the Anthropic Messages protocol"}
		}
		input := antEmptyInput
		if !antIsBlank(c.Function.Arguments) {
			v, ok := antObject(c.Function.Arguments)
			if !ok {
				// Sending {} would tell the model it called the function
				// without arguments, which it did not.
				return &NotCarried{Param: fmt.Sprintf("messages[%d].tool_calls[%d].function.arguments", i, j), Reason: "must be a JSON object to be carried to the Anthropic Messages protocol"}
			}
			input = v
		}
		bs = append(bs, anthropic.ContentBlock{Type: anthropic.BlockToolUse, ID: c.ID, Name: c.Function.Name, Input: input})
	}
	t.addBlocks(bs)
	return nil
}

// antToolResult is a tool message as the tool_result block answering its
// call. An empty result has no content (the protocol's form for it: it
// rejects empty text).
func antToolResult(m *openai.Message, i int) (anthropic.ContentBlock, error) {
	b := anthropic.ContentBlock{Type: anthropic.BlockToolResult, ToolUseID: m.ToolCallID}
	if m.ToolCallID == "" {
		return b, &NotCarried{Param: fmt.Sprintf("messages[%d].tool_call_id", i), Reason: "is required"}
	}
	if s, ok, err := antString(m.Content, i); ok || err != nil {
		if s != "" {
			b.Content = anthropic.Text(s)
		}
		return b, err
	}
	bs, err := antPartBlocks(m.Content, i, openai.PartText, openai.PartImage)
	if err != nil || len(bs) == 0 {
		return b, err
	}
	b.Content, err = antRaw(bs)
	return b, err
}

// antString reads a content in its string form; ok is false when it is an
// array. No content, or null (an assistant message that only calls
// tools), reads as "".
func antString(v jsontext.Value, i int) (s string, ok bool, err error) {
	switch v.Kind() {
	case 0, 'n':
		return "", true, nil
	case '"':
		if err := json.Unmarshal(v, &s); err != nil {
			return "", true, antDecodeError(err, fmt.Sprintf("messages[%d].content", i))
		}
		return s, true, nil
	case '[':
		return "", false, nil
	}
	return "", true, &NotCarried{Param: fmt.Sprintf("messages[%d].content", i), Reason: "must be a string or an array of content parts"}
}

// antParts reads an array content whose parts are of the types allowed.
func antParts(v jsontext.Value, i int, allowed ...string) ([]openai.ContentPart, error) {
	var parts []openai.ContentPart
	err := json.Unmarshal(v, &parts, antStrict)
	if err != nil {
		// A part of a type this pair does not carry has members named after
		// its type: name the type, not the member.
		var lax []openai.ContentPart
		if json.Unmarshal(v, &lax) == nil {
			if err := antPartTypes(lax, i, allowed); err != nil {
				return nil, err
			}
		}
		return nil, antDecodeError(err, fmt.Sprintf("messages[%d].content", i))
	}
	return parts, antPartTypes(parts, i, allowed)
}

func antPartTypes(parts []openai.ContentPart, i int, allowed []string) error {
	for j := range parts {
		ok := false
		for _, a := range allowed {
			ok = ok || parts[j].Type == a
		}
		if !ok {
			return &NotCarried{Param: fmt.Sprintf("messages[%d].content[%d].type", i, j), Reason: antNoEquivalent + " in this role's message"}
		}
	}
	return nil
}

// antPartBlocks is an array content as content blocks. Empty texts are
// left out: the protocol rejects empty text blocks.
func antPartBlocks(v jsontext.Value, i int, allowed ...string) ([]anthropic.ContentBlock, error) {
	parts, err := antParts(v, i, allowed...)
	if err != nil {
		return nil, err
	}
	bs := make([]anthropic.ContentBlock, 0, len(parts))
	for j := range parts {
		p := &parts[j]
		switch p.Type {
		case openai.PartText:
			if s := antStr(p.Text); s != "" {
				bs = append(bs, anthropic.TextBlock(s))
			}
		case openai.PartRefusal:
			if s := antStr(p.Refusal); s != "" {
				bs = append(bs, anthropic.TextBlock(s))
			}
		case openai.PartImage:
			src, err := antImage(p.ImageURL, i, j)
			if err != nil {
				return nil, err
			}
			bs = append(bs, anthropic.ContentBlock{Type: anthropic.BlockImage, Source: src})
		}
	}
	return bs, nil
}

// antImage is an image part's source: a base64 data URL of a media type
// the protocol accepts, or an http(s) URL the provider fetches. detail
// (the resolution OpenAI reads the image at) has no equivalent and is
// dropped: it changes the cost, not what the image is.
func antImage(u *openai.ImageURL, i, j int) (*anthropic.ImageSource, error) {
	param := fmt.Sprintf("messages[%d].content[%d].image_url", i, j)
	if u == nil {
		return nil, &NotCarried{Param: param, Reason: "is required"}
	}
	url := u.URL
	if rest, ok := antCutPrefixFold(url, "data:"); ok {
		mediaType, data, ok := strings.Cut(rest, ";base64,")
		if !ok {
			return nil, &NotCarried{Param: param + ".url", Reason: "only base64 data URLs have an equivalent in the Anthropic Messages protocol"}
		}
		mediaType = strings.ToLower(mediaType)
		if !antImageTypes[mediaType] {
			return nil, &NotCarried{Param: param + ".url", Reason: "only image/jpeg, image/png, image/gif and image/webp images have an equivalent in the Anthropic Messages protocol"}
		}
		return &anthropic.ImageSource{Type: anthropic.SourceBase64, MediaType: mediaType, Data: data}, nil
	}
	if _, ok := antCutPrefixFold(url, "https://"); ok {
		return &anthropic.ImageSource{Type: anthropic.SourceURL, URL: url}, nil
	}
	if _, ok := antCutPrefixFold(url, "http://"); ok {
		return &anthropic.ImageSource{Type: anthropic.SourceURL, URL: url}, nil
	}
	return nil, &NotCarried{Param: param + ".url", Reason: "must be an http(s) URL or a base64 data URL"}
}

// antCutPrefixFold is strings.CutPrefix ignoring ASCII case (URL schemes
// are case-insensitive).
func antCutPrefixFold(s, prefix string) (string, bool) {
	if len(s) < len(prefix) || !strings.EqualFold(s[:len(prefix)], prefix) {
		return s, false
	}
	return s[len(prefix):], true
}

func antStr(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// antRaw is blocks as the raw JSON a message's content holds.
func antRaw(bs []anthropic.ContentBlock) (jsontext.Value, error) {
	if bs == nil {
		bs = []anthropic.ContentBlock{}
	}
	b, err := json.Marshal(bs)
	if err != nil {
		return nil, fmt.Errorf("translate: encode Anthropic content blocks: %w", err)
	}
	return b, nil
}
