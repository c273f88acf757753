package provider

import (
	"context"
	"strings"

	"github.com/go-json-experiment/json/jsontext"

	ant "github.com/llmgw/llmgw/api/wire/anthropic"
)

// anthropic speaks the Messages protocol.
type anthropic struct{ *base }

// defaultMaxTokens fills the protocol's required max_tokens when the caller set
// none (OpenAI's is optional).
const defaultMaxTokens = 4096

// messageSeparator joins system messages, and consecutive same-role messages
// that the protocol would reject, into one.
const messageSeparator = "\n\n"

// antAnswer is a 2xx answer: a message, or an error envelope sent with
// status 200.
type antAnswer struct {
	ant.MessageResponse
	Error *ant.ErrorDetail `json:"error"`
}

// antInput is the prompt's tokens of u, cached ones included: the protocol
// reports them apart. cached is the cache reads only; cache writes are
// billed as plain input (a price list has no cache-write rate).
func antInput(u *ant.Usage) (in, cached int, ok bool) {
	if u == nil || u.InputTokens == nil {
		return 0, 0, false
	}
	in = *u.InputTokens
	if n := u.CacheCreationInputTokens; n != nil {
		in += *n
	}
	if n := u.CacheReadInputTokens; n != nil {
		in += *n
		cached = *n
	}
	return in, cached, true
}

// encodeAnthropic writes the protocol's request for req.
func encodeAnthropic(req *Request, stream bool) ([]byte, error) {
	maxTokens := defaultMaxTokens
	if req.MaxTokens != nil {
		maxTokens = *req.MaxTokens
	}
	r := &ant.MessagesRequest{
		Model:         req.Model,
		MaxTokens:     &maxTokens,
		Temperature:   req.Temperature,
		TopP:          req.TopP,
		StopSequences: req.Stop,
		Stream:        stream,
	}
	if t := req.Temperature; t != nil && (*t < 0 || *t > 1) {
		// OpenAI accepts 0..2, this protocol 0..1: clamp rather than have the
		// provider reject a request that is valid for the caller.
		c := min(max(*t, 0), 1)
		r.Temperature = &c
	}
	if req.User != "" {
		r.Metadata = &ant.Metadata{UserID: req.User}
	}
	// System messages go to system; consecutive messages of one role, which
	// the protocol rejects, are joined.
	var system []string
	type turn struct{ role, text string }
	turns := make([]turn, 0, len(req.Messages))
	for _, m := range req.Messages {
		if m.Role == "system" {
			system = append(system, m.Content)
			continue
		}
		if n := len(turns); n > 0 && turns[n-1].role == m.Role {
			turns[n-1].text += messageSeparator + m.Content
			continue
		}
		turns = append(turns, turn{m.Role, m.Content})
	}
	if s := strings.Join(system, messageSeparator); s != "" {
		r.System = ant.Text(s)
	}
	r.Messages = make([]ant.Message, len(turns))
	for i, t := range turns {
		r.Messages[i] = ant.Message{Role: t.role, Content: ant.Text(t.text)}
	}
	return encodeJSON(r)
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
	var r antAnswer
	if err := decodeJSON(raw, &r); err != nil {
		return nil, &Error{Kind: KindProtocol, Message: "malformed response JSON"}
	}
	if r.Type == ant.TypeError || r.Error != nil {
		var d ant.ErrorDetail
		if r.Error != nil {
			d = *r.Error
		}
		return nil, &Error{Kind: KindProtocol, Type: d.Type, Message: "error in a 2xx response: " + d.Message}
	}
	if r.Type != ant.TypeMessage && r.Content == nil {
		return nil, &Error{Kind: KindProtocol, Message: "response is not a message"}
	}
	var text strings.Builder
	for _, c := range r.Content {
		if c.Type == ant.BlockText {
			text.WriteString(c.Text)
		}
	}
	c := &Completion{ID: r.ID, Text: text.String(), FinishReason: finishReason(stopReason(r.StopReason))}
	if in, cached, ok := antInput(r.Usage); ok && r.Usage.OutputTokens != nil {
		c.Usage = Usage{InputTokens: in, CachedInputTokens: cached, OutputTokens: *r.Usage.OutputTokens}
		c.HasUsage = true
	}
	return c, nil
}

func stopReason(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func (a *anthropic) Stream(ctx context.Context, req *Request) (Stream, error) {
	return a.stream(ctx, req, encodeAnthropic, &antDecoder{})
}

// antDecoder reads the events of one stream; the prompt's counts come in
// message_start and may be repeated in message_delta. The events of the
// types a stream repeats are decoded into the decoder's own values, which
// are zeroed first (Unmarshal leaves members an event omits untouched).
type antDecoder struct {
	input    int
	cached   int
	hasInput bool
	delta    ant.ContentBlockDelta
	block    ant.ContentBlockStart
}

func (d *antDecoder) decode(typ, data []byte, q *queue) (bool, *Error) {
	name := string(typ)
	if name == "" {
		// The SSE event name is optional; the data repeats it.
		var t ant.TypeOnly
		if err := decodeJSON(data, &t); err != nil {
			return false, malformedEvent()
		}
		name = t.Type
	}
	switch name {
	case ant.EventMessageStart:
		var e ant.MessageStart
		if err := decodeJSON(data, &e); err != nil {
			return false, malformedEvent()
		}
		d.input, d.cached, d.hasInput = antInput(e.Message.Usage)
	case ant.EventContentBlockStart:
		e := &d.block
		*e = ant.ContentBlockStart{}
		if err := decodeJSON(data, e); err != nil {
			return false, malformedEvent()
		}
		if b := e.ContentBlock; b.Type == ant.BlockText && b.Text != "" {
			q.push(Event{Text: b.Text})
		}
	case ant.EventContentBlockDelta:
		e := &d.delta
		*e = ant.ContentBlockDelta{}
		if err := decodeJSON(data, e); err != nil {
			return false, malformedEvent()
		}
		if e.Delta.Type == ant.DeltaText && e.Delta.Text != "" {
			q.push(Event{Text: e.Delta.Text})
		}
	case ant.EventMessageDelta:
		var e ant.MessageDelta
		if err := decodeJSON(data, &e); err != nil {
			return false, malformedEvent()
		}
		if e.Delta.StopReason != "" {
			q.push(Event{FinishReason: finishReason(e.Delta.StopReason)})
		}
		if in, cached, ok := antInput(e.Usage); ok {
			d.input, d.cached, d.hasInput = in, cached, true
		}
		if e.Usage != nil && e.Usage.OutputTokens != nil && d.hasInput {
			q.push(Event{Usage: &Usage{InputTokens: d.input, CachedInputTokens: d.cached, OutputTokens: *e.Usage.OutputTokens}})
		}
	case ant.EventMessageStop:
		return true, nil
	case ant.EventError:
		var e ant.ErrorResponse
		if err := decodeJSON(data, &e); err != nil {
			return false, malformedEvent()
		}
		msg := e.Error.Message
		if msg == "" {
			msg = "upstream error event"
		}
		return false, &Error{Kind: KindStream, Type: e.Error.Type, Message: msg}
	case ant.EventPing, ant.EventContentBlockStop:
		// nothing a relay needs; skip the JSON work
	default:
		// An event type this gateway does not know carries nothing it
		// needs, but must still be JSON.
		if !jsontext.Value(data).IsValid(lenient) {
			return false, malformedEvent()
		}
	}
	return false, nil
}

func malformedEvent() *Error {
	return &Error{Kind: KindProtocol, Message: "malformed stream event JSON"}
}
