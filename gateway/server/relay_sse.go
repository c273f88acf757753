package server

import (
	"context"
	"errors"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/llmgw/llmgw/api/snapshot"
	"github.com/llmgw/llmgw/api/tokens"
	"github.com/llmgw/llmgw/gateway/provider"
	"github.com/llmgw/llmgw/gateway/translate"
	"github.com/llmgw/llmgw/gateway/usage"
)

// relaySSE answers a streaming request. Routes are tried until one says
// something (content, a refusal, a tool call, reasoning: a chunk the
// translator marks Commit) and nothing reaches the client before that, so a
// fallback is invisible. That chunk is the commit point: from there the
// provider never changes (the relay's failures reach the route loop as
// sent) and the stream always ends through end, with exactly one [DONE].
func (x *exchange) relaySSE(ctx context.Context) {
	var rl *sseRelay // set at the commit point
	defer func() {
		if rl != nil {
			rl.close()
		}
	}()
	f := x.route(ctx, func(ctx context.Context, c *candidate) *failure {
		sa, f := x.openStream(ctx, c)
		if f != nil {
			return f
		}
		// The verdict first, then the bytes: once the client has the first
		// content, the breaker already counts the stream as a success.
		streamCommitted(ctx)
		x.committed() // the attempt's client span ends at the commit point, like its latency
		rl = x.commit(sa)
		return rl.pump(ctx)
	})
	if rl == nil {
		x.releaseBodies()
		x.answerFailure(f)
		return
	}
	rl.end(f)
}

// maxHeld bounds what a stream may send before it says anything (role
// chunks, empty deltas) while the relay holds it back: past it the stream
// commits anyway.
const maxHeld = 64 << 10

// streamAttempt is an upstream stream that has produced its commit chunk
// (or ended cleanly without one): the commit point.
type streamAttempt struct {
	route  snapshot.Route
	stream provider.Stream
	ts     translate.ChatStream
	cancel context.CancelCauseFunc
	actx   context.Context
	held   []byte   // the chunks up to the commit point, as SSE events
	texts  []string // what they say, counted once sent
	ended  bool     // the upstream finished before the commit point
	said   bool     // the commit chunk arrived: the stream said something
	usage  *translate.Usage
	finish string // the provider's finish reason, once a chunk reported it
}

// openStream calls one route and reads up to its commit chunk within the
// attempt and first-chunk timeouts.
func (x *exchange) openStream(ctx context.Context, c *candidate) (*streamAttempt, *failure) {
	// For a stream both the attempt and the first-chunk timeout run from
	// the start of the attempt to its commit point: one timer, for the
	// earlier of the two, stopped there. The total deadline comes with ctx
	// and holds for the whole stream.
	d, cause := ms(x.alias.Timeouts.AttemptMs), errAttemptTimeout
	if f := ms(x.alias.Timeouts.FirstChunkMs); f < d {
		d, cause = f, errFirstChunkTimeout
	}
	rt := c.route
	actx, cancel := context.WithCancelCause(ctx)
	timer := time.AfterFunc(d, func() { cancel(cause) })
	sa := &streamAttempt{route: rt, cancel: cancel, actx: actx, ts: c.chat.Stream(&x.meta)}
	failed := func(err error) (*streamAttempt, *failure) {
		timer.Stop()
		f := x.classify(actx, rt, err, false)
		cancel(nil)
		return nil, f
	}
	st, err := x.st.adapters[rt.Provider].Stream(actx, c.call(), sa.ts)
	if err != nil {
		return failed(err)
	}
	sa.stream = st
	for {
		ch, err := st.Next()
		if errors.Is(err, io.EOF) {
			sa.ended = true
			break
		}
		if err != nil {
			_ = st.Close()
			return failed(err)
		}
		sa.absorb(&ch)
		if ch.Data != nil {
			sa.held = appendEvent(sa.held, ch.Event, ch.Data)
		}
		if ch.Text != "" {
			sa.texts = append(sa.texts, ch.Text)
		}
		if ch.Commit {
			sa.said = true
			break
		}
		if len(sa.held) > maxHeld {
			break
		}
	}
	timer.Stop()
	if actx.Err() != nil {
		// A timer fired as the commit chunk arrived: the attempt is over by
		// its own deadline, and nothing has been sent yet.
		_ = st.Close()
		return failed(context.Cause(actx))
	}
	return sa, nil
}

func (sa *streamAttempt) absorb(c *translate.Chunk) {
	if c.Usage != nil {
		u := *c.Usage
		sa.usage = &u
	}
	if c.FinishReason != "" {
		sa.finish = c.FinishReason
	}
}

// appendEvent appends one SSE event with data, named name unless it is "".
func appendEvent(b []byte, name string, data []byte) []byte {
	if name != "" {
		b = append(b, "event: "...)
		b = append(b, name...)
		b = append(b, '\n')
	}
	b = append(b, "data: "...)
	b = append(b, data...)
	return append(b, "\n\n"...)
}

// sseRelay is a committed stream: the writer side of one streamAttempt.
type sseRelay struct {
	x        *exchange
	sa       *streamAttempt
	rc       *http.ResponseController
	buf      []byte
	bufBox   *[]byte        // the pool's handle of buf, given back with it
	relayed  tokens.Counter // only what reached the client counts
	texts    []string       // what the events in buf say, counted once they are sent
	writeErr error          // the client is gone
	// providerTime is the time spent in provider attempts up to the commit
	// point (the committed attempt's up to its first content), outside the
	// gateway's added latency.
	providerTime time.Duration
	observed     bool // the first write happened: its time is in the histograms
}

// commit starts the response: the head and the chunks held back up to the
// commit point, in rl.buf but not yet written. pump writes them with
// whatever arrived with them (the whole answer, when the upstream sent it
// at once), without waiting for anything that has not.
func (x *exchange) commit(sa *streamAttempt) *sseRelay {
	// The committed attempt's provider time ends here.
	providerTime := x.times.upstream + x.elapsed() - x.times.attemptStart.Sub(x.start)
	x.rec.Provider, x.rec.ProviderModel = sa.route.Provider, sa.route.Model
	// No route is tried after the commit point, so the prompt is not sent
	// again: a long one would otherwise stay for the stream's whole life.
	x.releaseBodies()
	rl := &sseRelay{x: x, sa: sa, rc: http.NewResponseController(x.w), providerTime: providerTime}
	h := x.w.Header()
	h["Content-Type"], h["Cache-Control"], h["X-Accel-Buffering"] = sseContentType, noCache, noBuffering
	h[hdrProvider] = []string{sa.route.Provider}
	x.w.WriteHeader(http.StatusOK)
	rl.buf = append(rl.takeBuf(), sa.held...)
	rl.texts, sa.held, sa.texts = sa.texts, nil, nil
	x.observeCommit(rl)
	return rl
}

// The constant response headers' values, shared by every response: net/http
// copies the header map when the head is written, so nothing writes to
// them; assigning them costs no allocation, where Set makes a slice.
var (
	sseContentType = []string{"text/event-stream"}
	noCache        = []string{"no-cache"}
	noBuffering    = []string{"no"}
	jsonType       = []string{"application/json"}
)

// pump copies chunks to the client as they arrive, one write and flush
// for the chunks that arrived together, until the upstream ends (nil),
// fails, stalls for idleMs or the client goes away. Its first batch is the
// commit's (in rl.buf). Chunks that arrived together with the upstream's
// end are left in rl.buf: end writes them with its own, in one write, so
// an answer the upstream sent at once leaves with one write too.
func (rl *sseRelay) pump(ctx context.Context) *failure {
	x, sa := rl.x, rl.sa
	var upErr error
	if !sa.ended {
		idle := ms(x.alias.Timeouts.IdleMs)
		idleTimer := time.AfterFunc(idle, func() { sa.cancel(errIdleTimeout) })
		buffered, _ := sa.stream.(provider.Buffered)
		for first := true; ; first = false {
			var ch translate.Chunk
			var err error
			// got: ch or err is at hand. The commit's batch takes only what
			// has already arrived; every later batch waits for its first chunk.
			got := false
			switch {
			case !first:
				ch, err = sa.stream.Next()
				got = true
				if err == nil {
					idleTimer.Reset(idle) // once per read from the network, not per chunk
				}
			case buffered != nil:
				ch, got, err = buffered.TryNext()
			}
			for got && err == nil {
				sa.absorb(&ch)
				if ch.Data != nil {
					rl.buf = appendEvent(rl.heldBuf(), ch.Event, ch.Data)
				}
				if ch.Text != "" {
					rl.texts = append(rl.texts, ch.Text)
				}
				if buffered == nil {
					break
				}
				ch, got, err = buffered.TryNext()
			}
			if errors.Is(err, io.EOF) {
				break // what is in rl.buf goes out with the end
			}
			if len(rl.buf) > 0 && !rl.send() {
				break
			}
			if err != nil {
				upErr = err
				break
			}
		}
		idleTimer.Stop()
	}
	switch {
	case rl.writeErr != nil || x.r.Context().Err() != nil:
		return &failure{kind: failCanceled, route: sa.route, sent: true,
			err: &provider.Error{Kind: provider.KindCanceled, Provider: sa.route.Provider, Message: "client went away"}}
	case upErr != nil:
		return x.classify(sa.actx, sa.route, upErr, true)
	}
	return nil
}

// end finishes a committed stream, whatever happened: after a clean end
// the translator's closing chunks (the usage the caller asked for), after
// an upstream failure one error event. The record is final before either
// is written, so a client that has its answer can read its record at once.
// A client that is gone gets nothing more.
func (rl *sseRelay) end(f *failure) {
	x, sa := rl.x, rl.sa
	// Gone after the last content (net/http cancels the request's context
	// when the connection closes): nobody reads the end.
	gone := x.r.Context().Err() != nil
	if f == nil && !gone {
		// Chunks that arrived with the upstream's end are still in rl.buf
		// and leave with the end, in the write below: the record, final
		// before it, counts them as sent.
		rl.sent()
	}
	// What was sent is what is billed: the provider's usage of a stream
	// that ended cleanly, else the gateway's own count of what it relayed.
	u := x.ownCount(rl.relayed.N())
	if f == nil && sa.usage != nil {
		u = *sa.usage
	}
	x.setUsage(u)
	x.finish = sa.finish
	switch {
	case f == nil && gone:
		x.canceled()
		return
	case f == nil:
		buf := rl.heldBuf()
		for _, c := range sa.ts.End(recordUsage(&x.rec), nil) {
			if c.FinishReason != "" { // a protocol that says it last (translate.Chunk)
				x.finish = c.FinishReason
			}
			buf = appendEvent(buf, c.Event, c.Data)
		}
		rl.buf = x.ing.api.appendEnd(buf)
		x.finalize(statusSuccess, http.StatusOK)
	case f.kind == failCanceled:
		x.canceled()
		return
	default:
		a := &failures[f.kind].after
		x.settle(a)
		e := x.streamError(f, a)
		if fs, ok := sa.ts.(translate.StreamFailer); ok {
			// The protocol ends a failed stream with an event of its own
			// (the Responses API's response.failed).
			buf := rl.takeBuf()
			for _, c := range fs.Fail(e.code, e.message, nil) {
				buf = appendEvent(buf, c.Event, c.Data)
			}
			rl.buf = buf
		} else {
			rl.buf = x.ing.api.appendErrorEvent(rl.takeBuf(), e, x.rec.RequestID)
		}
	}
	// The end in one write, not flushed: net/http flushes the response once
	// the handler returns, a moment later, with the end of the chunked body
	// (or, when nothing was flushed before, the head and a Content-Length).
	_, err := x.w.Write(rl.buf)
	rl.observeWrite(err)
}

// recordUsage is the usage the record bills, in the translators' terms.
func recordUsage(r *usage.Record) translate.Usage {
	return translate.Usage{InputTokens: r.InputTokens, OutputTokens: r.OutputTokens,
		CachedInputTokens: r.CachedInputTokens, ReasoningTokens: r.ReasoningTokens}
}

// send writes and flushes rl.buf and gives the buffer back; the texts in it
// (rl.texts) count once they reached the client.
func (rl *sseRelay) send() bool {
	rl.writeErr = writeFlush(rl.x.w, rl.rc, rl.buf)
	rl.releaseBuf()
	rl.observeWrite(rl.writeErr)
	if rl.writeErr != nil {
		return false
	}
	rl.sent()
	return true
}

// sent counts the texts of rl.buf as relayed.
func (rl *sseRelay) sent() {
	for _, t := range rl.texts {
		rl.relayed.Add(t)
	}
	clear(rl.texts)
	rl.texts = rl.texts[:0]
}

// observeWrite takes the time of the response's first write for the
// histograms (exchange_metrics.go), unless it failed: nothing reached the
// client to measure.
func (rl *sseRelay) observeWrite(err error) {
	if rl.observed {
		return
	}
	rl.observed = true
	if err == nil {
		rl.x.observeFirstWrite(rl)
	}
}

// close releases the upstream once the client has its last byte, and the
// output buffer: nothing holds it once the last write returned (net/http
// copies what it is given).
func (rl *sseRelay) close() {
	_ = rl.sa.stream.Close()
	rl.sa.cancel(nil)
	rl.releaseBuf()
}

// takeBuf returns the output buffer, empty, from the pool if the relay holds
// none. A relay holds one only from an upstream read to its flush: a stream
// waits for its next event with none (1 KiB less per open stream), and
// net/http copies what it is given, so nothing refers to it after a write.
func (rl *sseRelay) takeBuf() []byte {
	if rl.buf == nil {
		rl.bufBox = relayBufs.Get().(*[]byte)
		return (*rl.bufBox)[:0]
	}
	return rl.buf[:0]
}

// heldBuf is rl.buf with the events it holds, not yet sent, or an empty
// buffer from the pool if the relay holds none.
func (rl *sseRelay) heldBuf() []byte {
	if rl.buf == nil {
		return rl.takeBuf()
	}
	return rl.buf
}

// releaseBuf gives the buffer back, in the handle it came in (a fresh
// handle for every Put would be an allocation per flush). A buffer an unusually long event grew is dropped:
// the pool holds no more than a typical stream needs.
func (rl *sseRelay) releaseBuf() {
	if rl.buf == nil {
		return
	}
	if cap(rl.buf) <= 16<<10 {
		*rl.bufBox = rl.buf[:0]
		relayBufs.Put(rl.bufBox)
	}
	rl.buf, rl.bufBox = nil, nil
}

// relayBufs recycles the relays' output buffers: a stream's events are
// encoded into 1 KiB or so, which would otherwise be one of the larger
// allocations of a request.
var relayBufs = sync.Pool{New: func() any { b := make([]byte, 0, 1024); return &b }}

func writeFlush(w http.ResponseWriter, rc *http.ResponseController, b []byte) error {
	if _, err := w.Write(b); err != nil {
		return err
	}
	return rc.Flush()
}
