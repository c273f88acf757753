package server

import (
	"context"
	"errors"
	"io"
	"net/http"
	"time"

	"github.com/llmgw/llmgw/api/snapshot"
	"github.com/llmgw/llmgw/api/tokens"
	"github.com/llmgw/llmgw/gateway/provider"
)

// streamAttempt is an upstream stream that has produced its first content
// event (or ended cleanly without content): the commit point.
type streamAttempt struct {
	route  snapshot.Route
	stream provider.Stream
	cancel context.CancelCauseFunc
	actx   context.Context
	first  provider.Event
	ended  bool // the upstream finished before any content
	usage  *provider.Usage
	finish string
	t0     time.Time
}

// stream runs a streaming request: routes are tried until one produces
// content; nothing reaches the client before that, so fallback is invisible.
func (x *exchange) stream(ctx context.Context) {
	var last *attemptFailure
	for _, rt := range routes(x.alias) {
		sa, fail := x.openStream(ctx, rt)
		if sa != nil {
			x.relay(sa)
			return
		}
		if x.r.Context().Err() != nil {
			x.canceled()
			return
		}
		last = fail
		if !retryable(fail.outcome, fail.err) || ctx.Err() != nil {
			break
		}
	}
	x.w.Header().Set("X-Llmgw-Provider", last.route.Provider)
	x.fail(mapFailure(last, ctx))
}

// openStream calls one route and reads up to its first content event within
// the attempt and first-chunk timeouts.
func (x *exchange) openStream(ctx context.Context, rt snapshot.Route) (*streamAttempt, *attemptFailure) {
	actx, cancel := context.WithCancelCause(ctx)
	attemptTimer := time.AfterFunc(ms(x.alias.Timeouts.AttemptMs), func() { cancel(errAttemptTimeout) })
	firstTimer := time.AfterFunc(ms(x.alias.Timeouts.FirstChunkMs), func() { cancel(errFirstChunkTimeout) })
	stopTimers := func() { attemptTimer.Stop(); firstTimer.Stop() }
	req := x.p.req
	req.Model = rt.Model
	sa := &streamAttempt{route: rt, cancel: cancel, actx: actx, t0: x.s.now()}
	failed := func(err error) (*streamAttempt, *attemptFailure) {
		stopTimers()
		outcome, pe := classify(err, actx)
		cancel(nil)
		if x.r.Context().Err() != nil {
			outcome = outcomeCanceled
		}
		x.addAttempt(rt, outcome, pe.StatusCode, sa.t0)
		return nil, &attemptFailure{route: rt, outcome: outcome, err: pe}
	}
	st, err := x.st.adapters[rt.Provider].Stream(actx, &req)
	if err != nil {
		return failed(err)
	}
	sa.stream = st
	for {
		ev, err := st.Next()
		if errors.Is(err, io.EOF) {
			sa.ended = true
			break
		}
		if err != nil {
			_ = st.Close()
			return failed(err)
		}
		sa.absorb(ev)
		if ev.Text != "" {
			sa.first = ev
			break
		}
	}
	stopTimers()
	if actx.Err() != nil {
		// A timer fired as the first content arrived: the attempt is over by
		// its own deadline, and nothing has been sent yet.
		_ = st.Close()
		return failed(context.Cause(actx))
	}
	return sa, nil
}

func (sa *streamAttempt) absorb(ev provider.Event) {
	if ev.Usage != nil {
		u := *ev.Usage
		sa.usage = &u
	}
	if ev.FinishReason != "" {
		sa.finish = ev.FinishReason
	}
}

// relay commits the response and forwards events as they arrive, flushing
// each one. After the commit point the provider never changes: an upstream
// failure becomes one error event, and every stream ends with one [DONE].
func (x *exchange) relay(sa *streamAttempt) {
	defer sa.cancel(nil)
	defer sa.stream.Close()
	x.rec.Provider, x.rec.ProviderModel = sa.route.Provider, sa.route.Model
	enc := newChunkEncoder(x.rec.RequestID, x.start.Unix(), x.p.alias, x.p.includeUsage)
	rc := http.NewResponseController(x.w)
	var counter tokens.Counter
	buf := make([]byte, 0, 1024)

	x.waitBegun()
	h := x.w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	h.Set("X-Llmgw-Provider", sa.route.Provider)
	x.w.WriteHeader(http.StatusOK)

	buf = enc.role(buf[:0])
	if sa.first.Text != "" {
		buf = enc.content(buf, sa.first.Text)
	}
	writeErr := writeFlush(x.w, rc, buf)
	if writeErr == nil {
		counter.Add(sa.first.Text) // only what reached the client counts
	}

	var upErr error
	if !sa.ended && writeErr == nil {
		idle := ms(x.alias.Timeouts.IdleMs)
		idleTimer := time.AfterFunc(idle, func() { sa.cancel(errIdleTimeout) })
		for {
			ev, err := sa.stream.Next()
			if err != nil {
				if !errors.Is(err, io.EOF) {
					upErr = err
				}
				break
			}
			idleTimer.Reset(idle)
			sa.absorb(ev)
			if ev.Text == "" {
				continue
			}
			buf = enc.content(buf[:0], ev.Text)
			if writeErr = writeFlush(x.w, rc, buf); writeErr != nil {
				break
			}
			counter.Add(ev.Text)
		}
		idleTimer.Stop()
	}

	in, out := x.p.inputTokens, counter.N()
	clientGone := writeErr != nil || x.r.Context().Err() != nil
	switch {
	case clientGone:
		x.rec.InputTokens, x.rec.OutputTokens = in, out
		x.addAttempt(sa.route, outcomeCanceled, http.StatusOK, sa.t0)
		x.canceled()
	case upErr != nil:
		x.rec.InputTokens, x.rec.OutputTokens = in, out
		outcome, _ := classify(upErr, sa.actx)
		x.addAttempt(sa.route, outcome, http.StatusOK, sa.t0)
		code, msg := "upstream_interrupted", "the provider's stream failed after it had started; the answer is incomplete"
		if outcome == outcomeTimeout {
			code, msg = "upstream_timeout", "the provider's stream stalled or exceeded the deadline; the answer is incomplete"
		}
		x.rec.ErrorType = typeStream
		x.finalize(statusPartial, http.StatusOK)
		buf = appendErrorEvent(buf[:0], &apiError{typ: typeStream, code: code, message: msg}, x.rec.RequestID)
		_ = writeFlush(x.w, rc, append(buf, doneEvent...))
	default:
		if sa.usage != nil {
			in, out = sa.usage.InputTokens, sa.usage.OutputTokens
		}
		x.rec.InputTokens, x.rec.OutputTokens = in, out
		x.addAttempt(sa.route, outcomeOK, http.StatusOK, sa.t0)
		buf = enc.finish(buf[:0], finishReason(sa.finish))
		if x.p.includeUsage {
			buf = enc.usage(buf, in, out)
		}
		if writeFlush(x.w, rc, buf) != nil {
			x.canceled()
			return
		}
		x.finalize(statusSuccess, http.StatusOK)
		_ = writeFlush(x.w, rc, []byte(doneEvent))
	}
}

func writeFlush(w http.ResponseWriter, rc *http.ResponseController, b []byte) error {
	if _, err := w.Write(b); err != nil {
		return err
	}
	return rc.Flush()
}
