package usage

import (
	"context"
	"fmt"
	"time"
)

// Most requests through a gateway in front of a fast model end within a few
// milliseconds, and for them the in_progress row is written only to be
// rewritten a moment later: two transactions, two sets of B-tree pages, for
// one record. With Options.BeginHold the writer keeps each Begin in memory
// for that long. A Finish that arrives within the hold turns the pair into
// one insert of the final row; a Begin still open when the hold ends, or
// whose request is about to send its first byte (Persist), is written as
// before. What this trades: a process crash loses the in_progress rows of
// requests younger than the hold that had sent nothing to their client — a
// client that saw any byte still finds a record, because Persist comes
// before the first byte.

// heldBegins are Begins waiting for their Finish, in arrival order; with one
// hold for all, that is also deadline order.
type heldBegins struct {
	byID  map[string]*op
	queue []*op // may contain ops already taken (taken == true)
}

func (h *heldBegins) add(o *op, deadline time.Time) {
	if h.byID == nil {
		h.byID = make(map[string]*op)
	}
	o.deadline = deadline
	h.byID[o.rec.RequestID] = o
	h.queue = append(h.queue, o)
}

// take removes and returns the held Begin of request id, nil if none.
func (h *heldBegins) take(id string) *op {
	o, ok := h.byID[id]
	if !ok {
		return nil
	}
	delete(h.byID, id)
	o.taken = true
	return o
}

// expired appends to dst every held Begin whose deadline is not after now
// (all of them when now is zero) and forgets them.
func (h *heldBegins) expired(dst []*op, now time.Time) []*op {
	i := 0
	for ; i < len(h.queue); i++ {
		o := h.queue[i]
		if o.taken {
			continue
		}
		if !now.IsZero() && o.deadline.After(now) {
			break
		}
		delete(h.byID, o.rec.RequestID)
		o.taken = true
		dst = append(dst, o)
	}
	clear(h.queue[:i])
	h.queue = h.queue[i:]
	return dst
}

// next is the earliest deadline, ok=false when nothing is held.
func (h *heldBegins) next() (time.Time, bool) {
	for len(h.queue) > 0 && h.queue[0].taken {
		h.queue[0] = nil
		h.queue = h.queue[1:]
	}
	if len(h.queue) == 0 {
		return time.Time{}, false
	}
	return h.queue[0].deadline, true
}

// route decides what of the ops just dequeued goes into this transaction:
// Begins are held, a Finish absorbs its held Begin, a flush releases one,
// and Begins whose hold ended join. dst must not alias batch.
func (l *Ledger) route(dst, batch []*op, now time.Time) []*op {
	dst = l.held.expired(dst, now) // first: they were queued before everything in batch
	for _, o := range batch {
		switch o.kind {
		case opBegin:
			if l.opts.BeginHold > 0 && o.err == nil {
				l.held.add(o, now.Add(l.opts.BeginHold))
				continue
			}
		case opFinish:
			if b := l.held.take(o.rec.RequestID); b != nil {
				o.rec.CreatedAt = b.rec.CreatedAt
				o.merged = b
			}
		case opFlush:
			if b := l.held.take(o.rec.RequestID); b != nil {
				dst = append(dst, b)
			}
		}
		dst = append(dst, o)
	}
	return dst
}

// Persist asks for p's in_progress row to be written now instead of at the
// end of its hold; wait on p.Committed() afterwards. The gateway calls it
// before a response's first byte. It never blocks longer than ctx.
func (l *Ledger) Persist(ctx context.Context, p *Pending) error {
	if l.opts.BeginHold <= 0 || p.rid == "" {
		return nil
	}
	select {
	case <-p.done:
		return nil
	default:
	}
	o := &op{kind: opFlush, rec: Record{RequestID: p.rid}, Pending: &Pending{done: make(chan struct{})}}
	if err := l.enqueue(ctx, o); err != nil {
		return fmt.Errorf("usage: persist %s: %w", p.rid, err)
	}
	return nil
}
