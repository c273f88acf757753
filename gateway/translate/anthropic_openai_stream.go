package translate

import (
	"bytes"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/llmgw/llmgw/api/wire/anthropic"
	"github.com/llmgw/llmgw/api/wire/openai"
)

// aoStream turns one chat-completions stream into Messages events:
// message_start first; then per piece of content a content block, opened
// (content_block_start) when the content changes kind (text, or a new
// tool call) and closed (content_block_stop) when the next one opens;
// content_block_delta events with the text (text_delta) or a piece of a
// call's arguments (input_json_delta). End closes the last block and
// writes message_delta, with the stop reason and the counts the gateway
// bills, and message_stop.
//
// Reasoning deltas (reasoning_content, reasoning: what compatible servers
// stream of a model's thinking) are dropped: the caller did not ask for
// thinking (thinking is dropped from the request), and a thinking block
// needs a signature only Anthropic writes. A refusal is text, as in the
// answer. The provider's usage chunk is reported to the gateway
// (Chunk.Usage) and not written: message_delta reports what is billed.
//
// Each event's JSON is written into buf, which the next Event call reuses
// (the ChatStream contract allows it); End appends to it, since the last
// event's chunks may still be unwritten.
type aoStream struct {
	meta    *Meta
	buf     []byte
	started bool // message_start written
	// finish is the provider's finish_reason (choice 0's): message_delta's
	// stop_reason, mapped, and its chunk's FinishReason, as it came.
	finish string

	// The open content block: its index, whether it is text, and the
	// number of blocks so far (the next one's index).
	open     bool
	openText bool
	openAt   int
	blocks   int

	// calls maps a tool call's index in the chunks to its block; id is the
	// call's id, for servers that number every call 0 (a new id at a known
	// index is a new call).
	calls map[int]aoCall

	// in is each chunk, decoded again (zeroed first: Unmarshal leaves the
	// members a chunk omits untouched); the events are written from these.
	in    chatChunkIn
	block anthropic.ContentBlockStart
	delta anthropic.ContentBlockDelta
	stop  anthropic.ContentBlockStop
}

type aoCall struct {
	block int
	id    string
}

// chatChunkIn is what a translated stream reads of a chat-completions
// chunk.
type chatChunkIn struct {
	Choices []openai.ChunkChoice `json:"choices"`
	Usage   openai.ChunkUsage    `json:"usage"`
	Error   jsontext.Value       `json:"error"`
}

// read decodes one chunk into in, reusing its choices (zeroed first:
// Unmarshal leaves the members a chunk omits untouched); an error object in
// the chunk is the provider's Failure.
func (in *chatChunkIn) read(data []byte) error {
	clear(in.Choices[:cap(in.Choices)])
	*in = chatChunkIn{Choices: in.Choices[:0]}
	if err := json.Unmarshal(data, in, lenient); err != nil {
		return malformed("malformed stream chunk JSON")
	}
	if len(in.Error) > 0 && in.Error.Kind() != 'n' {
		return upstreamError(in.Error)
	}
	return nil
}

func newAOStream(m *Meta) *aoStream { return &aoStream{meta: m} }

func (s *aoStream) Event(_, data []byte, out []Chunk) ([]Chunk, bool, error) {
	if bytes.Equal(data, doneMarker) {
		return out, true, nil
	}
	s.buf = s.buf[:0]
	in := &s.in
	if err := in.read(data); err != nil {
		return out, false, err
	}
	out = s.start(out)
	for i := range in.Choices {
		c := &in.Choices[i]
		if c.Index != 0 {
			continue // the gateway asks for one choice
		}
		for _, t := range []*string{c.Delta.Content, c.Delta.Refusal} {
			if t != nil && *t != "" {
				out = s.text(out, *t)
			}
		}
		for j := range c.Delta.ToolCalls {
			out = s.toolCall(out, &c.Delta.ToolCalls[j])
		}
		if c.FinishReason != nil && *c.FinishReason != "" {
			s.finish = *c.FinishReason
		}
	}
	if u := in.Usage.Usage; u != nil {
		out = append(out, Chunk{Usage: oaiUsage(u)})
	}
	return out, false, nil
}

// start writes message_start once, before anything else: the message with
// no content yet, and zero counts (the real ones come in message_delta).
func (s *aoStream) start(out []Chunk) []Chunk {
	if s.started {
		return out
	}
	s.started = true
	zero := 0
	e := anthropic.MessageStart{Type: anthropic.EventMessageStart, Message: anthropic.MessageResponse{
		ID: s.meta.ID, Type: anthropic.TypeMessage, Role: anthropic.RoleAssistant, Model: s.meta.Alias,
		Content: []anthropic.ContentBlock{}, Usage: &anthropic.Usage{InputTokens: &zero, OutputTokens: &zero},
	}}
	return s.emit(out, anthropic.EventMessageStart, &e, Chunk{})
}

// text adds t to the open text block, opening one first if need be.
func (s *aoStream) text(out []Chunk, t string) []Chunk {
	if !s.open || !s.openText {
		out = s.openBlock(out, anthropic.TextBlock(""), true, Chunk{})
	}
	s.delta = anthropic.ContentBlockDelta{Type: anthropic.EventContentBlockDelta, Index: s.openAt, Delta: anthropic.Delta{Type: anthropic.DeltaText, Text: t}}
	return s.emit(out, anthropic.EventContentBlockDelta, &s.delta, Chunk{Commit: true, Text: t})
}

// toolCall handles one tool call delta: a call not seen before opens a
// tool_use block (the commit point: a tool call is said from its start),
// and a piece of arguments is an input_json_delta of its call's block.
func (s *aoStream) toolCall(out []Chunk, tc *openai.ToolCallDelta) []Chunk {
	call, seen := s.calls[tc.Index]
	if !seen || (tc.ID != "" && tc.ID != call.id) {
		// A call is told by its first piece, which should have its id and
		// name; a server that sent neither still has its arguments kept.
		if s.calls == nil {
			s.calls = make(map[int]aoCall)
		}
		b := anthropic.ContentBlock{Type: anthropic.BlockToolUse, ID: tc.ID, Name: tc.Function.Name, Input: aoEmptyInput}
		out = s.openBlock(out, b, false, Chunk{Commit: true})
		call = aoCall{block: s.openAt, id: tc.ID}
		s.calls[tc.Index] = call
	}
	if a := tc.Function.Arguments; a != "" {
		// A piece of a call whose block was closed (a server interleaving
		// its calls) goes to that block's index still: clients gather
		// input by index.
		s.delta = anthropic.ContentBlockDelta{Type: anthropic.EventContentBlockDelta, Index: call.block, Delta: anthropic.Delta{Type: anthropic.DeltaInputJSON, PartialJSON: a}}
		out = s.emit(out, anthropic.EventContentBlockDelta, &s.delta, Chunk{Commit: true, Text: a})
	}
	return out
}

// aoEmptyInput is a tool_use block's input when it opens: the protocol's
// streams send the input in input_json_delta events after it.
var aoEmptyInput = jsontext.Value(`{}`)

// openBlock closes the open block and opens b; c is its chunk.
func (s *aoStream) openBlock(out []Chunk, b anthropic.ContentBlock, isText bool, c Chunk) []Chunk {
	out = s.closeBlock(out)
	s.open, s.openText, s.openAt = true, isText, s.blocks
	s.blocks++
	s.block = anthropic.ContentBlockStart{Type: anthropic.EventContentBlockStart, Index: s.openAt, ContentBlock: b}
	return s.emit(out, anthropic.EventContentBlockStart, &s.block, c)
}

func (s *aoStream) closeBlock(out []Chunk) []Chunk {
	if !s.open {
		return out
	}
	s.open = false
	s.stop = anthropic.ContentBlockStop{Type: anthropic.EventContentBlockStop, Index: s.openAt}
	return s.emit(out, anthropic.EventContentBlockStop, &s.stop, Chunk{})
}

// emit writes v, the data of the event name, into buf and appends c, its
// Data that JSON, to out. Data's capacity ends with it, so that a caller
// appending to it cannot overwrite what follows.
func (s *aoStream) emit(out []Chunk, name string, v any, c Chunk) []Chunk {
	start := len(s.buf)
	s.buf = antAppendAnswer(s.buf, v)
	c.Event, c.Data = name, s.buf[start:len(s.buf):len(s.buf)]
	return append(out, c)
}

// End closes the stream: the open block, message_delta with the stop
// reason and u (the counts the gateway bills, in the protocol's
// semantics), message_stop. A stream that brought no chunk at all still
// gets its message_start first, so that the caller reads a whole message.
func (s *aoStream) End(u Usage, out []Chunk) []Chunk {
	out = s.start(out)
	out = s.closeBlock(out)
	in, cached := aoInput(&u)
	d := anthropic.MessageDelta{
		Type:  anthropic.EventMessageDelta,
		Delta: anthropic.MessageDeltaBody{StopReason: aoStopReason(s.finish)},
		Usage: &anthropic.Usage{InputTokens: &in, CacheReadInputTokens: &cached, OutputTokens: &u.OutputTokens},
	}
	out = s.emit(out, anthropic.EventMessageDelta, &d, Chunk{FinishReason: s.finish})
	return s.emit(out, anthropic.EventMessageStop, &anthropic.TypeOnly{Type: anthropic.EventMessageStop}, Chunk{})
}
