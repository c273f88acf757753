package translate

import (
	"bytes"
	"context"
	stdjson "encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-json-experiment/json"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"

	wire "github.com/llmgw/llmgw/api/wire/openai"
)

// rsBilled is what the gateway bills in the stream tests: other numbers
// than the provider's, to show that End writes the gateway's.
var rsBilled = Usage{InputTokens: 31, OutputTokens: 17, CachedInputTokens: 5, ReasoningTokens: 2}

// rsTranscript reads a provider stream: named events (Anthropic) or
// data-only ones (chat-completions).
func rsTranscript(t *testing.T, path string) []antEvent {
	t.Helper()
	b := readFile(t, path)
	if bytes.HasPrefix(b, []byte("event:")) {
		return antParseSSE(b)
	}
	var out []antEvent
	for _, d := range oaiEvents(b) {
		out = append(out, antEvent{data: d})
	}
	return out
}

// rsRunStream feeds events to a stream of a pair that translated
// rsAnswerRequest, then End (or, after a failure, Fail); it writes each
// event's chunks to out and returns them all, their data copied.
func rsRunStream(t testing.TB, p ChatPair, events []antEvent, out *bytes.Buffer) []Chunk {
	t.Helper()
	m := rsTestMeta
	s := p.Stream(&m)
	var all, chunks []Chunk
	keep := func(cs []Chunk) {
		for _, c := range cs {
			c.Data = bytes.Clone(c.Data)
			all = append(all, c)
			fmt.Fprintf(out, "-> %s commit=%v text=%q usage=%s\n   %s\n", c.Event, c.Commit, c.Text, usageString(c.Usage), c.Data)
		}
	}
	for _, e := range events {
		fmt.Fprintf(out, "<- %.70s\n", e.data)
		var done bool
		var err error
		chunks, done, err = s.Event(e.typ, e.data, chunks[:0])
		keep(chunks)
		if err != nil {
			out.WriteString(failureString(t, err))
			f, ok := s.(StreamFailer)
			if !ok {
				t.Fatalf("%T is no StreamFailer", s)
			}
			out.WriteString("<- fail\n")
			keep(f.Fail("server_error", "the provider failed", nil))
			return all
		}
		if done {
			out.WriteString("done\n")
			break
		}
	}
	out.WriteString("<- end\n")
	keep(s.End(rsBilled, nil))
	return all
}

// TestResponsesStreamGolden feeds each transcript of
// testdata/responses_{openai,anthropic}/stream/<name>.sse to a stream,
// event by event, then End (Fail after a failure); the golden file lists
// each event's chunks (event name, commit flag, text, usage, data). The
// events written must make a well-formed Responses stream, which openai-go
// reads.
func TestResponsesStreamGolden(t *testing.T) {
	for _, tc := range []struct{ name, only string }{
		{"text", ""},             // (chat) usage chunk not written; (Anthropic) thinking and ping dropped
		{"function_call", ""},    // text, then a call whose arguments come in pieces: the message closes when the call opens
		{"custom_tool_call", ""}, // apply_patch: input written whole at the close, its JSON escape split across pieces
		{"parallel_calls", ""},   // (chat) interleaved pieces of two calls, a third without arguments; cached usage
		{"length", ""},           // incomplete, max_output_tokens; (chat) reasoning dropped
		{"refusal", "openai"},    // text then a refusal part; content_filter
		{"empty", "openai"},      // nothing but [DONE]: a whole empty response
		{"error_chunk", "openai"},
		{"error_event", "anthropic"},
		{"malformed", ""},
	} {
		for _, pp := range rsPairs {
			proto := strings.TrimPrefix(filepath.Base(pp.dir), "responses_")
			if tc.only != "" && tc.only != proto {
				continue
			}
			t.Run(proto+"/"+tc.name, func(t *testing.T) {
				events := rsTranscript(t, filepath.Join(pp.dir, "stream", tc.name+".sse"))
				var out bytes.Buffer
				all := rsRunStream(t, rsPairFor(t, pp.pair, true), events, &out)
				golden(t, filepath.Join(pp.dir, "stream", tc.name+".golden"), out.Bytes())
				final := rsCheckStream(t, all)
				if final.Status != wire.ResponseStatusFailed {
					u := final.Usage
					if u == nil || u.InputTokens != rsBilled.InputTokens || u.InputTokensDetails.CachedTokens != rsBilled.CachedInputTokens ||
						u.OutputTokens != rsBilled.OutputTokens || u.OutputTokensDetails.ReasoningTokens != rsBilled.ReasoningTokens {
						t.Errorf("final usage %+v, want what the gateway bills", u)
					}
				}
				rsReadWithSDK(t, all, final)
			})
		}
	}
}

// rsCommits reports whether an event is a commit point: a text or
// refusal delta that says something, a call's item opening, a piece of
// its arguments or input.
func rsCommits(name string, data []byte) bool {
	switch name {
	case wire.EventOutputTextDelta, wire.EventRefusalDelta, wire.EventFunctionCallArgumentsDelta, wire.EventCustomToolCallInputDelta:
		var e wire.CustomToolCallInputEvent // the four have the same members
		return json.Unmarshal(data, &e) == nil && antStr(e.Delta) != ""
	case wire.EventOutputItemAdded:
		var e wire.OutputItemEvent
		return json.Unmarshal(data, &e) == nil && (e.Item.Type == wire.ItemFunctionCall || e.Item.Type == wire.ItemCustomToolCall)
	}
	return false
}

// rsCheckStream checks a translated stream: every written chunk an event
// of the wire types (nothing they lack) named by its type, sequence
// numbers 0, 1, 2..., created and in_progress first, a closing event
// last; commit points exactly where something is said; deltas that add up
// to their done events; a final response whose output is the items the
// output_item.done events gave. It returns the final response.
func rsCheckStream(t testing.TB, all []Chunk) wire.Response {
	t.Helper()
	strict := json.RejectUnknownMembers(true)
	var (
		names []string
		done  = map[int]wire.OutputItem{}
		texts = map[string]string{} // delta sums by item, part
		final wire.Response
	)
	for _, c := range all {
		if c.Data == nil {
			if c.Event != "" || c.Commit {
				t.Fatalf("a chunk without data: %+v", c)
			}
			continue
		}
		var head wire.ResponsesEventHead
		if bytes.IndexByte(c.Data, '\n') >= 0 {
			t.Fatalf("an event's data is not one line: %q", c.Data)
		}
		if err := json.Unmarshal(c.Data, &head); err != nil || head.Type != c.Event || head.SequenceNumber != len(names) {
			t.Fatalf("event %d named %q: %s", len(names), c.Event, c.Data)
		}
		names = append(names, c.Event)
		if c.Commit != rsCommits(c.Event, c.Data) {
			t.Fatalf("commit=%v: %s", c.Commit, c.Data)
		}
		var err error
		switch c.Event {
		case wire.EventResponseCreated, wire.EventResponseInProgress, wire.EventResponseCompleted, wire.EventResponseIncomplete, wire.EventResponseFailed:
			var e wire.ResponseEvent
			err = json.Unmarshal(c.Data, &e, strict)
			final = e.Response
		case wire.EventOutputItemAdded, wire.EventOutputItemDone:
			var e wire.OutputItemEvent
			err = json.Unmarshal(c.Data, &e, strict)
			if c.Event == wire.EventOutputItemDone {
				done[e.OutputIndex] = e.Item
			}
		case wire.EventContentPartAdded, wire.EventContentPartDone:
			var e wire.ContentPartEvent
			err = json.Unmarshal(c.Data, &e, strict)
		case wire.EventOutputTextDelta, wire.EventOutputTextDone:
			var e wire.OutputTextEvent
			err = json.Unmarshal(c.Data, &e, strict)
			key := fmt.Sprint(e.ItemID, e.ContentIndex)
			if e.Delta != nil {
				texts[key] += *e.Delta
			} else if texts[key] != antStr(e.Text) {
				t.Fatalf("text deltas %q, done %s", texts[key], c.Data)
			}
		case wire.EventRefusalDelta, wire.EventRefusalDone:
			var e wire.RefusalEvent
			err = json.Unmarshal(c.Data, &e, strict)
			key := fmt.Sprint(e.ItemID, e.ContentIndex)
			if e.Delta != nil {
				texts[key] += *e.Delta
			} else if texts[key] != antStr(e.Refusal) {
				t.Fatalf("refusal deltas %q, done %s", texts[key], c.Data)
			}
		case wire.EventFunctionCallArgumentsDelta, wire.EventFunctionCallArgumentsDone:
			var e wire.FunctionCallArgumentsEvent
			err = json.Unmarshal(c.Data, &e, strict)
			if e.Delta != nil {
				texts[e.ItemID] += *e.Delta
			} else if a := antStr(e.Arguments); a != texts[e.ItemID] && !(a == "{}" && texts[e.ItemID] == "") {
				t.Fatalf("argument deltas %q, done %s", texts[e.ItemID], c.Data)
			}
		case wire.EventCustomToolCallInputDelta, wire.EventCustomToolCallInputDone:
			var e wire.CustomToolCallInputEvent
			err = json.Unmarshal(c.Data, &e, strict)
			if e.Delta != nil {
				texts[e.ItemID] += *e.Delta
			} else if texts[e.ItemID] != antStr(e.Input) {
				t.Fatalf("input deltas %q, done %s", texts[e.ItemID], c.Data)
			}
		default:
			t.Fatalf("an event of an unknown type: %s", c.Data)
		}
		if err != nil {
			t.Fatalf("%s: %v", c.Data, err)
		}
	}
	if len(names) < 3 || names[0] != wire.EventResponseCreated || names[1] != wire.EventResponseInProgress {
		t.Fatalf("events %v", names)
	}
	last := names[len(names)-1]
	switch last {
	case wire.EventResponseCompleted, wire.EventResponseIncomplete:
		if final.Status != strings.TrimPrefix(last, "response.") || len(final.Output) != len(done) {
			t.Fatalf("%s with %+v, %d items done", last, final, len(done))
		}
		for i, it := range final.Output {
			a, b := appendJSON(nil, it), appendJSON(nil, done[i])
			if !bytes.Equal(a, b) {
				t.Fatalf("output[%d] %s, done as %s", i, a, b)
			}
		}
	case wire.EventResponseFailed:
		if final.Status != wire.ResponseStatusFailed || final.Error == nil || final.Usage != nil {
			t.Fatalf("failed with %+v", final)
		}
	default:
		t.Fatalf("the stream ends with %s", last)
	}
	if final.ID != rsTestMeta.ID || final.Model != rsTestMeta.Alias || final.CreatedAt != rsTestMeta.Created {
		t.Fatalf("final response %+v", final)
	}
	return final
}

// rsReadWithSDK serves the chunks as an SSE stream to openai-go's
// Responses client and reads it back: every event decodes, the text
// deltas add up to the final response's text, which openai-go reads as
// the gateway wrote it.
func rsReadWithSDK(t testing.TB, all []Chunk, final wire.Response) {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for _, c := range all {
			if c.Data != nil {
				fmt.Fprintf(w, "event: %s\ndata: %s\n\n", c.Event, c.Data)
			}
		}
	}))
	defer srv.Close()
	client := openai.NewClient(option.WithBaseURL(srv.URL), option.WithAPIKey("k"), option.WithMaxRetries(0))
	stream := client.Responses.NewStreaming(context.Background(), responses.ResponseNewParams{Model: "codex-alias"})
	var (
		n    int64
		text strings.Builder
		last responses.ResponseStreamEventUnion
	)
	for stream.Next() {
		ev := stream.Current()
		if ev.SequenceNumber != n {
			t.Fatalf("openai-go reads sequence_number %d, want %d", ev.SequenceNumber, n)
		}
		n++
		if ev.Type == wire.EventOutputTextDelta {
			text.WriteString(ev.AsResponseOutputTextDelta().Delta)
		}
		last = ev
	}
	if err := stream.Err(); err != nil {
		t.Fatalf("openai-go: %v", err)
	}
	var r responses.Response
	switch last.Type {
	case wire.EventResponseCompleted:
		r = last.AsResponseCompleted().Response
	case wire.EventResponseIncomplete:
		r = last.AsResponseIncomplete().Response
		if string(r.IncompleteDetails.Reason) != final.IncompleteDetails.Reason {
			t.Fatalf("incomplete_details %+v", r.IncompleteDetails)
		}
	case wire.EventResponseFailed:
		r = last.AsResponseFailed().Response
		if string(r.Error.Code) != final.Error.Code || r.Error.Message != final.Error.Message {
			t.Fatalf("error %+v", r.Error)
		}
		return
	default:
		t.Fatalf("openai-go read %d events, the last %s", n, last.Type)
	}
	rsCheckSDKResponse(t, &r, &final)
	if r.OutputText() != text.String() || r.Usage.TotalTokens != int64(rsBilled.InputTokens+rsBilled.OutputTokens) {
		t.Fatalf("deltas say %q, the response %q; usage %+v", text.String(), r.OutputText(), r.Usage)
	}
	rsAccumulate(t, all, &final)
}

// rsAccumulate feeds the events to openai-go's ResponseAccumulator: every
// event is accepted, and what it gathers of each item (text, arguments,
// input) is what the final response says.
func rsAccumulate(t testing.TB, all []Chunk, final *wire.Response) {
	t.Helper()
	var acc responses.ResponseAccumulator
	for _, c := range all {
		if c.Data == nil {
			continue
		}
		var ev responses.ResponsesServerEventUnion
		if err := stdjson.Unmarshal(c.Data, &ev); err != nil {
			t.Fatalf("openai-go cannot read %s: %v", c.Data, err)
		}
		if err := acc.AddEvent(ev); err != nil {
			t.Fatalf("openai-go's accumulator refuses %s: %v", c.Data, err)
		}
	}
	snap := acc.Snapshot()
	if snap.TerminalEvent == "" || snap.ResponseID != final.ID || len(snap.Output) != len(final.Output) {
		t.Fatalf("accumulated %+v", snap)
	}
	for i, o := range snap.Output {
		want := &final.Output[i]
		var text strings.Builder
		for _, c := range want.Content {
			if c.Type == wire.PartOutputText {
				text.WriteString(antStr(c.Text))
			}
		}
		var got strings.Builder
		for j := range len(o.Text) {
			got.WriteString(o.Text[int64(j)])
		}
		if o.Type != want.Type || o.ItemID != want.ID || o.CallID != want.CallID || o.Name != want.Name ||
			o.Arguments != antStr(want.Arguments) || o.Input != antStr(want.Input) || got.String() != text.String() {
			t.Fatalf("accumulated output[%d] %+v, the response has %+v", i, o, want)
		}
	}
	if _, err := acc.ReconstructedResponse(); err != nil {
		t.Fatalf("openai-go cannot reconstruct the response: %v", err)
	}
}

// TestResponsesStreamFailMidway: Fail after a call opened and text was
// said writes response.failed with the items so far, the open ones as far
// as they got and incomplete, after the last event's sequence number.
func TestResponsesStreamFailMidway(t *testing.T) {
	for _, pp := range rsPairs {
		t.Run(filepath.Base(pp.dir), func(t *testing.T) {
			events := rsTranscript(t, filepath.Join(pp.dir, "stream", "function_call.sse"))
			m := rsTestMeta
			s := rsPairFor(t, pp.pair, true).Stream(&m)
			var all []Chunk
			for _, e := range events[:len(events)-4] { // up to the call's first piece of arguments
				chunks, _, err := s.Event(e.typ, e.data, nil)
				if err != nil {
					t.Fatal(err)
				}
				for _, c := range chunks {
					c.Data = bytes.Clone(c.Data)
					all = append(all, c)
				}
			}
			all = s.(StreamFailer).Fail("rate_limit_exceeded", "slow down", all)
			final := rsCheckStream(t, all)
			if len(final.Output) != 2 || final.Output[0].Status != wire.ResponseStatusCompleted || final.Output[1].Status != wire.ResponseStatusIncomplete ||
				final.Error.Code != "rate_limit_exceeded" || final.Error.Message != "slow down" || final.IncompleteDetails != nil {
				t.Fatalf("failed response %s", appendJSON(nil, final))
			}
			if a := antStr(final.Output[1].Arguments); a == "" || !strings.HasPrefix(`{"city":"Paris"}`, strings.ReplaceAll(a, " ", "")) {
				t.Fatalf("arguments so far %q", a)
			}
			rsReadWithSDK(t, all, final)
		})
	}
}

// TestResponsesStreamChunksSurviveEnd: End may run before the last
// event's chunks are written, so it must not overwrite them.
func TestResponsesStreamChunksSurviveEnd(t *testing.T) {
	for _, pp := range rsPairs {
		t.Run(filepath.Base(pp.dir), func(t *testing.T) {
			events := rsTranscript(t, filepath.Join(pp.dir, "stream", "text.sse"))
			m := rsTestMeta
			s := rsPairFor(t, pp.pair, true).Stream(&m)
			var chunks []Chunk
			var err error
			for _, e := range events {
				if chunks, _, err = s.Event(e.typ, e.data, chunks[:0]); err != nil {
					t.Fatal(err)
				}
				if len(chunks) > 0 && chunks[0].Data != nil {
					break
				}
			}
			var before []string
			for _, c := range chunks {
				before = append(before, string(c.Data))
			}
			chunks = s.End(rsBilled, chunks)
			for i, b := range before {
				if string(chunks[i].Data) != b {
					t.Fatalf("End overwrote chunk %d: %s, was %s", i, chunks[i].Data, b)
				}
			}
		})
	}
}

// TestResponsesStreamFailures: a provider's error is a *Failure with its
// type and message.
func TestResponsesStreamFailures(t *testing.T) {
	for _, tc := range []struct {
		pair          int
		name          string
		event, data   string
		typ, message  string
		wantMalformed bool
	}{
		{0, "error member", "", `{"error":{"message":"m","type":"server_error","code":null}}`, "server_error", "m", false},
		{0, "error with code only", "", `{"error":{"message":"m","type":null,"code":"rate_limit_exceeded"}}`, "rate_limit_exceeded", "m", false},
		{0, "not JSON", "", `{"choices":`, "", "malformed stream chunk JSON", true},
		{1, "error event", "error", `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`, "overloaded_error", "Overloaded", false},
		{1, "unnamed error event", "", `{"type":"error","error":{"type":"api_error","message":"x"}}`, "api_error", "x", false},
		{1, "not JSON", "ping", `{`, "", "malformed stream event JSON", true},
	} {
		t.Run(filepath.Base(rsPairs[tc.pair].dir)+"/"+tc.name, func(t *testing.T) {
			m := rsTestMeta
			_, _, err := rsPairFor(t, rsPairs[tc.pair].pair, true).Stream(&m).Event([]byte(tc.event), []byte(tc.data), nil)
			var f *Failure
			if !errors.As(err, &f) || f.Type != tc.typ || f.Message != tc.message || f.Malformed != tc.wantMalformed {
				t.Fatalf("error %#v", err)
			}
		})
	}
}
