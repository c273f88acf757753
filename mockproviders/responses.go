package mockproviders

import (
	"net/http"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/llmgw/llmgw/api/wire/openai"
)

// The Responses answer has one output item: a message with one
// output_text part, or a function_call. Ids derive from the answer id:
// resp_, msg_ (the message item), fc_ (the function_call item) and call_
// (its call_id, which the tool output names).

func (x *exchange) respID() string { return "resp_" + x.ans.id }

// itemID is the id of the answer's output item.
func (x *exchange) itemID() string {
	if x.ans.call != nil {
		return "fc_" + x.ans.id
	}
	return "msg_" + x.ans.id
}

// nextSeq is the next event's sequence_number.
func (x *exchange) nextSeq() int {
	n := x.seq
	x.seq++
	return n
}

// responsesUsage always has both details objects, as OpenAI sends them;
// cached tokens are part of input_tokens, reasoning tokens of
// output_tokens.
func responsesUsage(x *exchange) *openai.ResponsesUsage {
	if x.noUsage {
		return nil
	}
	u := x.usage()
	return &openai.ResponsesUsage{
		InputTokens: u.input, InputTokensDetails: &openai.InputTokensDetails{CachedTokens: u.cached},
		OutputTokens: u.output, OutputTokensDetails: &openai.OutputTokensDetails{ReasoningTokens: u.reasoning},
		TotalTokens: u.input + u.output,
	}
}

// responseOf is the response object: in_progress with no output (the
// opening events), or final with the output item and the usage.
func responseOf(x *exchange, final bool) openai.Response {
	out := openai.Response{ID: x.respID(), Object: openai.ObjectResponse, CreatedAt: mockCreated,
		Status: openai.ResponseStatusInProgress, Model: x.ans.model, Output: []openai.OutputItem{}}
	if !final {
		return out
	}
	out.Status = openai.ResponseStatusCompleted
	if x.ans.finish == finishLength {
		out.Status = openai.ResponseStatusIncomplete
		out.IncompleteDetails = &openai.IncompleteDetails{Reason: "max_output_tokens"}
	}
	out.Output = []openai.OutputItem{outputItem(x, true)}
	out.Usage = responsesUsage(x)
	return out
}

// outputItem is the answer's output item, whole (done) or as a stream
// opens it (empty content, arguments "").
func outputItem(x *exchange, done bool) openai.OutputItem {
	status := openai.ResponseStatusInProgress
	if done {
		status = openai.ResponseStatusCompleted
		if x.ans.finish == finishLength {
			status = openai.ResponseStatusIncomplete
		}
	}
	if c := x.ans.call; c != nil {
		args := ""
		if done {
			args = c.args
		}
		return openai.OutputItem{ID: x.itemID(), Type: openai.ItemFunctionCall, Status: status,
			CallID: callID("call_", x.ans), Name: c.name, Arguments: &args}
	}
	item := openai.OutputItem{ID: x.itemID(), Type: openai.ItemMessage, Status: status, Role: "assistant",
		Content: []openai.ContentItem{}}
	if done {
		item.Content = []openai.ContentItem{openai.OutputText(x.ans.text)}
	}
	return item
}

func (responsesProto) jsonBody(x *exchange) []byte {
	return append(marshal(responseOf(x, true)), '\n')
}

// streamHead: response.created and response.in_progress, then for a text
// answer the message item and its output_text part; a function call's
// item opens with its first piece.
func (responsesProto) streamHead(x *exchange) [][]byte {
	head := [][]byte{
		namedEvent(openai.EventResponseCreated, openai.ResponseEvent{Type: openai.EventResponseCreated, SequenceNumber: x.nextSeq(), Response: responseOf(x, false)}),
		namedEvent(openai.EventResponseInProgress, openai.ResponseEvent{Type: openai.EventResponseInProgress, SequenceNumber: x.nextSeq(), Response: responseOf(x, false)}),
	}
	if x.ans.call != nil {
		return head
	}
	return append(head,
		namedEvent(openai.EventOutputItemAdded, openai.OutputItemEvent{Type: openai.EventOutputItemAdded, SequenceNumber: x.nextSeq(), Item: outputItem(x, false)}),
		namedEvent(openai.EventContentPartAdded, openai.ContentPartEvent{Type: openai.EventContentPartAdded, SequenceNumber: x.nextSeq(),
			ItemID: x.itemID(), Part: openai.OutputText("")}))
}

// streamPiece is an output_text delta, or for a function call: first the
// function_call item (arguments ""), then one arguments delta per piece.
func (responsesProto) streamPiece(x *exchange, i int) []byte {
	piece := x.ans.pieces[i]
	switch {
	case x.ans.call == nil:
		return namedEvent(openai.EventOutputTextDelta, openai.OutputTextEvent{Type: openai.EventOutputTextDelta, SequenceNumber: x.nextSeq(),
			ItemID: x.itemID(), Delta: &piece, Logprobs: jsontext.Value("[]")})
	case i == 0:
		return namedEvent(openai.EventOutputItemAdded, openai.OutputItemEvent{Type: openai.EventOutputItemAdded, SequenceNumber: x.nextSeq(), Item: outputItem(x, false)})
	}
	return namedEvent(openai.EventFunctionCallArgumentsDelta, openai.FunctionCallArgumentsEvent{Type: openai.EventFunctionCallArgumentsDelta,
		SequenceNumber: x.nextSeq(), ItemID: x.itemID(), Delta: &piece})
}

// streamTail closes the part and the item, then the response:
// response.completed, or response.incomplete when max_output_tokens cut
// the text; its usage is null with no_usage.
func (responsesProto) streamTail(x *exchange) ([][]byte, bool) {
	var evs [][]byte
	if c := x.ans.call; c != nil {
		evs = append(evs, namedEvent(openai.EventFunctionCallArgumentsDone, openai.FunctionCallArgumentsEvent{Type: openai.EventFunctionCallArgumentsDone,
			SequenceNumber: x.nextSeq(), ItemID: x.itemID(), Name: c.name, Arguments: &c.args}))
	} else {
		text := x.ans.text
		evs = append(evs,
			namedEvent(openai.EventOutputTextDone, openai.OutputTextEvent{Type: openai.EventOutputTextDone, SequenceNumber: x.nextSeq(),
				ItemID: x.itemID(), Text: &text, Logprobs: jsontext.Value("[]")}),
			namedEvent(openai.EventContentPartDone, openai.ContentPartEvent{Type: openai.EventContentPartDone, SequenceNumber: x.nextSeq(),
				ItemID: x.itemID(), Part: openai.OutputText(text)}))
	}
	evs = append(evs, namedEvent(openai.EventOutputItemDone, openai.OutputItemEvent{Type: openai.EventOutputItemDone, SequenceNumber: x.nextSeq(), Item: outputItem(x, true)}))
	final := responseOf(x, true)
	name := openai.EventResponseCompleted
	if final.Status == openai.ResponseStatusIncomplete {
		name = openai.EventResponseIncomplete
	}
	evs = append(evs, namedEvent(name, openai.ResponseEvent{Type: name, SequenceNumber: x.nextSeq(), Response: final}))
	return evs, !x.noUsage
}

// streamError ends the stream as a response that failed on the server:
// response.failed with error.code server_error (what a client retries),
// no output and no usage.
func (responsesProto) streamError(x *exchange) []byte {
	failed := responseOf(x, false)
	failed.Status = openai.ResponseStatusFailed
	failed.Error = &openai.ResponseError{Code: "server_error", Message: "mock fault: error_after requested by an @mock directive"}
	return namedEvent(openai.EventResponseFailed, openai.ResponseEvent{Type: openai.EventResponseFailed, SequenceNumber: x.nextSeq(), Response: failed})
}

// writeError is alpha's: the Responses protocol shares OpenAI's error body.
func (p responsesProto) writeError(w http.ResponseWriter, e *apiError) { p.alphaProto.writeError(w, e) }
