package server

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/llmgw/llmgw/api/snapshot"
	"github.com/llmgw/llmgw/gateway/translate"
)

// gatedStream yields its events; before each it reports that the relay is
// waiting and blocks until released.
type gatedStream struct {
	events  []translate.Chunk
	i       int
	waiting chan struct{}
	resume  chan struct{}
}

func (s *gatedStream) Next() (translate.Chunk, error) {
	if s.i >= len(s.events) {
		return translate.Chunk{}, io.EOF
	}
	s.waiting <- struct{}{}
	<-s.resume
	s.i++
	return s.events[s.i-1], nil
}

func (s *gatedStream) Close() error { return nil }

// A committed stream waits for its upstream's next event without an output
// buffer (it takes one from the pool for each batch's first chunk and
// gives it back once flushed), and what it sends is unchanged. It ends
// holding one only when content came with the upstream's end (end writes
// them together): not here, where the end came alone.
func TestRelayWaitsWithoutAnOutputBuffer(t *testing.T) {
	chunk := func(text string) translate.Chunk {
		return translate.Chunk{Data: []byte(`{"choices":[{"delta":{"content":"` + text + `"}}]}`), Commit: true, Text: text}
	}
	events := []translate.Chunk{chunk("two"), {Data: []byte(`{"choices":[{"delta":{},"finish_reason":"stop"}]}`)}, chunk("three")}
	st := &gatedStream{events: events, waiting: make(chan struct{}), resume: make(chan struct{})}
	w := httptest.NewRecorder()
	x := &exchange{w: w, r: httptest.NewRequest("POST", "/v1/chat/completions", nil),
		alias: &snapshot.Alias{Timeouts: snapshot.Timeouts{IdleMs: 60_000}}}
	// observed: this exchange has no metrics to observe the first write in.
	rl := &sseRelay{x: x, sa: &streamAttempt{stream: st, cancel: func(error) {}}, rc: http.NewResponseController(w), observed: true}
	// What commit leaves to the pump's first batch: the chunks up to the
	// first content.
	rl.buf = appendEvent(rl.takeBuf(), "", chunk("one").Data)
	done := make(chan *failure, 1)
	go func() { done <- rl.pump(context.Background()) }()
	for range events {
		<-st.waiting
		// The pump goroutine is blocked in Next, after its channel send: what
		// it wrote before is visible here.
		if rl.buf != nil {
			t.Fatalf("waiting with an output buffer of %d B", cap(rl.buf))
		}
		st.resume <- struct{}{}
	}
	if f := <-done; f != nil {
		t.Fatalf("pump: %+v", f)
	}
	if rl.buf != nil {
		t.Fatal("the pump ended holding an output buffer")
	}
	body := w.Body.String()
	for _, want := range []string{`"one"`, `"two"`, `"three"`} {
		if !strings.Contains(body, want) {
			t.Fatalf("body %q lacks %s", body, want)
		}
	}
}
