package usage

import (
	"context"
	"errors"
	"sync/atomic"
	"time"
)

// ErrNotWritable wraps the error of the failed commit while the ledger
// cannot commit.
var ErrNotWritable = errors.New("usage: the ledger cannot commit")

// writeFailure is the first failed commit of a run of failures.
type writeFailure struct {
	err   error
	since time.Time
}

// writeHealth is the writer's own verdict on whether it can commit: set by
// the outcome of every transaction it runs, so it costs the request path one
// atomic load. A failed commit marks the ledger not writable; the next
// commit that succeeds, whoever queued it (a request, a readiness ping, the
// prober below), clears it.
type writeHealth struct {
	failing   atomic.Pointer[writeFailure]
	prober    chan struct{} // closed by Close: stops the prober
	probeDone chan struct{}
}

// Writable is nil while the ledger's writes commit. After a transaction
// failed (disk full, I/O error) it is an error wrapping ErrNotWritable and
// that failure, until a later transaction commits. While it is not nil, a
// prober sends a tiny write every Options.ProbeInterval, so the ledger
// notices on its own when the disk takes writes again, even when nothing
// else writes (a gateway that refuses requests while the ledger is down
// queues none).
func (l *Ledger) Writable() error {
	f := l.failing.Load()
	if f == nil {
		return nil
	}
	return &notWritableError{f: f}
}

type notWritableError struct{ f *writeFailure }

func (e *notWritableError) Error() string {
	return "usage: the ledger cannot commit since " + e.f.since.UTC().Format(time.RFC3339) + ": " + e.f.err.Error()
}

func (e *notWritableError) Unwrap() []error { return []error{ErrNotWritable, e.f.err} }

// noteCommit records the outcome of one transaction; it reports whether the
// ledger was already failing before, so the caller can keep repeated failure
// logs quiet. A commit does not clear a failure while the journal cannot
// append (noteJournal).
func (l *Ledger) noteCommit(err error) (wasFailing bool) {
	if err == nil {
		if l.failing.Load() == nil {
			return false // the common case: no store to the word every request loads
		}
		if l.journal != nil && l.journal.failed() != nil {
			return true
		}
		if prev := l.failing.Swap(nil); prev != nil {
			l.log.Info("usage ledger: commits succeed again", "was_failing_for", time.Since(prev.since).Round(time.Millisecond).String())
			return true
		}
		return false
	}
	if l.failing.CompareAndSwap(nil, &writeFailure{err: err, since: time.Now()}) {
		l.log.Error("usage ledger: a commit failed; the ledger counts as not writable until a write succeeds", "err", err)
		return false
	}
	return true
}

// noteJournal marks the ledger not writable after a journal append failed:
// no record can be made durable until the journal is rewritten (the
// prober tries) and a commit succeeds.
func (l *Ledger) noteJournal(err error) {
	if l.failing.CompareAndSwap(nil, &writeFailure{err: err, since: time.Now()}) {
		l.log.Error("usage ledger: a journal write failed; the ledger counts as not writable until a write succeeds", "err", err)
	}
}

func (l *Ledger) startProber() {
	l.prober, l.probeDone = make(chan struct{}), make(chan struct{})
	go l.probeLoop()
}

func (l *Ledger) probeLoop() {
	defer close(l.probeDone)
	t := time.NewTicker(l.opts.ProbeInterval)
	defer t.Stop()
	for {
		select {
		case <-l.prober:
			return
		case <-t.C:
			if l.failing.Load() == nil {
				continue
			}
			// The journal is rewritten if a write failed; then the ping
			// commits through the writer like any record, so its success is
			// what clears the failure (noteCommit).
			if err := l.journal.repair(); err != nil {
				continue
			}
			ctx, cancel := context.WithTimeout(context.Background(), max(l.opts.ProbeInterval, 5*time.Second))
			_ = l.Ping(ctx)
			cancel()
		}
	}
}

func (l *Ledger) stopProber() {
	if l.prober == nil {
		return
	}
	close(l.prober)
	<-l.probeDone
}
