package translate

// Answer is the response for a chat.completion: its first choice's
// content (and refusal) as a message item, its tool calls as function_call
// items (custom_tool_call items for the calls of custom tools).
func (p *responsesToOpenAI) Answer(raw []byte, m *Meta) (*Answer, error) {
	r, err := readChatAnswer(raw)
	if err != nil {
		return nil, err
	}
	c := &r.Choices[0]
	w := newRSWriter(m, &p.echo, false)
	w.text(nil, antStr(c.Message.Content), false)
	w.text(nil, antStr(c.Message.Refusal), true)
	for _, tc := range c.Message.ToolCalls {
		i, _ := w.toolStart(nil, tc.ID, tc.Function.Name)
		w.toolArgs(nil, i, tc.Function.Arguments)
	}
	w.finish(c.FinishReason, rsChatFinish(c.FinishReason))
	var u *Usage
	if r.Usage != nil {
		u = oaiUsage(r.Usage)
	}
	return w.answer(u), nil
}

// rsChatFinish is the incomplete reason of a finish_reason: the answer
// was cut by the token limit, or filtered; "" for a whole one (stop,
// tool_calls, or a reason this gateway does not know).
func rsChatFinish(reason string) string {
	switch reason {
	case "length":
		return rsCutByLimit
	case "content_filter":
		return rsFiltered
	}
	return ""
}
