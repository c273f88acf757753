package usage

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

type opKind uint8

const (
	opBegin opKind = iota
	opFinish
	opPing
	opSync // answered once every op queued before it is committed (Ledger.sync)
	// The hand-off's writes (handoff.go): a batch of another ledger's
	// final records, a deletion of handed-off records, a ledger_meta
	// key. Their callers wait for the commit, as for a Ping.
	opImport
	opForget
	opMeta
)

// op is one unit of work for the writer: the row of a journaled Begin or
// Finish, which nobody waits for, or a Ping or a read's sync, which their
// callers wait for on done.
type op struct {
	kind     opKind
	rec      Record
	attempts string    // encoded by the caller, keeping JSON work off the single writer
	owners   string    // the same: the owners column (encodeOwners)
	queued   time.Time // a Begin's or Finish's: when its line was written (Options.JournalLag)
	// Set by the writer for one transaction: merged marks a Begin and its
	// Finish in the same batch, whose one row is the final record's insert;
	// wrote says the op's row was written (not when the request already
	// had its row: a second Begin, or a Finish of a final record).
	merged, wrote bool

	done chan struct{} // a Ping's, a sync's or a hand-off op's; closed with err set
	err  error
	bulk *bulkOp // a hand-off op's work and result (handoff.go)
}

// Begin makes the in_progress record of r durable (its journal line) and
// queues its row; it returns once the line is written. r.Status and
// r.FinishedAt are ignored (the record is in_progress); a zero r.CreatedAt
// becomes now. A Begin for a request whose record is still being written
// is refused with ErrDuplicate. If the queue is full (Options.QueueSize
// operations waiting), Begin blocks until the writer makes room: that is
// the ledger's backpressure, and it only happens when the disk cannot keep
// up.
func (l *Ledger) Begin(r Record) error {
	if r.RequestID == "" {
		return errRequestIDMissing
	}
	o := &op{kind: opBegin, rec: r}
	o.rec.Status = StatusInProgress
	o.rec.FinishedAt = time.Time{}
	if o.rec.CreatedAt.IsZero() {
		o.rec.CreatedAt = time.Now()
	}
	o.attempts, o.owners = encodeAttempts(r.Attempts), encodeOwners(r.Owners)
	return l.journaled(context.Background(), o, "begin")
}

// Finish makes the final version of the record r.RequestID durable (its
// journal line) and queues its row; it returns once the line is written.
// Every field is written from r except CreatedAt, which keeps the Begin
// value; a zero r.FinishedAt becomes now. r.Status must be a final status.
//
// Exactly once: a second Finish of the same request is not applied. It
// returns ErrAlreadyFinished while the first one's row is not committed;
// after that the writer ignores it and logs it. A Finish with no Begin at
// all inserts the final record, so a request whose Begin failed still
// leaves one record.
//
// If ctx ends while the queue is full, Finish returns ctx's error; the
// record is durable all the same, and the next Open writes its row.
func (l *Ledger) Finish(ctx context.Context, r Record) error {
	if r.RequestID == "" {
		return errRequestIDMissing
	}
	if !isFinalStatus(r.Status) {
		return fmt.Errorf("%w: %q is not a final status (request %s)", ErrInvalidRecord, r.Status, r.RequestID)
	}
	o := &op{kind: opFinish, rec: r}
	if o.rec.FinishedAt.IsZero() {
		o.rec.FinishedAt = time.Now()
	}
	if o.rec.CreatedAt.IsZero() {
		o.rec.CreatedAt = o.rec.FinishedAt
	}
	o.attempts, o.owners = encodeAttempts(r.Attempts), encodeOwners(r.Owners)
	err := l.journaled(ctx, o, "finish")
	switch {
	case errors.Is(err, ErrAlreadyFinished):
		l.duplicateFinish(&o.rec)
	case err != nil && !errors.Is(err, ErrQueueFull):
		l.nUnrecorded.Add(1)
	}
	return err
}

// ErrQueueFull wraps the context error of a Begin or Finish whose record is
// durable but whose row could not be queued before the context ended (or
// the ledger closed): the next Open writes that row.
var ErrQueueFull = errors.New("usage: record journaled, its row not queued")

// journaled writes o's line, then queues its row.
func (l *Ledger) journaled(ctx context.Context, o *op, what string) error {
	if err := l.closedErr(); err != nil {
		return fmt.Errorf("usage: %s %s: %w", what, o.rec.RequestID, err)
	}
	if err := l.journal.add(o); err != nil {
		if !errors.Is(err, ErrDuplicate) && !errors.Is(err, ErrAlreadyFinished) {
			l.noteJournal(err)
		}
		return fmt.Errorf("usage: %s %s: %w", what, o.rec.RequestID, err)
	}
	o.queued = time.Now()
	l.unsynced.Add(1)
	if err := l.enqueue(ctx, o); err != nil {
		l.unsynced.Add(-1)
		// The line stays in the journal (Close keeps a journal with open
		// lines), so the next Open writes the row: late, not lost.
		l.log.Warn("usage: record kept in the journal until the ledger is opened again",
			"request_id", o.rec.RequestID, "err", err)
		return fmt.Errorf("usage: %s %s: %w: %w", what, o.rec.RequestID, ErrQueueFull, err)
	}
	return nil
}

// duplicateFinish logs a second Finish of r's request, which was not
// applied.
func (l *Ledger) duplicateFinish(r *Record) {
	l.log.Warn("usage: duplicate finish ignored", "request_id", r.RequestID, "status", r.Status)
}

// Ping checks that the store is writable end to end: it sends a tiny meta
// write through the writer queue and waits for its commit, so it fails (or
// times out with ctx) if the writer is stuck, the queue is saturated, or
// the disk refuses writes.
func (l *Ledger) Ping(ctx context.Context) error { return l.through(ctx, opPing, "ping") }

// sync waits until the rows of every Begin and Finish that returned before
// it are committed, so a read sees them: a caller that has its answer finds
// its record. It costs nothing when no row is waiting.
func (l *Ledger) sync(ctx context.Context) error {
	if l.unsynced.Load() == 0 {
		return nil
	}
	return l.through(ctx, opSync, "sync")
}

// through queues an op of kind and waits until the writer has committed it
// and everything queued before it (commits are FIFO).
func (l *Ledger) through(ctx context.Context, kind opKind, what string) error {
	return l.await(ctx, &op{kind: kind, done: make(chan struct{})}, what)
}

// await queues o and waits until the writer has committed it.
func (l *Ledger) await(ctx context.Context, o *op, what string) error {
	if err := l.enqueue(ctx, o); err != nil {
		return fmt.Errorf("usage: %s: %w", what, err)
	}
	select {
	case <-o.done:
		if o.err != nil {
			return fmt.Errorf("usage: %s: %w", what, o.err)
		}
		return nil
	case <-ctx.Done():
		return fmt.Errorf("usage: %s: %w", what, ctx.Err())
	}
}

func (l *Ledger) closedErr() error {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.closed {
		return ErrClosed
	}
	return nil
}

func (l *Ledger) enqueue(ctx context.Context, o *op) error {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.closed {
		return ErrClosed
	}
	if err := ctx.Err(); err != nil {
		return err // select would pick at random between a ready send and a done ctx
	}
	// Room in the queue, the usual case: ctx's Done is not asked for, so a
	// context that starts its timer only then (the gateway's) starts none.
	select {
	case l.q <- o:
		return nil
	default:
	}
	select {
	case l.q <- o:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Stats are cumulative writer counters; Ops/Batches is the mean group size.
type Stats struct {
	Ops           uint64
	Batches       uint64
	FailedBatches uint64
	// Unrecorded counts Finish calls whose final record was not written (its
	// journal line failed, or its row's transaction failed too often, or
	// the ledger was closed): requests left without a final record.
	Unrecorded uint64
	Queued     int
}

// Stats reports the writer's counters.
func (l *Ledger) Stats() Stats {
	return Stats{
		Ops:           l.nOps.Load(),
		Batches:       l.nBatches.Load(),
		FailedBatches: l.nFailed.Load(),
		Unrecorded:    l.nUnrecorded.Load(),
		Queued:        len(l.q),
	}
}

type counters struct {
	// unsynced counts the Begins and Finishes whose rows are queued and not
	// yet committed: reads sync first while it is not zero.
	unsynced                  atomic.Int64
	nOps, nBatches, nFailed   atomic.Uint64
	nUnrecorded               atomic.Uint64
	nDroppedAge, nDroppedSize atomic.Uint64
}

// run is the single writer: it owns the one write connection, so SQLite
// never sees two writers and never answers SQLITE_BUSY to ourselves.
func (l *Ledger) run() {
	defer close(l.writerDone)
	batch := make([]*op, 0, l.opts.MaxBatch)
	for o := range l.q {
		batch = l.fill(append(l.takeRetry(batch[:0]), o))
		l.commit(batch)
		clear(batch) // let finished ops be collected while we wait
	}
	// Closing: rows whose transaction failed get a last try.
	if batch = l.takeRetry(batch[:0]); len(batch) > 0 {
		l.commit(batch)
	}
}

// takeRetry appends the rows a failed transaction left, to be tried first
// in the next one.
func (l *Ledger) takeRetry(dst []*op) []*op {
	dst = append(dst, l.retry...)
	clear(l.retry)
	l.retry = l.retry[:0]
	return dst
}

// fill adds what else is queued, up to MaxBatch. Rows nobody waits for
// (their records are journal lines already) are gathered for up to
// BatchDelay from the first one: tens of rows then share the B-tree pages
// and WAL frames of one commit. An op somebody waits for (a read's sync, a
// Ping) ends the wait: what is queued is committed at once.
func (l *Ledger) fill(batch []*op) []*op {
	var deadline <-chan time.Time
	if waited(batch) {
		deadline = nil
	} else if l.opts.BatchDelay > 0 {
		t := time.NewTimer(l.opts.BatchDelay)
		defer t.Stop()
		deadline = t.C
	}
	for len(batch) < l.opts.MaxBatch {
		if deadline == nil {
			select {
			case o, ok := <-l.q:
				if !ok {
					return batch
				}
				batch = append(batch, o)
			default:
				return batch
			}
			continue
		}
		select {
		case o, ok := <-l.q:
			if !ok {
				return batch
			}
			batch = append(batch, o)
			if o.done != nil {
				deadline = nil // commit what is queued now
			}
		case <-deadline:
			return batch
		}
	}
	return batch
}

// waited says whether somebody waits for an op of batch.
func waited(batch []*op) bool {
	for _, o := range batch {
		if o.done != nil {
			return true
		}
	}
	return false
}

// writes says whether batch needs a transaction: not when it only holds
// syncs.
func writes(batch []*op) bool {
	for _, o := range batch {
		if o.kind != opSync {
			return true
		}
	}
	return false
}

// commit runs batch in one transaction and settles every op in it.
func (l *Ledger) commit(batch []*op) {
	err := l.write(batch)
	for _, o := range batch {
		if o.done != nil {
			// A sync goes on with what is committed; an op the database
			// refused keeps its own error (write).
			if o.kind != opSync && o.err == nil {
				o.err = err
			}
			close(o.done)
		}
	}
}

// write commits the rows of batch, if it has any. A row SQLite refuses
// itself would fail every transaction it is tried in again: it alone is
// given up, and the rest is tried again at once.
func (l *Ledger) write(batch []*op) error {
	for writes(batch) {
		err := l.apply(batch)
		wasFailing := l.noteCommit(err)
		l.nBatches.Add(1)
		for _, o := range batch {
			if o.kind != opSync {
				l.nOps.Add(1)
			}
		}
		if err == nil {
			l.written(batch)
			return nil
		}
		l.nFailed.Add(1)
		var re *rowError
		if !errors.As(err, &re) || !refused(re.err) {
			l.keep(batch, err, wasFailing)
			return err
		}
		l.log.Error("usage: row refused by the database, given up", "request_id", re.o.rec.RequestID, "err", err)
		if re.o.done != nil {
			re.o.err = err // its caller, waiting, learns it (an import's record)
		} else {
			l.giveUp(re.o)
		}
		batch = slices.DeleteFunc(slices.Clone(batch), func(o *op) bool { return o == re.o })
	}
	return nil
}

// written accounts for the rows of a committed batch.
func (l *Ledger) written(batch []*op) {
	l.journal.written(batch)
	var now time.Time
	if l.opts.JournalLag != nil {
		now = time.Now()
	}
	for _, o := range batch {
		if o.done != nil {
			continue
		}
		l.unsynced.Add(-1)
		if o.kind == opFinish && !now.IsZero() {
			l.opts.JournalLag(now.Sub(o.queued))
		}
		if !o.wrote {
			l.duplicate(o)
		}
	}
}

// keep holds the rows of a failed transaction (a full disk) for the next
// one: their records are journal lines, so they are not lost while the
// process lives, and the next Open writes them if it does not. Past
// QueueSize of them the final records are given up and counted.
func (l *Ledger) keep(batch []*op, err error, wasFailing bool) {
	lost := 0
	for _, o := range batch {
		switch {
		case o.done != nil:
		case len(l.retry) < l.opts.QueueSize:
			l.retry = append(l.retry, o)
		default:
			if l.giveUp(o) {
				lost++
			}
		}
	}
	// The first failure of a run is logged by noteCommit; after it, only
	// batches that lose records are worth a line (not every probe).
	if wasFailing && lost > 0 {
		l.log.Error("usage: batch failed", "ops", len(batch), "final_records_lost", lost,
			"rows_kept_for_retry", len(l.retry), "err", err)
	}
}

// giveUp abandons o's row; it reports whether that loses a final record
// (counted as unrecorded).
func (l *Ledger) giveUp(o *op) bool {
	l.unsynced.Add(-1)
	if o.kind != opFinish {
		return false // its Finish may still insert the final record
	}
	l.journal.drop(o.rec.RequestID)
	l.nUnrecorded.Add(1)
	return true
}

// merge marks each Begin whose Finish follows it in batch: the Begin then
// writes nothing, and the Finish inserts the final row with the Begin's
// CreatedAt, one statement for the request instead of an insert and an
// update. Most requests to a fast model begin and end within one batch.
func merge(batch []*op) {
	var begins map[string]*op
	for _, o := range batch {
		o.merged = false
		switch o.kind {
		case opBegin:
			if begins == nil {
				begins = make(map[string]*op)
			}
			begins[o.rec.RequestID] = o
		case opFinish:
			if b := begins[o.rec.RequestID]; b != nil {
				delete(begins, o.rec.RequestID)
				b.merged, o.merged = true, true
				o.rec.CreatedAt = b.rec.CreatedAt
			}
		}
	}
}

// rowError is the failure of the statement of one op in a batch.
type rowError struct {
	o   *op
	err error
}

func (e *rowError) Error() string { return e.err.Error() }
func (e *rowError) Unwrap() error { return e.err }

// refused says whether err is SQLite refusing a row itself (a constraint,
// a trigger, a value out of range), which trying again cannot change,
// unlike a full disk or an I/O error.
func refused(err error) bool {
	var se *sqlite.Error
	if !errors.As(err, &se) {
		return false
	}
	switch se.Code() & 0xff {
	case sqlite3.SQLITE_CONSTRAINT, sqlite3.SQLITE_MISMATCH, sqlite3.SQLITE_TOOBIG, sqlite3.SQLITE_RANGE:
		return true
	}
	return false
}

// duplicate logs a row the writer did not write because the request
// already had one: a second Begin, or a Finish of a final record.
func (l *Ledger) duplicate(o *op) {
	if o.kind == opFinish {
		l.duplicateFinish(&o.rec)
		return
	}
	l.log.Warn("usage: duplicate begin ignored", "request_id", o.rec.RequestID)
}

// apply runs the batch in one transaction. A row not written because its
// request has one (see op.wrote) does not touch the others; any SQL error
// aborts the whole batch, because after an I/O error SQLite may already
// have rolled the transaction back and later statements would run outside
// it.
func (l *Ledger) apply(batch []*op) error {
	// The writer's statements are the driver's own (driverStmt): they run
	// while Raw holds the pinned connection.
	merge(batch)
	return l.wc.Raw(func(any) error {
		ctx := context.Background() // a caller's cancellation must not abort others' writes
		return l.txn.run(ctx, func() error {
			for _, o := range batch {
				if err := l.stmts.apply(ctx, o); err != nil {
					return &rowError{o: o, err: err}
				}
			}
			return nil
		})
	})
}
