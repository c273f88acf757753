package translate

import (
	"fmt"
	"strings"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/llmgw/llmgw/api/wire/anthropic"
	"github.com/llmgw/llmgw/api/wire/openai"
)

// responsesToAnthropic carries a Responses request to a provider of the
// Anthropic Messages protocol, and its JSON answer and events back as a
// Responses answer and events: the request here (what is dropped and not
// carried is listed in responses_read.go), the answer in _answer.go, the
// stream in _stream.go, whose events responses_stream.go writes.
//
// Carried: instructions, then the system and developer messages (wherever
// they stand), as the one system prompt; input (a string as a user
// message; message items as user and assistant turns, consecutive ones of
// a role joined; input_image parts as image blocks, base64 data URLs as
// base64 sources, http(s) URLs as url sources; function_call and
// custom_tool_call items as tool_use blocks; their outputs as tool_result
// blocks, images included); function tools as client tools (parameters as
// input_schema); custom tools as client tools taking one string, input;
// tool_choice (required as any, a named tool as tool);
// parallel_tool_calls false as disable_parallel_tool_use;
// text.format json_schema as output_config.format; max_output_tokens as
// max_tokens (antDefaultMaxTokens when the caller set none: the protocol
// requires it); temperature (clamped to 0..1); top_p; stream.
//
// Refused besides what responses_read.go lists: text.format json_object
// (the protocol cannot ask for JSON without a schema), images in system
// messages, images of another type than JPEG, PNG, GIF and WebP, function
// call arguments in the history that are not a JSON object, and a
// conversation of only system messages.
//
// A pair is made for one request: Request records what the answer echoes.
type responsesToAnthropic struct{ echo rsEcho }

func (p *responsesToAnthropic) Request(req *ChatRequest, model string) ([][]byte, error) {
	rq, err := rsRead(req.Body)
	if err != nil {
		return nil, err
	}
	mr, err := rsAntRequest(rq, model, req.Stream)
	if err != nil {
		return nil, err
	}
	b, err := json.Marshal(mr)
	if err != nil {
		return nil, fmt.Errorf("translate: encode the Anthropic request: %w", err)
	}
	p.echo = rq.echo
	return antShareImages(b, req.Body), nil
}

func (p *responsesToAnthropic) Stream(m *Meta) ChatStream {
	return &rsAntStream{w: newRSWriter(m, &p.echo, true)}
}

// rsAntRequest is the Messages request for rq.
func rsAntRequest(rq *rsRequest, model string, stream bool) (*anthropic.MessagesRequest, error) {
	r := rq.r
	out := &anthropic.MessagesRequest{Model: model, Stream: stream, TopP: r.TopP}
	maxTokens := antDefaultMaxTokens
	if r.MaxOutputTokens != nil {
		maxTokens = *r.MaxOutputTokens
	}
	out.MaxTokens = &maxTokens
	if t := r.Temperature; t != nil {
		// The Responses API accepts 0..2, this protocol 0..1: clamp rather
		// than have the provider reject a request valid for the caller.
		c := min(max(*t, 0), 1)
		out.Temperature = &c
	}
	var err error
	if out.System, out.Messages, err = rsAntMessages(rq); err != nil {
		return nil, err
	}
	for _, t := range rq.tools {
		out.Tools = append(out.Tools, anthropic.Tool{Name: t.name, Description: t.description, InputSchema: t.schema})
	}
	if len(out.Tools) > 0 {
		out.ToolChoice = rsAntToolChoice(rq.choice)
		if r.ParallelToolCalls != nil && !*r.ParallelToolCalls {
			if out.ToolChoice == nil {
				out.ToolChoice = &anthropic.ToolChoice{Type: anthropic.ToolChoiceAuto}
			}
			if out.ToolChoice.Type != anthropic.ToolChoiceNone { // "none" takes no such member
				out.ToolChoice.DisableParallelToolUse = new(true)
			}
		}
	}
	if f := rq.format; f != nil {
		if f.Type != "json_schema" {
			return nil, &NotCarried{Param: "text.format.type", Reason: "only text and json_schema have an equivalent in the Anthropic Messages protocol"}
		}
		out.OutputConfig = &anthropic.OutputConfig{Format: &anthropic.OutputFormat{Type: "json_schema", Schema: f.Schema}}
	}
	return out, nil
}

func rsAntToolChoice(c rsChoice) *anthropic.ToolChoice {
	switch c.mode {
	case openai.ToolChoiceAuto:
		return &anthropic.ToolChoice{Type: anthropic.ToolChoiceAuto}
	case openai.ToolChoiceRequired:
		return &anthropic.ToolChoice{Type: anthropic.ToolChoiceAny}
	case openai.ToolChoiceNone:
		return &anthropic.ToolChoice{Type: anthropic.ToolChoiceNone}
	case rsChoiceNamed:
		return &anthropic.ToolChoice{Type: anthropic.ToolChoiceTool, Name: c.name}
	}
	return nil
}

// rsAntMessages is the system prompt and the turns. A tool call is a
// tool_use block of an assistant turn, its output a tool_result block of a
// user turn: consecutive calls, and their outputs, share a turn, as the
// protocol wants the results of one assistant turn's calls.
func rsAntMessages(rq *rsRequest) (jsontext.Value, []anthropic.Message, error) {
	var system []antSystemPart
	if rq.system != "" {
		system = append(system, antSystemPart{text: rq.system})
	}
	turns := make([]antTurn, 0, len(rq.msgs))
	turn := func(role string) *antTurn {
		if n := len(turns); n > 0 && turns[n-1].role == role {
			return &turns[n-1]
		}
		turns = append(turns, antTurn{role: role})
		return &turns[len(turns)-1]
	}
	for i := range rq.msgs {
		m := &rq.msgs[i]
		switch {
		case m.role == rsRoleSystem:
			for _, p := range m.parts {
				if p.image {
					return nil, nil, &NotCarried{Param: p.param, Reason: "an image in a system message has no equivalent in the Anthropic Messages protocol"}
				}
				system = append(system, antSystemPart{text: p.text, fromParts: !m.str})
			}
		case m.call != nil:
			b, err := rsAntToolUse(m)
			if err != nil {
				return nil, nil, err
			}
			turn(anthropic.RoleAssistant).addBlocks([]anthropic.ContentBlock{b})
		case m.role == rsRoleTool:
			b, err := rsAntToolResult(m)
			if err != nil {
				return nil, nil, err
			}
			turn(anthropic.RoleUser).addBlocks([]anthropic.ContentBlock{b})
		default: // user, assistant
			t := turn(m.role)
			if m.str {
				t.addText(m.parts[0].text)
				continue
			}
			bs, err := rsAntBlocks(m.parts)
			if err != nil {
				return nil, nil, err
			}
			t.addBlocks(bs)
		}
	}
	if len(turns) == 0 {
		return nil, nil, &NotCarried{Param: "input", Reason: "a conversation of only system and developer messages has no equivalent in the Anthropic Messages protocol"}
	}
	return antFinish(turns, system)
}

// rsAntToolUse is a tool call as a tool_use block: its arguments must be
// one JSON object (the protocol's input), or blank (no arguments).
func rsAntToolUse(m *rsMsg) (anthropic.ContentBlock, error) {
	input := antEmptyInput
	if !antIsBlank(m.call.args) {
		v, ok := antObject(m.call.args)
		if !ok {
			// Sending {} would tell the model it called the function
			// without arguments, which it did not.
			return anthropic.ContentBlock{}, &NotCarried{Param: m.param + ".arguments", Reason: "must be a JSON object to be carried to the Anthropic Messages protocol"}
		}
		input = v
	}
	return anthropic.ContentBlock{Type: anthropic.BlockToolUse, ID: m.call.id, Name: m.call.name, Input: input}, nil
}

// rsAntToolResult is a tool output as the tool_result block answering its
// call: a string as it is (none when empty: the protocol rejects empty
// text), parts as text and image blocks.
func rsAntToolResult(m *rsMsg) (anthropic.ContentBlock, error) {
	b := anthropic.ContentBlock{Type: anthropic.BlockToolResult, ToolUseID: m.callID}
	if m.str {
		if s := m.parts[0].text; s != "" {
			b.Content = anthropic.Text(s)
		}
		return b, nil
	}
	bs, err := rsAntBlocks(m.parts)
	if err != nil || len(bs) == 0 {
		return b, err
	}
	b.Content, err = antRaw(bs)
	return b, err
}

// rsAntBlocks is parts as text and image blocks; empty texts are left out
// (the protocol rejects empty text blocks), a refusal is text.
func rsAntBlocks(parts []rsPart) ([]anthropic.ContentBlock, error) {
	bs := make([]anthropic.ContentBlock, 0, len(parts))
	for i := range parts {
		p := &parts[i]
		if !p.image {
			if p.text != "" {
				bs = append(bs, anthropic.TextBlock(p.text))
			}
			continue
		}
		src, err := rsAntImage(p)
		if err != nil {
			return nil, err
		}
		bs = append(bs, anthropic.ContentBlock{Type: anthropic.BlockImage, Source: src})
	}
	return bs, nil
}

// rsAntImage is an input_image's source: a base64 data URL of a media
// type the protocol accepts, or an http(s) URL the provider fetches.
// detail has no equivalent and is dropped: it changes the cost, not what
// the image is.
func rsAntImage(p *rsPart) (*anthropic.ImageSource, error) {
	param := p.param + ".image_url"
	if rest, ok := antCutPrefixFold(p.url, "data:"); ok {
		mediaType, data, ok := strings.Cut(rest, ";base64,")
		if !ok {
			return nil, &NotCarried{Param: param, Reason: "only base64 data URLs have an equivalent in the Anthropic Messages protocol"}
		}
		mediaType = strings.ToLower(mediaType)
		if !antImageTypes[mediaType] {
			return nil, &NotCarried{Param: param, Reason: "only image/jpeg, image/png, image/gif and image/webp images have an equivalent in the Anthropic Messages protocol"}
		}
		return &anthropic.ImageSource{Type: anthropic.SourceBase64, MediaType: mediaType, Data: data}, nil
	}
	for _, scheme := range []string{"https://", "http://"} {
		if _, ok := antCutPrefixFold(p.url, scheme); ok {
			return &anthropic.ImageSource{Type: anthropic.SourceURL, URL: p.url}, nil
		}
	}
	return nil, &NotCarried{Param: param, Reason: "must be an http(s) URL or a base64 data URL"}
}
