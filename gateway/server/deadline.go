package server

import (
	"context"
	"time"
)

// The alias's total deadline has no context or timer of its own. Each
// attempt's context already runs one timer (the attempt timeout, the
// first-chunk timeout, or while a stream is relayed the idle timeout); that
// timer is set to fire no later than the total deadline too, and says on
// firing which of the two passed. A request thus runs one context and one
// timer less than with a context.WithTimeout around its attempts: about
// 0.5 KB and a timer start and stop less per request (docs/BENCHMARK.md,
// "tenth round").

// untilDeadline is d, or the time left to the total deadline if that is
// sooner (zero or less once it has passed).
func (x *exchange) untilDeadline(d time.Duration) time.Duration {
	if x.deadline.IsZero() {
		return d
	}
	return min(d, time.Until(x.deadline))
}

// timeoutCause is why a timer set with untilDeadline fired: the total
// deadline (context.DeadlineExceeded) once it has passed, else own.
func (x *exchange) timeoutCause(own error) error {
	if x.pastDeadline() {
		return context.DeadlineExceeded
	}
	return own
}

func (x *exchange) pastDeadline() bool {
	return !x.deadline.IsZero() && !time.Now().Before(x.deadline)
}

// attemptContext is an attempt's context, canceled with cause once d has
// passed, or with context.DeadlineExceeded at the total deadline if that
// comes first (at once if it has passed). The caller stops the timer and
// cancels the context when the attempt is over.
func (x *exchange) attemptContext(parent context.Context, d time.Duration, cause error) (context.Context, context.CancelCauseFunc, *time.Timer) {
	actx, cancel := context.WithCancelCause(parent)
	left := x.untilDeadline(d)
	if left <= 0 {
		cancel(x.timeoutCause(cause)) // before the adapter starts a call it cannot finish
	}
	t := time.AfterFunc(left, func() { cancel(x.timeoutCause(cause)) })
	return actx, cancel, t
}
