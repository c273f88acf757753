package provider

import (
	"bytes"
	"context"

	"github.com/llmgw/llmgw/api/wire/openai"
)

// openAI speaks the chat-completions protocol.
type openAI struct{ *base }

// oaiAnswer is a 2xx answer: a completion, or the error object some
// compatible servers send with status 200.
type oaiAnswer struct {
	openai.ChatCompletion
	Error *openai.ErrorDetail `json:"error"`
}

// oaiEvent is one stream event: a chunk, or an error object.
type oaiEvent struct {
	openai.ChatCompletionChunk
	Error *openai.ErrorDetail `json:"error"`
}

// oaiUsage reads the protocol's counts; the details objects are optional
// (older servers and most compatible ones leave them out).
func oaiUsage(u *openai.Usage) Usage {
	out := Usage{InputTokens: u.PromptTokens, OutputTokens: u.CompletionTokens}
	if d := u.PromptTokensDetails; d != nil {
		out.CachedInputTokens = d.CachedTokens
	}
	if d := u.CompletionTokensDetails; d != nil {
		out.ReasoningTokens = d.ReasoningTokens
	}
	return out
}

// oaiErrorType prefers the error type and falls back to a string code
// (OpenAI sends type:null with code:"rate_limit_exceeded" on some errors).
func oaiErrorType(d *openai.ErrorDetail) string {
	if d.Type != "" {
		return d.Type
	}
	return d.CodeString()
}

// encodeOpenAI writes the protocol's request for req.
func encodeOpenAI(req *Request, stream bool) ([]byte, error) {
	r := &openai.ChatCompletionRequest{
		Model:       req.Model,
		Messages:    make([]openai.Message, len(req.Messages)),
		MaxTokens:   req.MaxTokens,
		Temperature: req.Temperature,
		TopP:        req.TopP,
	}
	if len(req.Stop) > 0 {
		stop, err := encodeJSON(req.Stop)
		if err != nil {
			return nil, err
		}
		r.Stop = stop
	}
	for i, m := range req.Messages {
		r.Messages[i] = openai.Message{Role: m.Role, Content: openai.Text(m.Content)}
	}
	if req.User != "" {
		r.User = &req.User
	}
	if stream {
		yes := true
		r.Stream = &yes
		// Without it the protocol sends no usage in a stream.
		r.StreamOptions = &openai.StreamOptions{IncludeUsage: &yes}
	}
	return encodeJSON(r)
}

func (a *openAI) Complete(ctx context.Context, req *Request) (*Completion, error) {
	return a.complete(ctx, req, encodeOpenAI, decodeOpenAI)
}

func decodeOpenAI(raw []byte) (*Completion, *Error) {
	var r oaiAnswer
	if err := decodeJSON(raw, &r); err != nil {
		return nil, &Error{Kind: KindProtocol, Message: "malformed response JSON"}
	}
	if r.Error != nil {
		return nil, &Error{Kind: KindProtocol, Type: oaiErrorType(r.Error), Message: "error in a 2xx response: " + r.Error.Message}
	}
	if len(r.Choices) == 0 {
		return nil, &Error{Kind: KindProtocol, Message: "response has no choices"}
	}
	ch := &r.Choices[0]
	c := &Completion{ID: r.ID, Text: ch.Message.Content, FinishReason: "stop"}
	if ch.FinishReason != "" {
		c.FinishReason = ch.FinishReason
	}
	if r.Usage != nil {
		c.Usage = oaiUsage(r.Usage)
		c.HasUsage = true
	}
	return c, nil
}

func (a *openAI) Stream(ctx context.Context, req *Request) (Stream, error) {
	return a.stream(ctx, req, encodeOpenAI, &oaiDecoder{})
}

// oaiDecoder reads chunks into one event value, whose Choices array is
// reused from chunk to chunk.
type oaiDecoder struct {
	ev oaiEvent
}

var doneMarker = []byte("[DONE]")

func (d *oaiDecoder) decode(_, data []byte, q *queue) (bool, *Error) {
	if bytes.Equal(data, doneMarker) {
		return true, nil
	}
	// Unmarshal leaves members a chunk omits untouched and decodes array
	// elements in place: everything is cleared first.
	choices := d.ev.Choices[:cap(d.ev.Choices)]
	clear(choices)
	d.ev = oaiEvent{ChatCompletionChunk: openai.ChatCompletionChunk{Choices: choices[:0]}}
	e := &d.ev
	if err := decodeJSON(data, e); err != nil {
		return false, &Error{Kind: KindProtocol, Message: "malformed stream chunk JSON"}
	}
	if e.Error != nil {
		return false, &Error{Kind: KindStream, Type: oaiErrorType(e.Error), Message: e.Error.Message}
	}
	for i := range e.Choices {
		ch := &e.Choices[i]
		if ch.Index != 0 {
			continue // only one choice is ever requested
		}
		if c := ch.Delta.Content; c != nil && *c != "" {
			q.push(Event{Text: *c})
		}
		if f := ch.FinishReason; f != nil && *f != "" {
			q.push(Event{FinishReason: *f})
		}
	}
	if u := e.Usage.Usage; u != nil {
		n := oaiUsage(u)
		q.push(Event{Usage: &n})
	}
	return false, nil
}
