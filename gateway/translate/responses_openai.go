package translate

import (
	"fmt"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/llmgw/llmgw/api/wire/openai"
)

// responsesToOpenAI carries a Responses request to a provider's
// chat-completions endpoint, and its JSON answer and chunks back as a
// Responses answer and events: the request here (what is dropped and not
// carried is listed in responses_read.go), the answer in _answer.go, the
// stream in _stream.go, whose events responses_stream.go writes.
//
// Carried: instructions as the first system message; input (a string as
// a user message; message items as messages, developer ones as system
// messages; input_image parts as image_url parts; function_call and
// custom_tool_call items as the tool calls of an assistant message, the
// consecutive ones in one; their outputs as tool messages); function tools
// as functions; custom tools as functions of one string, input;
// tool_choice; parallel_tool_calls false; text.format (json_schema,
// json_object) as response_format; max_output_tokens as
// max_completion_tokens; temperature; top_p; stream, with
// stream_options.include_usage.
//
// Refused besides what responses_read.go lists: images in system messages,
// in assistant messages and in tool outputs (chat-completions holds text
// there).
//
// A pair is made for one request: Request records what the answer echoes.
type responsesToOpenAI struct{ echo rsEcho }

// rsChatNoImage is the reason an image where chat-completions holds text
// only is refused.
const rsChatNoImage = "an image here has no equivalent in the OpenAI chat-completions protocol (text only)"

func (p *responsesToOpenAI) Request(req *ChatRequest, model string) ([][]byte, error) {
	rq, err := rsRead(req.Body)
	if err != nil {
		return nil, err
	}
	cr, err := rsChatRequest(rq, model, req.Stream)
	if err != nil {
		return nil, err
	}
	b, err := json.Marshal(cr)
	if err != nil {
		return nil, fmt.Errorf("translate: encode the chat-completions request: %w", err)
	}
	p.echo = rq.echo
	return aoShareImages(b, req.Body), nil
}

func (p *responsesToOpenAI) Stream(m *Meta) ChatStream {
	return &rsChatStream{w: newRSWriter(m, &p.echo, true)}
}

// rsChatRequest is the chat-completions request for rq.
func rsChatRequest(rq *rsRequest, model string, stream bool) (*openai.ChatCompletionRequest, error) {
	r := rq.r
	out := &openai.ChatCompletionRequest{Model: model, MaxCompletionTokens: r.MaxOutputTokens, Temperature: r.Temperature, TopP: r.TopP}
	if stream {
		// The gateway bills the provider's counts, which a chat stream
		// reports only when asked.
		out.Stream = new(true)
		out.StreamOptions = &openai.StreamOptions{IncludeUsage: new(true)}
	}
	var err error
	if out.Messages, err = rsChatMessages(rq); err != nil {
		return nil, err
	}
	for _, t := range rq.tools {
		out.Tools = append(out.Tools, openai.Tool{Type: "function", Function: &openai.FunctionDef{Name: t.name, Description: t.description, Parameters: t.schema}})
	}
	if len(out.Tools) > 0 {
		// Without tools there is nothing to choose or call in parallel, and
		// OpenAI refuses both members.
		out.ToolChoice = rsChatToolChoice(rq.choice)
		if r.ParallelToolCalls != nil && !*r.ParallelToolCalls {
			out.ParallelToolCalls = new(false)
		}
	}
	if f := rq.format; f != nil {
		out.ResponseFormat = &openai.ResponseFormat{Type: f.Type}
		if f.Type == "json_schema" {
			name := f.Name
			if name == "" {
				name = aoSchemaName
			}
			out.ResponseFormat.JSONSchema = &openai.JSONSchema{Name: name, Description: f.Description, Schema: f.Schema, Strict: f.Strict}
		}
	}
	return out, nil
}

func rsChatToolChoice(c rsChoice) jsontext.Value {
	switch c.mode {
	case "":
		return nil
	case rsChoiceNamed:
		return rsJSON(openai.NamedToolChoice{Type: "function", Function: openai.FunctionName{Name: c.name}})
	}
	return openai.Text(c.mode)
}

// rsChatMessages is the conversation as chat messages. A tool call joins
// the assistant message before it (consecutive calls, and the text said
// before them, are one assistant turn); a tool output is a tool message.
func rsChatMessages(rq *rsRequest) ([]openai.Message, error) {
	out := make([]openai.Message, 0, len(rq.msgs)+1)
	if rq.system != "" {
		out = append(out, openai.Message{Role: openai.RoleSystem, Content: openai.Text(rq.system)})
	}
	for i := range rq.msgs {
		m := &rq.msgs[i]
		if m.call != nil {
			tc := openai.ToolCall{ID: m.call.id, Type: "function", Function: openai.FunctionCall{Name: m.call.name, Arguments: rsArguments([]byte(m.call.args))}}
			if n := len(out); n > 0 && out[n-1].Role == openai.RoleAssistant {
				out[n-1].ToolCalls = append(out[n-1].ToolCalls, tc)
			} else {
				out = append(out, openai.Message{Role: openai.RoleAssistant, ToolCalls: []openai.ToolCall{tc}})
			}
			continue
		}
		content, err := rsChatContent(m)
		if err != nil {
			return nil, err
		}
		msg := openai.Message{Role: m.role, Content: content}
		if m.role == rsRoleTool {
			msg.ToolCallID = m.callID
		}
		out = append(out, msg)
	}
	return out, nil
}

// rsChatContent is a message's content: a string as it was sent, else
// parts (text, refusal in an assistant's, image_url in a user's).
func rsChatContent(m *rsMsg) (jsontext.Value, error) {
	if m.str {
		return openai.Text(m.parts[0].text), nil
	}
	parts := make([]openai.ContentPart, 0, len(m.parts))
	for i := range m.parts {
		p := &m.parts[i]
		switch {
		case p.image && m.role != rsRoleUser:
			return nil, &NotCarried{Param: p.param, Reason: rsChatNoImage}
		case p.image:
			u := &openai.ImageURL{URL: p.url}
			switch p.detail {
			case "auto", "low", "high":
				u.Detail = p.detail // chat-completions knows no other detail
			}
			parts = append(parts, openai.ContentPart{Type: openai.PartImage, ImageURL: u})
		case p.refusal && m.role == rsRoleAssistant:
			parts = append(parts, openai.ContentPart{Type: openai.PartRefusal, Refusal: &p.text})
		default:
			parts = append(parts, openai.ContentPart{Type: openai.PartText, Text: &p.text})
		}
	}
	return rsJSON(parts), nil
}

// rsJSON is v, one of the wire types, as the JSON of a request: their
// members are strings, numbers and JSON the decoder validated, so an error
// is a defect of the types, not of a request.
func rsJSON(v any) jsontext.Value {
	b, err := json.Marshal(v)
	if err != nil {
		panic("translate: cannot encode " + err.Error())
	}
	return b
}
