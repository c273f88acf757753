package translate

import (
	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/llmgw/llmgw/api/wire/anthropic"
	"github.com/llmgw/llmgw/api/wire/openai"
)

// antStream turns one Messages event stream into chat.completion.chunk
// objects. It holds one chunk whose id, created, model and usage null-ness
// are set once; each event sets its choice and writes the chunk into buf,
// which the next event reuses (the ChatStream contract allows it).
//
// The prompt's counts come in message_start and may be repeated in
// message_delta, which brings output_tokens: the finish chunk reports them
// to the gateway (Chunk.Usage) without relaying them, because the usage
// chunk End writes reports what the gateway bills.
type antStream struct {
	chunk  openai.ChatCompletionChunk
	choice [1]openai.ChunkChoice
	call   [1]openai.ToolCallDelta
	text   string // what the delta content points to
	reason string // what the finish reason points to
	buf    []byte
	usage  bool // Meta.IncludeUsage

	// calls maps a tool_use block's index to its tool call's index in the
	// chunks (0, 1, 2... in the order the blocks open).
	calls  map[int]int
	counts antCounts

	// The events a stream repeats are decoded into these, zeroed first
	// (Unmarshal leaves the members an event omits untouched).
	block anthropic.ContentBlockStart
	delta anthropic.ContentBlockDelta
}

func newAntStream(m *Meta) *antStream {
	return &antStream{
		chunk: openai.ChatCompletionChunk{
			ID: m.ID, Object: openai.ObjectChunk, Created: m.Created, Model: m.Alias,
			// As OpenAI's: with include_usage every chunk but the usage
			// one has "usage":null.
			Usage: openai.ChunkUsage{Null: m.IncludeUsage},
		},
		usage: m.IncludeUsage,
	}
}

// antMalformedEvent is the failure of an event that is not the JSON its
// type promises.
func antMalformedEvent() *Failure { return malformed("malformed stream event JSON") }

func (s *antStream) Event(typ, data []byte, out []Chunk) ([]Chunk, bool, error) {
	s.buf = s.buf[:0]
	name, err := antEventName(typ, data)
	if err != nil {
		return out, false, err
	}
	switch name {
	case anthropic.EventContentBlockDelta:
		return s.contentDelta(data, out)
	case anthropic.EventContentBlockStart:
		return s.blockStart(data, out)
	case anthropic.EventMessageStart:
		var e anthropic.MessageStart
		if err := json.Unmarshal(data, &e, lenient); err != nil {
			return out, false, antMalformedEvent()
		}
		s.counts.note(e.Message.Usage)
		s.text = ""
		s.choice[0] = openai.ChunkChoice{Delta: openai.Delta{Role: openai.RoleAssistant, Content: &s.text}}
		return s.emit(out, Chunk{}), false, nil
	case anthropic.EventMessageDelta:
		return s.messageDelta(data, out)
	}
	done, err := antOtherEvent(name, data)
	return out, done, err
}

// antOtherEvent reads a Messages event a translator has no use for beyond
// its end and its errors: an error event is a *Failure with the provider's
// type and message; message_stop ends the stream (done); message_stop,
// ping, content_block_stop and the types this gateway does not know carry
// nothing a translated event has, but must still be JSON.
func antOtherEvent(name string, data []byte) (done bool, err error) {
	if name == anthropic.EventError {
		var e anthropic.ErrorResponse
		if err := json.Unmarshal(data, &e, lenient); err != nil {
			return false, antMalformedEvent()
		}
		msg := e.Error.Message
		if msg == "" {
			msg = "upstream error event"
		}
		return false, &Failure{Type: e.Error.Type, Message: msg}
	}
	if !jsontext.Value(data).IsValid(lenient) {
		return false, antMalformedEvent()
	}
	return name == anthropic.EventMessageStop, nil
}

// antEventName is the event's type: its SSE name, or, the name being
// optional, the type its data repeats. The known names come back as
// constants, so that reading them allocates nothing.
func antEventName(typ, data []byte) (string, error) {
	switch string(typ) {
	case anthropic.EventContentBlockDelta:
		return anthropic.EventContentBlockDelta, nil
	case anthropic.EventContentBlockStart:
		return anthropic.EventContentBlockStart, nil
	case anthropic.EventContentBlockStop:
		return anthropic.EventContentBlockStop, nil
	case anthropic.EventPing:
		return anthropic.EventPing, nil
	case anthropic.EventMessageStart:
		return anthropic.EventMessageStart, nil
	case anthropic.EventMessageDelta:
		return anthropic.EventMessageDelta, nil
	case anthropic.EventMessageStop:
		return anthropic.EventMessageStop, nil
	case anthropic.EventError:
		return anthropic.EventError, nil
	case "":
		var t anthropic.TypeOnly
		if err := json.Unmarshal(data, &t, lenient); err != nil {
			return "", antMalformedEvent()
		}
		return t.Type, nil
	}
	return string(typ), nil
}

// blockStart opens a content block: a text block may bring its first
// text, a tool_use block is the first piece of a tool call (its id and
// name; the arguments follow in input_json_delta events). Thinking blocks
// and the blocks of server tools have no chat equivalent.
func (s *antStream) blockStart(data []byte, out []Chunk) ([]Chunk, bool, error) {
	e := &s.block
	*e = anthropic.ContentBlockStart{}
	if err := json.Unmarshal(data, e, lenient); err != nil {
		return out, false, antMalformedEvent()
	}
	switch b := &e.ContentBlock; b.Type {
	case anthropic.BlockText:
		if t := b.TextOf(); t != "" {
			return s.content(out, t), false, nil
		}
	case anthropic.BlockToolUse:
		if s.calls == nil {
			s.calls = make(map[int]int)
		}
		n := len(s.calls)
		s.calls[e.Index] = n
		s.call[0] = openai.ToolCallDelta{Index: n, ID: b.ID, Type: "function", Function: openai.FunctionCallDelta{Name: b.Name}}
		s.choice[0] = openai.ChunkChoice{Delta: openai.Delta{ToolCalls: s.call[:]}}
		return s.emit(out, Chunk{Commit: true}), false, nil
	}
	return out, false, nil
}

// contentDelta adds text to the content or a piece of a tool call's
// arguments; thinking and signature deltas have no chat equivalent.
func (s *antStream) contentDelta(data []byte, out []Chunk) ([]Chunk, bool, error) {
	e := &s.delta
	*e = anthropic.ContentBlockDelta{}
	if err := json.Unmarshal(data, e, lenient); err != nil {
		return out, false, antMalformedEvent()
	}
	switch e.Delta.Type {
	case anthropic.DeltaText:
		if e.Delta.Text != "" {
			return s.content(out, e.Delta.Text), false, nil
		}
	case anthropic.DeltaInputJSON:
		n, ok := s.calls[e.Index]
		if !ok || e.Delta.PartialJSON == "" {
			return out, false, nil // a piece of no tool call, or of nothing
		}
		s.call[0] = openai.ToolCallDelta{Index: n, Function: openai.FunctionCallDelta{Arguments: e.Delta.PartialJSON}}
		s.choice[0] = openai.ChunkChoice{Delta: openai.Delta{ToolCalls: s.call[:]}}
		return s.emit(out, Chunk{Commit: true, Text: e.Delta.PartialJSON}), false, nil
	}
	return out, false, nil
}

// messageDelta ends the message: the finish chunk, with the provider's
// final counts for the gateway when the prompt's are known.
func (s *antStream) messageDelta(data []byte, out []Chunk) ([]Chunk, bool, error) {
	var e anthropic.MessageDelta
	if err := json.Unmarshal(data, &e, lenient); err != nil {
		return out, false, antMalformedEvent()
	}
	s.counts.note(e.Usage)
	c := Chunk{Usage: s.counts.final(e.Usage), FinishReason: e.Delta.StopReason}
	s.reason = antFinishReason(e.Delta.StopReason)
	s.choice[0] = openai.ChunkChoice{FinishReason: &s.reason}
	return s.emit(out, c), false, nil
}

// content is a chunk adding t to the content.
func (s *antStream) content(out []Chunk, t string) []Chunk {
	s.text = t
	s.choice[0] = openai.ChunkChoice{Delta: openai.Delta{Content: &s.text}}
	return s.emit(out, Chunk{Commit: true, Text: t})
}

// emit writes the chunk with the choice set into buf and appends c, its
// Data that chunk, to out. Data's capacity ends with it, so that a caller
// appending to it cannot overwrite what follows.
func (s *antStream) emit(out []Chunk, c Chunk) []Chunk {
	start := len(s.buf)
	s.chunk.Choices = s.choice[:]
	s.buf = antAppendAnswer(s.buf, &s.chunk)
	c.Data = s.buf[start:len(s.buf):len(s.buf)]
	return append(out, c)
}

// End writes the usage chunk a caller who asked for it gets last: no
// choices, and u, the counts the gateway bills. buf is not reset: the last
// event's chunks may still be unwritten.
func (s *antStream) End(u Usage, out []Chunk) []Chunk {
	if !s.usage {
		return out
	}
	start := len(s.buf)
	s.chunk.Choices = s.choice[:0]
	s.chunk.Usage.Usage = antChatUsage(&u)
	s.buf = antAppendAnswer(s.buf, &s.chunk)
	s.chunk.Usage.Usage = nil
	return append(out, Chunk{Data: s.buf[start:len(s.buf):len(s.buf)]})
}
