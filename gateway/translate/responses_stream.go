package translate

import (
	"strconv"
	"strings"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/llmgw/llmgw/api/wire/openai"
)

// rsWriter writes a Responses answer from neutral calls, for both
// translations: text (or refusal) deltas, a tool call's start and pieces
// of its arguments, the finish, and the end with the usage billed. In a
// stream (events) each call appends the Responses events it makes:
// response.created and response.in_progress before anything else; per
// output item output_item.added, then for a message content_part.added,
// output_text.delta (refusal.delta) events, output_text.done,
// content_part.done; for a function call function_call_arguments.delta
// events and .done; output_item.done; last response.completed (or
// .incomplete, or .failed) with the whole response. Without events it only
// gathers the response, which an Answer writes.
//
// A message item is closed when a tool call opens; tool call items stay
// open until the finish (a chat provider may interleave the pieces of its
// calls) and are closed in order then. A custom tool's call is a function
// call of one string, input, whose pieces are JSON: its input is known
// whole only at the close, where it is written in one
// custom_tool_call_input.delta and .done.
//
// Item ids derive from the response's id (Meta.ID, resp_<suffix>):
// msg_<suffix> for the first message, fc_<suffix>_<n> and ctc_<suffix>_<n>
// for the calls at output index n (msg_<suffix>_<n> for a later message).
type rsWriter struct {
	meta   *Meta
	echo   *rsEcho
	events bool

	seq     int
	started bool
	// buf holds the JSON of the events one call makes; a stream resets it
	// at each provider event (the ChatStream contract allows it).
	buf   []byte
	items []rsOutItem
	msg   int // the open message item's index in items, -1 when none
	// incomplete is incomplete_details.reason: max_output_tokens or
	// content_filter; "" for a whole answer.
	incomplete string
	// reason is why the provider stopped, in its own protocol's words: the
	// answer's FinishReason, and the closing event's chunk's.
	reason string
}

// rsOutItem is one output item being built: the item as it is written, and
// for an open one its open part's text (a message) or its arguments.
type rsOutItem struct {
	item     openai.OutputItem
	open     bool
	text     []byte
	partOpen bool
	refusal  bool // the open part is a refusal
}

func newRSWriter(m *Meta, echo *rsEcho, events bool) *rsWriter {
	if echo == nil {
		echo = &rsEcho{}
	}
	return &rsWriter{meta: m, echo: echo, events: events, msg: -1}
}

// emit appends the event v (named name) to out as c, its Data the JSON of
// v in buf; nothing without events. Data's capacity ends with it, so that
// a caller appending to it cannot overwrite what follows.
func (w *rsWriter) emit(out []Chunk, name string, v any, c Chunk) []Chunk {
	if !w.events {
		return out
	}
	start := len(w.buf)
	w.buf = antAppendAnswer(w.buf, v)
	c.Event, c.Data = name, w.buf[start:len(w.buf):len(w.buf)]
	return append(out, c)
}

// next is the next event's sequence_number.
func (w *rsWriter) next() int {
	n := w.seq
	w.seq++
	return n
}

// start writes response.created and response.in_progress, once.
func (w *rsWriter) start(out []Chunk) []Chunk {
	if w.started {
		return out
	}
	w.started = true
	for _, name := range []string{openai.EventResponseCreated, openai.EventResponseInProgress} {
		out = w.emit(out, name, &openai.ResponseEvent{Type: name, SequenceNumber: w.next(), Response: w.response(openai.ResponseStatusInProgress, nil)}, Chunk{})
	}
	return out
}

// itemID is the id of the item of kind prefix at output index n.
func (w *rsWriter) itemID(prefix string, n int) string {
	id := prefix + "_" + strings.TrimPrefix(w.meta.ID, "resp_")
	if n == 0 && prefix == "msg" {
		return id
	}
	return id + "_" + strconv.Itoa(n)
}

// text adds s to the answer's text (refusal: to a refusal part), opening
// a message item and a part of that kind first if need be.
func (w *rsWriter) text(out []Chunk, s string, refusal bool) []Chunk {
	if s == "" {
		return out
	}
	out = w.start(out)
	if w.msg < 0 {
		w.msg = len(w.items)
		it := openai.OutputItem{ID: w.itemID("msg", w.msg), Type: openai.ItemMessage, Status: openai.ResponseStatusInProgress,
			Role: openai.RoleAssistant, Content: []openai.ContentItem{}}
		w.items = append(w.items, rsOutItem{item: it, open: true})
		out = w.emit(out, openai.EventOutputItemAdded, &openai.OutputItemEvent{Type: openai.EventOutputItemAdded, SequenceNumber: w.next(), OutputIndex: w.msg, Item: it}, Chunk{})
	}
	m := &w.items[w.msg]
	if m.partOpen && m.refusal != refusal {
		out = w.closePart(out, w.msg)
	}
	if !m.partOpen {
		m.partOpen, m.refusal, m.text = true, refusal, m.text[:0]
		part := rsPartOf("", refusal)
		m.item.Content = append(m.item.Content, part)
		out = w.emit(out, openai.EventContentPartAdded, &openai.ContentPartEvent{Type: openai.EventContentPartAdded, SequenceNumber: w.next(),
			ItemID: m.item.ID, OutputIndex: w.msg, ContentIndex: len(m.item.Content) - 1, Part: part}, Chunk{})
	}
	m.text = append(m.text, s...)
	c := Chunk{Commit: true, Text: s}
	if refusal {
		return w.emit(out, openai.EventRefusalDelta, &openai.RefusalEvent{Type: openai.EventRefusalDelta, SequenceNumber: w.next(),
			ItemID: m.item.ID, OutputIndex: w.msg, ContentIndex: len(m.item.Content) - 1, Delta: &s}, c)
	}
	return w.emit(out, openai.EventOutputTextDelta, &openai.OutputTextEvent{Type: openai.EventOutputTextDelta, SequenceNumber: w.next(),
		ItemID: m.item.ID, OutputIndex: w.msg, ContentIndex: len(m.item.Content) - 1, Delta: &s, Logprobs: rsNoLogprobs}, c)
}

var rsNoLogprobs = jsontext.Value("[]")

// rsPartOf is a content part holding s: output_text, or a refusal.
func rsPartOf(s string, refusal bool) openai.ContentItem {
	if refusal {
		return openai.ContentItem{Type: openai.PartRefusal, Refusal: &s}
	}
	return openai.OutputText(s)
}

// closePart closes the open part of message item i.
func (w *rsWriter) closePart(out []Chunk, i int) []Chunk {
	m := &w.items[i]
	if !m.partOpen {
		return out
	}
	m.partOpen = false
	s := string(m.text)
	at := len(m.item.Content) - 1
	m.item.Content[at] = rsPartOf(s, m.refusal)
	if m.refusal {
		out = w.emit(out, openai.EventRefusalDone, &openai.RefusalEvent{Type: openai.EventRefusalDone, SequenceNumber: w.next(),
			ItemID: m.item.ID, OutputIndex: i, ContentIndex: at, Refusal: &s}, Chunk{})
	} else {
		out = w.emit(out, openai.EventOutputTextDone, &openai.OutputTextEvent{Type: openai.EventOutputTextDone, SequenceNumber: w.next(),
			ItemID: m.item.ID, OutputIndex: i, ContentIndex: at, Text: &s, Logprobs: rsNoLogprobs}, Chunk{})
	}
	return w.emit(out, openai.EventContentPartDone, &openai.ContentPartEvent{Type: openai.EventContentPartDone, SequenceNumber: w.next(),
		ItemID: m.item.ID, OutputIndex: i, ContentIndex: at, Part: m.item.Content[at]}, Chunk{})
}

// toolStart opens a tool call's item (a custom_tool_call when name is a
// custom tool's) and returns its index, for toolArgs.
func (w *rsWriter) toolStart(out []Chunk, callID, name string) (int, []Chunk) {
	out = w.start(out)
	out = w.closeMessage(out)
	n := len(w.items)
	empty := ""
	it := openai.OutputItem{ID: w.itemID("fc", n), Type: openai.ItemFunctionCall, Status: openai.ResponseStatusInProgress,
		CallID: callID, Name: name, Arguments: &empty}
	if w.echo.custom[name] {
		it.ID, it.Type, it.Arguments, it.Input = w.itemID("ctc", n), openai.ItemCustomToolCall, nil, &empty
	}
	w.items = append(w.items, rsOutItem{item: it, open: true})
	return n, w.emit(out, openai.EventOutputItemAdded, &openai.OutputItemEvent{Type: openai.EventOutputItemAdded, SequenceNumber: w.next(), OutputIndex: n, Item: it}, Chunk{Commit: true})
}

// toolArgs adds s to the arguments of the call at index i.
func (w *rsWriter) toolArgs(out []Chunk, i int, s string) []Chunk {
	if s == "" || i < 0 || i >= len(w.items) || !w.items[i].open {
		return out
	}
	it := &w.items[i]
	it.text = append(it.text, s...)
	if it.item.Type == openai.ItemCustomToolCall {
		return out // written whole at the close
	}
	return w.emit(out, openai.EventFunctionCallArgumentsDelta, &openai.FunctionCallArgumentsEvent{Type: openai.EventFunctionCallArgumentsDelta,
		SequenceNumber: w.next(), ItemID: it.item.ID, OutputIndex: i, Delta: &s}, Chunk{Commit: true, Text: s})
}

// finish records why the provider stopped: reason as it said it, and
// incomplete, the reason a response is incomplete (rsCutByLimit,
// rsFiltered), "" when it is whole.
func (w *rsWriter) finish(reason, incomplete string) {
	w.reason, w.incomplete = reason, incomplete
}

// The reasons of an incomplete response.
const (
	rsCutByLimit = "max_output_tokens"
	rsFiltered   = "content_filter"
)

// itemStatus is the status of an item closed now.
func (w *rsWriter) itemStatus() string {
	if w.incomplete != "" {
		return openai.ResponseStatusIncomplete
	}
	return openai.ResponseStatusCompleted
}

func (w *rsWriter) closeMessage(out []Chunk) []Chunk {
	if w.msg < 0 {
		return out
	}
	i := w.msg
	w.msg = -1
	return w.closeItem(out, i)
}

// closeItem closes the open item i.
func (w *rsWriter) closeItem(out []Chunk, i int) []Chunk {
	it := &w.items[i]
	if !it.open {
		return out
	}
	it.open = false
	switch it.item.Type {
	case openai.ItemMessage:
		out = w.closePart(out, i)
		if w.msg == i {
			w.msg = -1
		}
	case openai.ItemFunctionCall:
		args := rsArguments(it.text)
		it.item.Arguments = &args
		out = w.emit(out, openai.EventFunctionCallArgumentsDone, &openai.FunctionCallArgumentsEvent{Type: openai.EventFunctionCallArgumentsDone,
			SequenceNumber: w.next(), ItemID: it.item.ID, OutputIndex: i, Name: it.item.Name, Arguments: &args}, Chunk{})
	case openai.ItemCustomToolCall:
		input := rsCustomInput(it.text)
		it.item.Input = &input
		if input != "" {
			out = w.emit(out, openai.EventCustomToolCallInputDelta, &openai.CustomToolCallInputEvent{Type: openai.EventCustomToolCallInputDelta,
				SequenceNumber: w.next(), ItemID: it.item.ID, OutputIndex: i, Delta: &input}, Chunk{Commit: true, Text: input})
		}
		out = w.emit(out, openai.EventCustomToolCallInputDone, &openai.CustomToolCallInputEvent{Type: openai.EventCustomToolCallInputDone,
			SequenceNumber: w.next(), ItemID: it.item.ID, OutputIndex: i, Input: &input}, Chunk{})
	}
	it.text = nil
	it.item.Status = w.itemStatus()
	return w.emit(out, openai.EventOutputItemDone, &openai.OutputItemEvent{Type: openai.EventOutputItemDone, SequenceNumber: w.next(), OutputIndex: i, Item: it.item}, Chunk{})
}

// closeAll closes the open items, in order.
func (w *rsWriter) closeAll(out []Chunk) []Chunk {
	for i := range w.items {
		out = w.closeItem(out, i)
	}
	return out
}

// rsArguments is a function call's arguments as the item has them: as the
// provider wrote them, {} when it wrote none (clients parse them as JSON).
func rsArguments(b []byte) string {
	if antIsBlank(string(b)) {
		return "{}"
	}
	return string(b)
}

// rsCustomInput is a custom tool's input from the arguments of the
// function it became: their string member input; the arguments as written
// when they are not such an object, so that the tool sees what the model
// wrote.
func rsCustomInput(args []byte) string {
	var a struct {
		Input *string `json:"input"`
	}
	if json.Unmarshal(args, &a, lenient) == nil && a.Input != nil {
		return *a.Input
	}
	return string(args)
}

// response is the response object as it stands, with the request's echo.
// An item still open (a failed stream's) is written as far as it got,
// status incomplete.
func (w *rsWriter) response(status string, u *Usage) openai.Response {
	r := w.echo.resp
	r.ID, r.Object, r.CreatedAt, r.Status, r.Model = w.meta.ID, openai.ObjectResponse, w.meta.Created, status, w.meta.Alias
	r.Output = make([]openai.OutputItem, len(w.items))
	for i := range w.items {
		r.Output[i] = w.items[i].snapshot()
	}
	if w.incomplete != "" && status == openai.ResponseStatusIncomplete {
		r.IncompleteDetails = &openai.IncompleteDetails{Reason: w.incomplete}
	}
	if u != nil {
		r.Usage = &openai.ResponsesUsage{
			InputTokens: u.InputTokens, InputTokensDetails: &openai.InputTokensDetails{CachedTokens: u.CachedInputTokens},
			OutputTokens: u.OutputTokens, OutputTokensDetails: &openai.OutputTokensDetails{ReasoningTokens: u.ReasoningTokens},
			TotalTokens: u.InputTokens + u.OutputTokens,
		}
	}
	return r
}

// snapshot is the item as written now: an open one with what it has so
// far.
func (it *rsOutItem) snapshot() openai.OutputItem {
	out := it.item
	if !it.open {
		return out
	}
	out.Status = openai.ResponseStatusIncomplete
	s := string(it.text)
	switch out.Type {
	case openai.ItemMessage:
		out.Content = append([]openai.ContentItem(nil), out.Content...)
		if it.partOpen {
			out.Content[len(out.Content)-1] = rsPartOf(s, it.refusal)
		}
	case openai.ItemFunctionCall:
		out.Arguments = &s
	case openai.ItemCustomToolCall:
		out.Input = &s
	}
	return out
}

// finalStatus is the response's status once it ended cleanly.
func (w *rsWriter) finalStatus() string {
	if w.incomplete != "" {
		return openai.ResponseStatusIncomplete
	}
	return openai.ResponseStatusCompleted
}

// end closes the open items and writes response.completed (or
// response.incomplete) with u, the counts the gateway bills.
func (w *rsWriter) end(out []Chunk, u *Usage) []Chunk {
	out = w.start(out)
	out = w.closeAll(out)
	status := w.finalStatus()
	name := openai.EventResponseCompleted
	if status == openai.ResponseStatusIncomplete {
		name = openai.EventResponseIncomplete
	}
	return w.emit(out, name, &openai.ResponseEvent{Type: name, SequenceNumber: w.next(), Response: w.response(status, u)}, Chunk{FinishReason: w.reason})
}

// fail writes response.failed: the response so far, its open items as far
// as they got, and the error the caller is told.
func (w *rsWriter) fail(out []Chunk, code, message string) []Chunk {
	out = w.start(out)
	r := w.response(openai.ResponseStatusFailed, nil)
	r.IncompleteDetails = nil
	r.Error = &openai.ResponseError{Code: code, Message: message}
	return w.emit(out, openai.EventResponseFailed, &openai.ResponseEvent{Type: openai.EventResponseFailed, SequenceNumber: w.next(), Response: r}, Chunk{})
}

// said is what the answer says (text, refusals, arguments, inputs), for
// the gateway's own count when the provider reported no usage.
func (w *rsWriter) said() string {
	var b strings.Builder
	for i := range w.items {
		it := w.items[i].snapshot()
		for _, c := range it.Content {
			b.WriteString(antStr(c.Text))
			b.WriteString(antStr(c.Refusal))
		}
		b.WriteString(antStr(it.Arguments))
		b.WriteString(antStr(it.Input))
	}
	return b.String()
}

// answer is the JSON answer: the response as it ended, with u (nil: the
// provider reported none, and usage is null).
func (w *rsWriter) answer(u *Usage) *Answer {
	w.closeAll(nil)
	r := w.response(w.finalStatus(), u)
	a := &Answer{Usage: u, Body: append(appendJSON(nil, &r), '\n'), FinishReason: w.reason}
	if u == nil {
		a.Text = w.said()
	}
	return a
}
