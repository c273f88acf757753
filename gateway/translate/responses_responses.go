package translate

import (
	"bytes"
	"strconv"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/llmgw/llmgw/api/wire/openai"
)

// responsesResponses passes a Responses request through to a provider
// that serves the Responses API itself: the body as the caller sent it but
// for model (a Responses stream always reports its usage, in
// response.completed). The answer and the stream's events come back as the
// provider sent them but for the response's model, read only for the
// usage, the text the gateway counts when there is none, the commit point
// and failures. Every unexported name of the pair starts with "rr".
type responsesResponses struct{}

func (responsesResponses) Request(req *ChatRequest, model string) ([][]byte, error) {
	o, err := memberSpans(req.Body, "model")
	if err != nil {
		return nil, err // the server validated the body: a defect, not a caller's error
	}
	return splice(req.Body, setMembers(o, memberValue{"model", quoted(model)})), nil
}

// rrUsage is the protocol's counts in the gateway's semantics, which are
// the same (cached tokens part of the input, reasoning tokens part of the
// output); the details objects are optional.
func rrUsage(u *openai.ResponsesUsage) *Usage {
	out := &Usage{InputTokens: u.InputTokens, OutputTokens: u.OutputTokens}
	if d := u.InputTokensDetails; d != nil {
		out.CachedInputTokens = d.CachedTokens
	}
	if d := u.OutputTokensDetails; d != nil {
		out.ReasoningTokens = d.ReasoningTokens
	}
	return out
}

// rrReadUsage reads a usage member; nil when it is null.
func rrReadUsage(v jsontext.Value) (*Usage, error) {
	if v.Kind() == 'n' {
		return nil, nil
	}
	var u openai.ResponsesUsage
	if err := json.Unmarshal(v, &u, lenient); err != nil {
		return nil, malformed("malformed usage in the response")
	}
	return rrUsage(&u), nil
}

// rrFailed is the Failure of a response whose status is failed and whose
// error is null (relayObject reports one with an error).
func rrFailed() *Failure { return &Failure{Message: "the response failed"} }

// rrReason is why a response ended, the protocol's nearest to a finish
// reason: incomplete_details.reason ("max_output_tokens",
// "content_filter") when it says one, else the status ("completed"); ""
// when the response has neither. incomplete_details is read only for the
// gateway's telemetry: one that is not the protocol's object is passed
// over, as the answer it is in is relayed whatever it holds.
func rrReason(status string, details jsontext.Value) string {
	var d openai.IncompleteDetails
	if details.Kind() == '{' && json.Unmarshal(details, &d, lenient) == nil && d.Reason != "" {
		return d.Reason
	}
	return status
}

func (responsesResponses) Answer(raw []byte, m *Meta) (*Answer, error) {
	a := &Answer{}
	var (
		status     string
		output     jsontext.Value
		incomplete jsontext.Value // incomplete_details
	)
	body, err := relayObject(make([]byte, 0, len(raw)+len(m.Alias)+1), raw, m.Alias, "malformed response JSON", func(mb *member) (bool, error) {
		var err error
		switch mb.name {
		case "status":
			if json.Unmarshal(mb.value, &status, lenient) != nil {
				return false, malformed("malformed status in the response")
			}
		case "output":
			output = mb.value
		case "incomplete_details":
			incomplete = mb.value
		case "usage":
			a.Usage, err = rrReadUsage(mb.value)
		}
		return true, err
	})
	switch {
	case err != nil:
		return nil, err
	case status == openai.ResponseStatusFailed:
		return nil, rrFailed()
	case output.Kind() != '[':
		return nil, malformed("answer is not a response")
	}
	a.Body = append(body, '\n')
	a.FinishReason = rrReason(status, incomplete)
	if a.Usage == nil {
		var items []openai.OutputItem
		if err := json.Unmarshal(output, &items, lenient); err != nil {
			return nil, malformed("malformed output in the response")
		}
		a.Text = rrSaid(items)
	}
	return a, nil
}

// rrSaid is what output items say: their text and refusals, the arguments
// and inputs of their calls.
func rrSaid(items []openai.OutputItem) string {
	var b bytes.Buffer
	for i := range items {
		for _, c := range items[i].Content {
			b.WriteString(antStr(c.Text))
			b.WriteString(antStr(c.Refusal))
		}
		b.WriteString(antStr(items[i].Arguments))
		b.WriteString(antStr(items[i].Input))
	}
	return b.String()
}

func (responsesResponses) Stream(m *Meta) ChatStream { return &rrStream{meta: m} }

// rrStream relays one stream's events. Each event's data is copied into
// buf (a lifecycle event's with the alias as its response's model), which
// the next event reuses, so that a chunk does not hold on to the reader's
// buffer.
type rrStream struct {
	meta *Meta
	buf  []byte
	// seq is the last relayed event's sequence_number (seen: there was
	// one), for the response.failed Fail writes after it.
	seq  int
	seen bool
	// resp is the last lifecycle event's response (model the alias),
	// which Fail reports failed.
	resp []byte
}

func rrMalformedEvent() *Failure { return malformed("malformed stream event JSON") }

// rrItemHead is what the stream reads of response.output_item.added: the
// item's type.
type rrItemHead struct {
	Item struct {
		Type string `json:"type"`
	} `json:"item"`
}

func (s *rrStream) Event(typ, data []byte, out []Chunk) ([]Chunk, bool, error) {
	var head openai.ResponsesEventHead
	if json.Unmarshal(data, &head, lenient) != nil {
		return out, false, rrMalformedEvent()
	}
	name := string(typ)
	if name == "" {
		name = head.Type
	}
	if name == "" {
		return out, false, rrMalformedEvent() // every event of the protocol has a type, which names it
	}
	c := Chunk{Event: name}
	switch name {
	case openai.EventResponseCreated, openai.EventResponseInProgress, openai.EventResponseCompleted,
		openai.EventResponseIncomplete, openai.EventResponseFailed:
		return s.lifecycle(name, head.SequenceNumber, data, out)
	case openai.EventOutputTextDelta, openai.EventRefusalDelta, openai.EventFunctionCallArgumentsDelta, openai.EventCustomToolCallInputDelta:
		// These four events have the same members, the delta among them.
		var e openai.CustomToolCallInputEvent
		if json.Unmarshal(data, &e, lenient) != nil {
			return out, false, rrMalformedEvent()
		}
		c.Text = antStr(e.Delta)
		c.Commit = c.Text != ""
	case openai.EventOutputItemAdded:
		var e rrItemHead
		if json.Unmarshal(data, &e, lenient) != nil {
			return out, false, rrMalformedEvent()
		}
		c.Commit = e.Item.Type == openai.ItemFunctionCall || e.Item.Type == openai.ItemCustomToolCall
	case openai.EventResponsesError:
		var e openai.ResponsesErrorEvent
		if json.Unmarshal(data, &e, lenient) != nil {
			return out, false, rrMalformedEvent()
		}
		// The server writes the caller's closing event itself, redacted.
		f := &Failure{Type: antStr(e.Code), Message: e.Message}
		if f.Message == "" {
			f.Message = "upstream error event"
		}
		return out, false, f
	}
	s.seq, s.seen = head.SequenceNumber, true
	s.buf = append(s.buf[:0], data...)
	c.Data = s.buf[:len(s.buf):len(s.buf)]
	return append(out, c), false, nil
}

// lifecycle relays a lifecycle event with the alias as its response's
// model: the usage and the reason (rrReason) of response.completed and
// response.incomplete, which end the stream; response.failed (or a
// response with an error) is the provider's Failure.
func (s *rrStream) lifecycle(name string, seq int, data []byte, out []Chunk) ([]Chunk, bool, error) {
	c := Chunk{Event: name}
	var w objectWriter
	w.begin(s.buf[:0])
	var resp []byte
	status := ""
	var incomplete jsontext.Value // incomplete_details, valid as long as data
	err := eachMember(data, func(mb *member) error {
		if mb.name != "response" {
			w.raw(mb.rawName, mb.value)
			return nil
		}
		w.raw(mb.rawName, nil) // the name, then the response written in place
		at := len(w.b)
		var err error
		w.b, err = relayObject(w.b, mb.value, s.meta.Alias, "malformed stream event JSON", func(m *member) (bool, error) {
			var err error
			switch m.name {
			case "usage":
				c.Usage, err = rrReadUsage(m.value)
			case "status":
				if json.Unmarshal(m.value, &status, lenient) != nil {
					err = rrMalformedEvent()
				}
			case "incomplete_details":
				incomplete = m.value
			}
			return true, err
		})
		if err == nil {
			resp = w.b[at:]
		}
		return err
	}, lenient)
	switch {
	case err != nil:
		return out, false, asFailure(err, "malformed stream event JSON")
	case resp == nil:
		return out, false, rrMalformedEvent()
	case name == openai.EventResponseFailed || status == openai.ResponseStatusFailed:
		return out, false, rrFailed()
	}
	s.seq, s.seen = seq, true
	s.buf = w.end()
	s.resp = append(s.resp[:0], resp...)
	c.Data = s.buf[:len(s.buf):len(s.buf)]
	done := name == openai.EventResponseCompleted || name == openai.EventResponseIncomplete
	if done {
		c.FinishReason = rrReason(status, incomplete)
	}
	return append(out, c), done, nil
}

// End adds nothing: the provider's own events closed the stream.
func (s *rrStream) End(_ Usage, out []Chunk) []Chunk { return out }

// Fail writes response.failed after the provider's last event: the last
// response it reported (the provider's id and echo members), status
// failed, with the error the caller is told. Its output is that
// response's, as the provider last wrote it (empty before
// response.completed): the items the caller was sent in output_item.done
// events stand as they were.
func (s *rrStream) Fail(code, message string, out []Chunk) []Chunk {
	seq := 0
	if s.seen {
		seq = s.seq + 1
	}
	errJSON := appendJSON(nil, &openai.ResponseError{Code: code, Message: message})
	var resp []byte
	if o, err := memberSpans(s.resp, "status", "error"); err == nil {
		for _, seg := range splice(s.resp, setMembers(o, memberValue{"status", quoted(openai.ResponseStatusFailed)}, memberValue{"error", errJSON})) {
			resp = append(resp, seg...)
		}
	} else {
		// No response seen (or none the gateway could read): the gateway's.
		resp = appendJSON(nil, &openai.Response{ID: s.meta.ID, Object: openai.ObjectResponse, CreatedAt: s.meta.Created, Status: openai.ResponseStatusFailed,
			Error: &openai.ResponseError{Code: code, Message: message}, Model: s.meta.Alias, Output: []openai.OutputItem{}})
	}
	var w objectWriter
	w.begin(nil)
	w.set("type", quoted(openai.EventResponseFailed))
	w.set("sequence_number", []byte(strconv.Itoa(seq)))
	w.set("response", resp)
	return append(out, Chunk{Event: openai.EventResponseFailed, Data: w.end()})
}
