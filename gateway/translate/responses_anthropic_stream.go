package translate

import (
	"github.com/go-json-experiment/json"

	"github.com/llmgw/llmgw/api/wire/anthropic"
)

// rsAntStream turns one Messages event stream into Responses events,
// which its writer writes: text blocks' text as text, a tool_use block's
// start as its call's item, its input_json_delta pieces as arguments;
// message_delta closes the items and reports the provider's counts to the
// gateway (Chunk.Usage), which End writes as billed in
// response.completed. Thinking blocks and the blocks of server tools are
// dropped: the request asked for neither.
type rsAntStream struct {
	w *rsWriter
	// calls maps a tool_use block's index to its call's item.
	calls  map[int]int
	counts antCounts

	// The events a stream repeats are decoded into these, zeroed first
	// (Unmarshal leaves the members an event omits untouched).
	block anthropic.ContentBlockStart
	delta anthropic.ContentBlockDelta
}

func (s *rsAntStream) Event(typ, data []byte, out []Chunk) ([]Chunk, bool, error) {
	s.w.buf = s.w.buf[:0]
	name, err := antEventName(typ, data)
	if err != nil {
		return out, false, err
	}
	switch name {
	case anthropic.EventMessageStart:
		var e anthropic.MessageStart
		if err := json.Unmarshal(data, &e, lenient); err != nil {
			return out, false, antMalformedEvent()
		}
		s.counts.note(e.Message.Usage)
		return s.w.start(out), false, nil
	case anthropic.EventContentBlockStart:
		e := &s.block
		*e = anthropic.ContentBlockStart{}
		if err := json.Unmarshal(data, e, lenient); err != nil {
			return out, false, antMalformedEvent()
		}
		switch b := &e.ContentBlock; b.Type {
		case anthropic.BlockText:
			return s.w.text(out, b.TextOf(), false), false, nil
		case anthropic.BlockToolUse:
			if s.calls == nil {
				s.calls = make(map[int]int)
			}
			// Its input (an empty object here) follows in input_json_delta
			// events.
			s.calls[e.Index], out = s.w.toolStart(out, b.ID, b.Name)
		}
		return out, false, nil
	case anthropic.EventContentBlockDelta:
		e := &s.delta
		*e = anthropic.ContentBlockDelta{}
		if err := json.Unmarshal(data, e, lenient); err != nil {
			return out, false, antMalformedEvent()
		}
		switch e.Delta.Type {
		case anthropic.DeltaText:
			return s.w.text(out, e.Delta.Text, false), false, nil
		case anthropic.DeltaInputJSON:
			if i, ok := s.calls[e.Index]; ok {
				return s.w.toolArgs(out, i, e.Delta.PartialJSON), false, nil
			}
		}
		return out, false, nil
	case anthropic.EventMessageDelta:
		return s.messageDelta(data, out)
	}
	done, err := antOtherEvent(name, data)
	return out, done, err
}

// messageDelta ends the message: the stop reason says whether the
// response is complete, the items close, and the provider's final counts
// go to the gateway when the prompt's are known.
func (s *rsAntStream) messageDelta(data []byte, out []Chunk) ([]Chunk, bool, error) {
	var e anthropic.MessageDelta
	if err := json.Unmarshal(data, &e, lenient); err != nil {
		return out, false, antMalformedEvent()
	}
	s.counts.note(e.Usage)
	s.w.finish(e.Delta.StopReason, rsAntFinish(e.Delta.StopReason))
	out = s.w.closeAll(s.w.start(out))
	if u := s.counts.final(e.Usage); u != nil {
		out = append(out, Chunk{Usage: u})
	}
	return out, false, nil
}

// End closes the items and writes response.completed (or .incomplete)
// with u, the counts the gateway bills. buf is not reset: the last
// event's chunks may still be unwritten.
func (s *rsAntStream) End(u Usage, out []Chunk) []Chunk { return s.w.end(out, &u) }

// Fail writes response.failed with the response so far.
func (s *rsAntStream) Fail(code, message string, out []Chunk) []Chunk {
	return s.w.fail(out, code, message)
}
