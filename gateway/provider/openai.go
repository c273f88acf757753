package provider

import (
	"bytes"
	"context"
)

// openAI speaks the chat-completions protocol.
type openAI struct{ *base }

type oaiRequest struct {
	Model         string           `json:"model"`
	Messages      []oaiMessage     `json:"messages"`
	MaxTokens     *int             `json:"max_tokens,omitempty"`
	Temperature   *float64         `json:"temperature,omitempty"`
	TopP          *float64         `json:"top_p,omitempty"`
	Stop          []string         `json:"stop,omitempty"`
	User          string           `json:"user,omitempty"`
	Stream        bool             `json:"stream,omitempty"`
	StreamOptions *oaiStreamOption `json:"stream_options,omitempty"`
}

type oaiMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

type oaiStreamOption struct {
	IncludeUsage bool `json:"include_usage"`
}

type oaiUsage struct {
	PromptTokens            int                   `json:"prompt_tokens"`
	CompletionTokens        int                   `json:"completion_tokens"`
	PromptTokensDetails     *oaiPromptDetails     `json:"prompt_tokens_details"`
	CompletionTokensDetails *oaiCompletionDetails `json:"completion_tokens_details"`
}

type oaiPromptDetails struct {
	CachedTokens int `json:"cached_tokens"`
}

type oaiCompletionDetails struct {
	ReasoningTokens int `json:"reasoning_tokens"`
}

// usage reads the protocol's counts; the details objects are optional
// (older servers and most compatible ones leave them out).
func (u *oaiUsage) usage() Usage {
	out := Usage{InputTokens: u.PromptTokens, OutputTokens: u.CompletionTokens}
	if d := u.PromptTokensDetails; d != nil {
		out.CachedInputTokens = d.CachedTokens
	}
	if d := u.CompletionTokensDetails; d != nil {
		out.ReasoningTokens = d.ReasoningTokens
	}
	return out
}

type oaiResponse struct {
	ID      string              `json:"id"`
	Choices []oaiResponseChoice `json:"choices"`
	Usage   *oaiUsage           `json:"usage"`
	Error   *errorDetail        `json:"error"`
}

type oaiResponseChoice struct {
	Message struct {
		Content *string `json:"content"`
	} `json:"message"`
	FinishReason *string `json:"finish_reason"`
}

// oaiChunk uses plain strings (null decodes as "") so a chunk costs no pointer
// allocations; decode clears the reused Choices elements before each use.
type oaiChunk struct {
	Choices []oaiChunkChoice `json:"choices"`
	Usage   *oaiUsage        `json:"usage"`
	Error   *errorDetail     `json:"error"`
}

// reset empties c for the next chunk. Unmarshal leaves fields a chunk omits
// untouched, and decodes slice elements in place, so everything is cleared;
// the Choices array is reused.
func (c *oaiChunk) reset() {
	choices := c.Choices[:cap(c.Choices)]
	clear(choices)
	*c = oaiChunk{Choices: choices[:0]}
}

type oaiChunkChoice struct {
	Index int `json:"index"`
	Delta struct {
		Content string `json:"content"`
	} `json:"delta"`
	FinishReason string `json:"finish_reason"`
}

func encodeOpenAI(req *Request, stream bool) ([]byte, error) {
	r := openAIRequestOf(req, stream)
	return marshalRequest(r, r.Temperature, r.TopP)
}

// openAIRequestOf is the protocol's request for req.
func openAIRequestOf(req *Request, stream bool) *oaiRequest {
	r := &oaiRequest{
		Model:       req.Model,
		Messages:    make([]oaiMessage, len(req.Messages)),
		MaxTokens:   req.MaxTokens,
		Temperature: req.Temperature,
		TopP:        req.TopP,
		Stop:        req.Stop,
		User:        req.User,
	}
	for i, m := range req.Messages {
		r.Messages[i] = oaiMessage(m)
	}
	if stream {
		r.Stream = true
		// Without it the protocol sends no usage in a stream.
		r.StreamOptions = &oaiStreamOption{IncludeUsage: true}
	}
	return r
}

func (a *openAI) Complete(ctx context.Context, req *Request) (*Completion, error) {
	return a.complete(ctx, req, encodeOpenAI, decodeOpenAI)
}

func decodeOpenAI(raw []byte) (*Completion, *Error) {
	var r oaiResponse
	var fast fastReader
	if !fast.oaiResponse(raw, &r) {
		r = oaiResponse{} // what the fast reader filled in before it gave up
		if err := decodeJSON(raw, &r); err != nil {
			return nil, &Error{Kind: KindProtocol, Message: "malformed response JSON"}
		}
	}
	if r.Error != nil {
		return nil, &Error{Kind: KindProtocol, Type: r.Error.typ(), Message: "error in a 2xx response: " + r.Error.Message}
	}
	if len(r.Choices) == 0 {
		return nil, &Error{Kind: KindProtocol, Message: "response has no choices"}
	}
	ch := r.Choices[0]
	c := &Completion{ID: r.ID, FinishReason: "stop"}
	if ch.Message.Content != nil {
		c.Text = *ch.Message.Content
	}
	if ch.FinishReason != nil && *ch.FinishReason != "" {
		c.FinishReason = *ch.FinishReason
	}
	if r.Usage != nil {
		c.Usage = r.Usage.usage()
		c.HasUsage = true
	}
	return c, nil
}

func (a *openAI) Stream(ctx context.Context, req *Request) (Stream, error) {
	return a.stream(ctx, req, encodeOpenAI, &oaiDecoder{})
}

type oaiDecoder struct {
	chunk oaiChunk
	fast  fastReader
}

var doneMarker = []byte("[DONE]")

func (d *oaiDecoder) decode(_, data []byte, q *queue) (bool, *Error) {
	if bytes.Equal(data, doneMarker) {
		return true, nil
	}
	c := &d.chunk
	c.reset()
	if !d.fast.oaiChunk(data, c) {
		c.reset() // what the fast reader filled in before it gave up
		if err := decodeJSON(data, c); err != nil {
			return false, &Error{Kind: KindProtocol, Message: "malformed stream chunk JSON"}
		}
	}
	if c.Error != nil {
		return false, &Error{Kind: KindStream, Type: c.Error.typ(), Message: c.Error.Message}
	}
	for i := range c.Choices {
		ch := &c.Choices[i]
		if ch.Index != 0 {
			continue // only one choice is ever requested
		}
		if ch.Delta.Content != "" {
			q.push(Event{Text: ch.Delta.Content})
		}
		if ch.FinishReason != "" {
			q.push(Event{FinishReason: ch.FinishReason})
		}
	}
	if c.Usage != nil {
		u := c.Usage.usage()
		q.push(Event{Usage: &u})
	}
	return false, nil
}
