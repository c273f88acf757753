package server

import (
	"context"
	"sync"
	"time"
)

// detachedCtx is context.WithTimeout(context.WithoutCancel(parent), d) that
// starts its timer only when somebody first asks for Done. The final record
// is handed to the ledger under such a bound on every request, and the
// ledger looks at Done only when it has to wait (its queue full, or no
// journal): a timer started and stopped for nothing on every request was
// about 1 % of a stream's instructions (docs/BENCHMARK.md, "eighth round").
// Err, Deadline and Value behave as they would on the eager context; Done
// closes at the same deadline, whenever it is first called.
//
// It is for a consumer that only selects on Done. A context derived from it
// works (TestDetachedCtxEndsItsChildren) but costs a goroutine, the context
// package's way of following a parent that is not its own; so the calls
// that make requests of their own (a shared quota store) keep
// context.WithTimeout (exchange.detached).
type detachedCtx struct {
	parent   context.Context // for Value only: its cancellation does not reach here
	deadline time.Time

	mu    sync.Mutex
	done  chan struct{} // nil until Done or the end
	timer *time.Timer
	err   error
}

// detachedTimeout returns a detached context bounded by d and its cancel
// function, which must be called as with context.WithTimeout.
func detachedTimeout(parent context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	c := &detachedCtx{parent: parent, deadline: time.Now().Add(d)}
	return c, c.cancel
}

func (c *detachedCtx) Deadline() (time.Time, bool) { return c.deadline, true }

func (c *detachedCtx) Value(key any) any { return c.parent.Value(key) }

func (c *detachedCtx) Done() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.done == nil {
		c.done = make(chan struct{})
		if c.err != nil {
			close(c.done)
		} else if left := time.Until(c.deadline); left <= 0 {
			c.endLocked(context.DeadlineExceeded)
		} else {
			c.timer = time.AfterFunc(left, func() { c.end(context.DeadlineExceeded) })
		}
	}
	return c.done
}

// Err is DeadlineExceeded from the deadline on even if nobody has asked for
// Done yet; the Done channel is then (or when asked) closed, as the context
// contract wants whenever Err is not nil.
func (c *detachedCtx) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err == nil && !time.Now().Before(c.deadline) {
		c.endLocked(context.DeadlineExceeded)
	}
	return c.err
}

func (c *detachedCtx) cancel() { c.end(context.Canceled) }

func (c *detachedCtx) end(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.endLocked(err)
}

// endLocked records the first error, closes Done if it exists and stops the
// timer; with c.mu held.
func (c *detachedCtx) endLocked(err error) {
	if c.err != nil {
		return
	}
	c.err = err
	if c.done != nil {
		close(c.done)
	}
	if c.timer != nil {
		c.timer.Stop()
	}
}

func (c *detachedCtx) String() string { return "server.detachedCtx" }
