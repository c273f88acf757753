package provider

import (
	"context"
	"strings"
)

// anthropic speaks the Messages protocol.
type anthropic struct{ *base }

// defaultMaxTokens fills the protocol's required max_tokens when the caller set
// none (OpenAI's is optional).
const defaultMaxTokens = 4096

// messageSeparator joins system messages, and consecutive same-role messages
// that the protocol would reject, into one.
const messageSeparator = "\n\n"

type antRequest struct {
	Model         string       `json:"model"`
	System        string       `json:"system,omitempty"`
	Messages      []antMessage `json:"messages"`
	MaxTokens     int          `json:"max_tokens"`
	Temperature   *float64     `json:"temperature,omitempty"`
	TopP          *float64     `json:"top_p,omitempty"`
	StopSequences []string     `json:"stop_sequences,omitempty"`
	Metadata      *antMetadata `json:"metadata,omitempty"`
	Stream        bool         `json:"stream,omitempty"`
}

type antMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

type antMetadata struct {
	UserID string `json:"user_id"`
}

type antUsage struct {
	InputTokens              *int `json:"input_tokens"`
	OutputTokens             *int `json:"output_tokens"`
	CacheCreationInputTokens int  `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int  `json:"cache_read_input_tokens"`
}

// input counts cached prompt tokens too: the protocol reports them apart.
// cached is the cache reads only; cache writes are billed as plain input
// (a price list has no cache-write rate).
func (u *antUsage) input() (in, cached int, ok bool) {
	if u == nil || u.InputTokens == nil {
		return 0, 0, false
	}
	return *u.InputTokens + u.CacheCreationInputTokens + u.CacheReadInputTokens, u.CacheReadInputTokens, true
}

type antResponse struct {
	ID         string            `json:"id"`
	Type       string            `json:"type"`
	Content    []antContentBlock `json:"content"`
	StopReason string            `json:"stop_reason"`
	Usage      *antUsage         `json:"usage"`
	Error      *errorDetail      `json:"error"`
}

type antEvent struct {
	Type         string           `json:"type"`
	Message      *antEventMessage `json:"message"`
	ContentBlock *antContentBlock `json:"content_block"`
	Delta        *antEventDelta   `json:"delta"`
	Usage        *antUsage        `json:"usage"`
	Error        *errorDetail     `json:"error"`
}

type antEventMessage struct {
	Usage *antUsage `json:"usage"`
}

type antContentBlock struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

type antEventDelta struct {
	Type       string `json:"type"`
	Text       string `json:"text"`
	StopReason string `json:"stop_reason"`
}

func encodeAnthropic(req *Request, stream bool) ([]byte, error) {
	r := anthropicRequestOf(req, stream)
	return marshalRequest(r, r.Temperature, r.TopP)
}

// anthropicRequestOf is the protocol's request for req.
func anthropicRequestOf(req *Request, stream bool) *antRequest {
	r := &antRequest{
		Model:         req.Model,
		MaxTokens:     defaultMaxTokens,
		Temperature:   req.Temperature,
		TopP:          req.TopP,
		StopSequences: req.Stop,
		Stream:        stream,
	}
	if req.MaxTokens != nil {
		r.MaxTokens = *req.MaxTokens
	}
	if t := req.Temperature; t != nil && (*t < 0 || *t > 1) {
		// OpenAI accepts 0..2, this protocol 0..1: clamp rather than have the
		// provider reject a request that is valid for the caller.
		c := min(max(*t, 0), 1)
		r.Temperature = &c
	}
	if req.User != "" {
		r.Metadata = &antMetadata{UserID: req.User}
	}
	var system []string
	r.Messages = make([]antMessage, 0, len(req.Messages))
	for _, m := range req.Messages {
		if m.Role == "system" {
			system = append(system, m.Content)
			continue
		}
		if n := len(r.Messages); n > 0 && r.Messages[n-1].Role == m.Role {
			r.Messages[n-1].Content += messageSeparator + m.Content
			continue
		}
		r.Messages = append(r.Messages, antMessage(m))
	}
	r.System = strings.Join(system, messageSeparator)
	return r
}

// finishReason maps the protocol's stop_reason to OpenAI's vocabulary. Reasons
// this gateway cannot provoke (tool_use, pause_turn) count as a normal stop.
func finishReason(stop string) string {
	switch stop {
	case "max_tokens", "model_context_window_exceeded":
		return "length"
	case "refusal":
		return "content_filter"
	}
	return "stop"
}

func (a *anthropic) Complete(ctx context.Context, req *Request) (*Completion, error) {
	return a.complete(ctx, req, encodeAnthropic, decodeAnthropic)
}

func decodeAnthropic(raw []byte) (*Completion, *Error) {
	var r antResponse
	var fast fastReader
	if !fast.antResponse(raw, &r) {
		r = antResponse{} // what the fast reader filled in before it gave up
		if err := decodeJSON(raw, &r); err != nil {
			return nil, &Error{Kind: KindProtocol, Message: "malformed response JSON"}
		}
	}
	if r.Type == "error" || r.Error != nil {
		var d errorDetail
		if r.Error != nil {
			d = *r.Error
		}
		return nil, &Error{Kind: KindProtocol, Type: d.typ(), Message: "error in a 2xx response: " + d.Message}
	}
	if r.Type != "message" && r.Content == nil {
		return nil, &Error{Kind: KindProtocol, Message: "response is not a message"}
	}
	var text strings.Builder
	for _, c := range r.Content {
		if c.Type == "text" {
			text.WriteString(c.Text)
		}
	}
	c := &Completion{ID: r.ID, Text: text.String(), FinishReason: finishReason(r.StopReason)}
	if in, cached, ok := r.Usage.input(); ok && r.Usage.OutputTokens != nil {
		c.Usage = Usage{InputTokens: in, CachedInputTokens: cached, OutputTokens: *r.Usage.OutputTokens}
		c.HasUsage = true
	}
	return c, nil
}

func (a *anthropic) Stream(ctx context.Context, req *Request) (Stream, error) {
	return a.stream(ctx, req, encodeAnthropic, &antDecoder{})
}

type antDecoder struct {
	ev       antEvent
	fast     fastReader
	delta    antEventDelta // what ev.Delta points to when the fast reader fills it
	input    int
	cached   int
	hasInput bool
}

func (d *antDecoder) decode(typ, data []byte, q *queue) (bool, *Error) {
	switch string(typ) {
	case "ping", "content_block_stop":
		return false, nil // nothing a relay needs; skip the JSON work
	case "message_stop":
		return true, nil
	}
	// Zeroed each time: Unmarshal leaves fields an event omits untouched.
	d.ev = antEvent{}
	e := &d.ev
	if !d.fast.antEvent(data, e, &d.delta) {
		d.ev = antEvent{} // what the fast reader filled in before it gave up
		if err := decodeJSON(data, e); err != nil {
			return false, &Error{Kind: KindProtocol, Message: "malformed stream event JSON"}
		}
	}
	name := string(typ)
	if name == "" {
		name = e.Type // the SSE event name is optional; the data repeats it
	}
	switch name {
	case "message_start":
		if e.Message != nil {
			d.input, d.cached, d.hasInput = e.Message.Usage.input()
		}
	case "content_block_start":
		if b := e.ContentBlock; b != nil && b.Type == "text" && b.Text != "" {
			q.push(Event{Text: b.Text})
		}
	case "content_block_delta":
		if e.Delta != nil && e.Delta.Type == "text_delta" && e.Delta.Text != "" {
			q.push(Event{Text: e.Delta.Text})
		}
	case "message_delta":
		if e.Delta != nil && e.Delta.StopReason != "" {
			q.push(Event{FinishReason: finishReason(e.Delta.StopReason)})
		}
		if in, cached, ok := e.Usage.input(); ok {
			d.input, d.cached, d.hasInput = in, cached, true
		}
		if e.Usage != nil && e.Usage.OutputTokens != nil && d.hasInput {
			q.push(Event{Usage: &Usage{InputTokens: d.input, CachedInputTokens: d.cached, OutputTokens: *e.Usage.OutputTokens}})
		}
	case "message_stop":
		return true, nil
	case "error":
		var det errorDetail
		if e.Error != nil {
			det = *e.Error
		}
		msg := det.Message
		if msg == "" {
			msg = "upstream error event"
		}
		return false, &Error{Kind: KindStream, Type: det.typ(), Message: msg}
	}
	return false, nil
}
