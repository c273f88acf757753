package translate

import (
	"bytes"

	"github.com/llmgw/llmgw/api/wire/openai"
)

// rsChatStream turns one chat-completions stream into Responses events,
// which its writer writes: content and refusal deltas as text, a tool
// call's first piece as its item, the next ones as arguments; the finish
// reason closes the items; the provider's usage chunk is reported to the
// gateway (Chunk.Usage) and not written: End writes the counts billed in
// response.completed. Reasoning deltas (reasoning_content, what compatible
// servers stream of a model's thinking) are dropped: the request asked
// for no reasoning summary the gateway could write.
type rsChatStream struct {
	w *rsWriter
	// calls maps a tool call's index in the chunks to its item; id is the
	// call's id, for servers that number every call 0 (a new id at a known
	// index is a new call).
	calls map[int]rsChatCall
	in    chatChunkIn // each chunk, decoded again
}

type rsChatCall struct {
	item int
	id   string
}

func (s *rsChatStream) Event(_, data []byte, out []Chunk) ([]Chunk, bool, error) {
	if bytes.Equal(data, doneMarker) {
		return out, true, nil
	}
	s.w.buf = s.w.buf[:0]
	in := &s.in
	if err := in.read(data); err != nil {
		return out, false, err
	}
	out = s.w.start(out)
	for i := range in.Choices {
		c := &in.Choices[i]
		if c.Index != 0 {
			continue // the gateway asks for one choice
		}
		out = s.w.text(out, antStr(c.Delta.Content), false)
		out = s.w.text(out, antStr(c.Delta.Refusal), true)
		for j := range c.Delta.ToolCalls {
			out = s.toolCall(out, &c.Delta.ToolCalls[j])
		}
		if c.FinishReason != nil && *c.FinishReason != "" {
			s.w.finish(*c.FinishReason, rsChatFinish(*c.FinishReason))
			out = s.w.closeAll(out)
		}
	}
	if u := in.Usage.Usage; u != nil {
		out = append(out, Chunk{Usage: oaiUsage(u)})
	}
	return out, false, nil
}

// toolCall opens the item of a call not seen before (the commit point: a
// call is said from its start) and adds a piece of arguments to its call.
func (s *rsChatStream) toolCall(out []Chunk, tc *openai.ToolCallDelta) []Chunk {
	call, seen := s.calls[tc.Index]
	if !seen || (tc.ID != "" && tc.ID != call.id) {
		if s.calls == nil {
			s.calls = make(map[int]rsChatCall)
		}
		call.id = tc.ID
		call.item, out = s.w.toolStart(out, tc.ID, tc.Function.Name)
		s.calls[tc.Index] = call
	}
	return s.w.toolArgs(out, call.item, tc.Function.Arguments)
}

// End closes the items and writes response.completed (or .incomplete)
// with u, the counts the gateway bills. buf is not reset: the last
// event's chunks may still be unwritten.
func (s *rsChatStream) End(u Usage, out []Chunk) []Chunk { return s.w.end(out, &u) }

// Fail writes response.failed with the response so far.
func (s *rsChatStream) Fail(code, message string, out []Chunk) []Chunk {
	return s.w.fail(out, code, message)
}
