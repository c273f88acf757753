package translate

import "github.com/llmgw/llmgw/api/wire/anthropic"

// Answer is the response for a Messages answer: its text blocks as a
// message item (a text block after a tool_use block opens another), its
// tool_use blocks as function_call items (custom_tool_call items for the
// calls of custom tools). Thinking blocks, and the blocks of server tools,
// are dropped: the request asked for neither.
func (p *responsesToAnthropic) Answer(raw []byte, m *Meta) (*Answer, error) {
	r, err := readAntAnswer(raw)
	if err != nil {
		return nil, err
	}
	w := newRSWriter(m, &p.echo, false)
	for i := range r.Content {
		b := &r.Content[i]
		switch b.Type {
		case anthropic.BlockText:
			w.text(nil, b.TextOf(), false)
		case anthropic.BlockToolUse:
			args, err := antArguments(b.Input)
			if err != nil {
				return nil, err
			}
			at, _ := w.toolStart(nil, b.ID, b.Name)
			w.toolArgs(nil, at, args)
		}
	}
	w.finish(antDeref(r.StopReason), rsAntFinish(antDeref(r.StopReason)))
	var u *Usage
	if in, cached, ok := antInput(r.Usage); ok && r.Usage.OutputTokens != nil {
		// Both counts or none: half of them would bill a guess as the
		// provider's number.
		u = &Usage{InputTokens: in, CachedInputTokens: cached, OutputTokens: *r.Usage.OutputTokens}
	}
	return w.answer(u), nil
}

// rsAntFinish is the incomplete reason of a stop_reason: the answer was
// cut by the token limit (or the context window), or refused; "" for a
// whole one (end_turn, tool_use, stop_sequence, pause_turn, or a reason
// this gateway does not know).
func rsAntFinish(stop string) string {
	switch stop {
	case anthropic.StopMaxTokens, anthropic.StopContextLimit:
		return rsCutByLimit
	case anthropic.StopRefusal:
		return rsFiltered
	}
	return ""
}
