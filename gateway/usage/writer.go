package usage

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"sync/atomic"
	"time"
)

type opKind uint8

const (
	opBegin opKind = iota
	opFinish
	opPing
	opFlush // write a held Begin now (hold.go)
	opSync  // answered once every op queued before it is committed (sync.go)
)

// op is one unit of work for the writer. Its Pending is embedded by
// pointer, not by value: a stream's exchange keeps its Begin's Pending for
// the stream's whole life, and must not keep the op (its record copy, about
// 0.5 KB) with it; that costs Begin a second small allocation.
type op struct {
	*Pending
	kind     opKind
	rec      Record
	attempts string // encoded by the caller, keeping JSON work off the single writer

	// Begin hold (hold.go), touched by the writer goroutine only.
	deadline time.Time
	taken    bool
	merged   *op // on a Finish: the held Begin its insert also answers

	// journaled: a Begin or Finish already durable in the journal
	// (journal.go), its Pending settled or never waited for. Set before it
	// is queued.
	journaled bool
	// queued: when a journaled Finish returned (Options.JournalLag).
	queued time.Time
}

// Pending is the handle of a Begin. Its insert is queued; Committed tells
// when it reached the database.
type Pending struct {
	done chan struct{}
	err  error
	rid  string // the request, for Persist
}

// Committed is closed once the insert is durable (committed to the WAL, or
// written to the begin journal: Options.BeginJournal) or has failed; Err
// says which. Commits are FIFO — when a Pending is committed,
// every Begin or Finish queued before it is too — except for Begins the
// writer holds (Options.BeginHold): they are committed with their Finish,
// at the end of the hold, or at once after Ledger.Persist.
func (p *Pending) Committed() <-chan struct{} { return p.done }

// Err is the outcome of the insert: nil once committed, ErrNotCommittedYet
// before Committed is closed, otherwise the failure (ErrDuplicate,
// ErrClosed, ErrInvalidRecord, or a database error).
func (p *Pending) Err() error {
	select {
	case <-p.done:
		return p.err
	default:
		return ErrNotCommittedYet
	}
}

// Wait blocks until the insert is committed or ctx ends.
func (p *Pending) Wait(ctx context.Context) error {
	select {
	case <-p.done:
		return p.err
	case <-ctx.Done():
		return fmt.Errorf("usage: wait for begin: %w", ctx.Err())
	}
}

// settledDone is the channel of every Pending answered when it is made (a
// journaled Begin): closed once, never closed again (settle leaves journaled
// ops alone), so they share it instead of each making and closing one.
var settledDone = func() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}()

func (p *Pending) fail(err error) *Pending {
	p.err = err
	close(p.done)
	return p
}

// Begin queues the in_progress insert of r and returns at once: it does no
// I/O. r.Status and r.FinishedAt are ignored (the row is in_progress);
// a zero r.CreatedAt becomes now. If the queue is full (Options.QueueSize
// operations waiting), Begin blocks until the writer makes room: that is the
// ledger's backpressure, and it only happens when the disk cannot keep up.
func (l *Ledger) Begin(r Record) *Pending {
	o := &op{kind: opBegin, rec: r, Pending: &Pending{rid: r.RequestID}}
	if r.RequestID == "" {
		o.done = make(chan struct{})
		return o.fail(errRequestIDMissing)
	}
	o.rec.Status = StatusInProgress
	o.rec.FinishedAt = time.Time{}
	if o.rec.CreatedAt.IsZero() {
		o.rec.CreatedAt = time.Now()
	}
	o.attempts = encodeAttempts(r.Attempts)
	if l.journal != nil {
		if ok, _ := l.journal.add(o); ok {
			o.done = settledDone // durable now; the writer leaves this Pending alone
		}
	}
	if o.done == nil {
		o.done = make(chan struct{})
	}
	if err := l.enqueue(context.Background(), o); err != nil {
		if o.journaled {
			// Closed under us: the journal keeps the line (Close reports
			// it), and the next Open records the request as interrupted.
			return o.Pending
		}
		return o.fail(err)
	}
	return o.Pending
}

// Finish queues the final version of the record r.RequestID and waits until
// it is committed — with Options.FinishJournal, until it is a journal line
// (durable as a commit is: it survives kill -9, and the next Open writes
// its row if this process does not), and every read waits for its row.
// Every field is written from r except CreatedAt, which keeps the Begin
// value; a zero r.FinishedAt becomes now. r.Status must be a final status.
//
// Exactly once: a second Finish of the same request is not applied and
// returns ErrAlreadyFinished (journaled, only while the first one's row is
// not committed yet; after that the writer refuses it and logs it). A
// Finish whose Begin is still queued is applied after it (one writer,
// FIFO). A Finish with no Begin at all inserts the final record, so a
// request whose Begin failed still leaves one record.
//
// If ctx ends first, Finish returns ctx's error but the update, once queued,
// is still applied: pass a context that outlives a client disconnect
// (context.WithoutCancel) when the record must be written before replying.
func (l *Ledger) Finish(ctx context.Context, r Record) error {
	if r.RequestID == "" {
		return errRequestIDMissing
	}
	if !isFinalStatus(r.Status) {
		return fmt.Errorf("%w: %q is not a final status (request %s)", ErrInvalidRecord, r.Status, r.RequestID)
	}
	// No channel yet: a journaled Finish's Pending is never answered
	// (settle), so only the Finish that waits for its row makes one.
	o := &op{kind: opFinish, rec: r, Pending: &Pending{}}
	if o.rec.FinishedAt.IsZero() {
		o.rec.FinishedAt = time.Now()
	}
	if o.rec.CreatedAt.IsZero() {
		o.rec.CreatedAt = o.rec.FinishedAt
	}
	o.attempts = encodeAttempts(r.Attempts)
	// A Finish without the Begin's time cannot stand in for its Begin's
	// line (the row keeps the Begin's CreatedAt): it waits for its row.
	if l.journal != nil && l.opts.FinishJournal && !r.CreatedAt.IsZero() {
		if done, err := l.finishJournaled(ctx, o); done {
			return err
		}
	}
	o.done = make(chan struct{})
	if err := l.enqueue(ctx, o); err != nil {
		if errors.Is(err, ErrClosed) {
			l.nUnrecorded.Add(1)
		}
		return fmt.Errorf("usage: finish %s: %w", r.RequestID, err)
	}
	if err := o.Wait(ctx); err != nil {
		if errors.Is(err, ErrAlreadyFinished) {
			l.duplicateFinish(&r)
		}
		return err
	}
	return nil
}

// finishJournaled makes o's final record durable as a journal line and
// queues its row without waiting for it (Options.FinishJournal); done is
// false when the journal cannot take it, and Finish then waits for the row.
func (l *Ledger) finishJournaled(ctx context.Context, o *op) (done bool, err error) {
	ok, err := l.journal.add(o)
	if err != nil {
		l.duplicateFinish(&o.rec)
		return true, err
	}
	if !ok {
		return false, nil
	}
	l.unsynced.Add(1)
	o.queued = time.Now()
	if err := l.enqueue(ctx, o); err != nil {
		l.unsynced.Add(-1)
		// The line stays in the journal (Close keeps a journal with open
		// lines), so the next Open writes the row: late, not lost.
		l.log.Warn("usage: final record kept in the journal until the ledger is opened again",
			"request_id", o.rec.RequestID, "err", err)
	}
	return true, nil
}

// duplicateFinish logs a second Finish of r's request, which was not
// applied.
func (l *Ledger) duplicateFinish(r *Record) {
	l.log.Warn("usage: duplicate finish ignored", "request_id", r.RequestID, "status", r.Status)
}

// Ping checks that the store is writable end to end: it sends a tiny meta
// write through the writer queue, so it fails (or times out with ctx) if the
// writer is stuck, the queue is saturated, or the disk refuses writes.
func (l *Ledger) Ping(ctx context.Context) error { return l.through(ctx, opPing, "ping") }

// through queues an op of kind and waits until the writer has committed it
// and everything queued before it.
func (l *Ledger) through(ctx context.Context, kind opKind, what string) error {
	o := &op{kind: kind, Pending: &Pending{done: make(chan struct{})}}
	if err := l.enqueue(ctx, o); err != nil {
		return fmt.Errorf("usage: %s: %w", what, err)
	}
	if err := o.Wait(ctx); err != nil {
		return fmt.Errorf("usage: %s: %w", what, err)
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
	// transaction failed, or the ledger was closed): requests left without a
	// final record.
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
	// unsynced counts journaled Finishes queued and not yet through a
	// commit: readers sync first while it is not zero (sync.go).
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
	routed := make([]*op, 0, l.opts.MaxBatch)
	hold := time.NewTimer(time.Hour)
	hold.Stop()
	for {
		var holdC <-chan time.Time
		if d, ok := l.held.next(); ok {
			hold.Reset(time.Until(d))
			holdC = hold.C
		}
		select {
		case o, ok := <-l.q:
			hold.Stop()
			if !ok {
				// Closing: the held Begins of requests still open are
				// written, for recovery to close as interrupted.
				if rest := l.held.expired(l.retrying(routed[:0]), time.Time{}); len(rest) > 0 {
					l.commit(rest)
				}
				return
			}
			batch = l.fill(append(batch[:0], o))
		case <-holdC:
			batch = batch[:0]
		}
		routed = l.route(l.retrying(routed[:0]), batch, time.Now())
		if len(routed) > 0 {
			l.commit(routed)
		}
		clear(batch) // let finished ops be collected while we wait
		clear(routed)
	}
}

// retrying appends the journaled Finishes a failed transaction left, to be
// tried first in the next one.
func (l *Ledger) retrying(dst []*op) []*op {
	dst = append(dst, l.retry...)
	clear(l.retry)
	l.retry = l.retry[:0]
	return dst
}

// fill adds whatever else is queued, up to MaxBatch; with MaxDelay it also
// waits that long for latecomers. A batch that starts with a journaled op
// waits BatchDelay instead, until an op arrives that somebody waits for
// (anything the journal did not take: a read's sync, a Ping, a Finish
// while the journal is off).
func (l *Ledger) fill(batch []*op) []*op {
	d, gathering := l.opts.MaxDelay, false
	if l.opts.BatchDelay > d && batch[0].journaled {
		d, gathering = l.opts.BatchDelay, true
	}
	var deadline <-chan time.Time
	if d > 0 {
		t := time.NewTimer(d)
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
			if gathering && !o.journaled {
				deadline = nil // commit what is queued now
			}
		case <-deadline:
			return batch
		}
	}
	return batch
}

func (l *Ledger) commit(batch []*op) {
	if !writes(batch) {
		// Only syncs: nothing to commit, and no verdict on the ledger's
		// health either.
		for _, o := range batch {
			o.settle(nil)
		}
		return
	}
	err := l.apply(batch)
	wasFailing := l.noteCommit(err)
	lost := 0
	if err != nil {
		l.nFailed.Add(1)
		for _, o := range batch {
			switch {
			case o.kind != opFinish:
			case o.journaled && len(l.retry) < l.opts.QueueSize:
				// Its line keeps it durable; the next transaction tries
				// its row again (the prober's, once the disk takes writes).
				o.err = nil
				l.retry = append(l.retry, o)
			default:
				if o.journaled {
					l.journal.drop(o.rec.RequestID)
					l.unsynced.Add(-1)
				}
				lost++
			}
		}
		l.nUnrecorded.Add(uint64(lost))
		// The first failure of a run is logged by noteCommit; after it, only
		// batches that lose records are worth a line (not every probe).
		if wasFailing && lost > 0 {
			l.log.Error("usage: batch failed", "ops", len(batch), "final_records_lost", lost,
				"final_records_kept_for_retry", len(l.retry), "err", err)
		}
	} else if l.journal != nil {
		l.journal.written(batch)
	}
	l.nBatches.Add(1)
	l.nOps.Add(uint64(len(batch)))
	var now time.Time
	if err == nil && l.opts.JournalLag != nil {
		now = time.Now()
	}
	for _, o := range batch {
		if b := o.merged; b != nil {
			berr := err
			if err == nil && errors.Is(o.err, ErrAlreadyFinished) {
				berr = fmt.Errorf("%w: %s", ErrDuplicate, b.rec.RequestID)
			}
			b.settle(berr)
		}
		// A journaled Finish's row is in: reads need not wait for it any
		// more (one that failed is in l.retry, or was counted lost above).
		if o.kind == opFinish && o.journaled && err == nil {
			l.unsynced.Add(-1)
			if !now.IsZero() {
				l.opts.JournalLag(now.Sub(o.queued))
			}
			if errors.Is(o.err, ErrAlreadyFinished) {
				l.duplicateFinish(&o.rec)
			}
		}
		switch {
		case o.kind == opSync:
			o.settle(nil) // a read goes on with what is committed
		case err != nil:
			o.settle(err)
		default:
			o.settle(o.err)
		}
	}
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

// settle answers o's Pending with err, except a journaled Begin's: Begin
// answered that one already, when its line was written.
func (o *op) settle(err error) {
	if !o.journaled {
		o.fail(err)
	}
}

// apply runs the batch in one transaction. Logical refusals (duplicate
// Begin, second Finish) are per-op results and do not touch the others; any
// SQL error aborts the whole batch, because after an I/O error SQLite may
// already have rolled the transaction back and later statements would run
// outside it.
func (l *Ledger) apply(batch []*op) error {
	// The writer's statements are the driver's own (driverStmt): they run
	// while Raw holds the pinned connection.
	return l.wc.Raw(func(any) error { return l.applyBatch(batch) })
}

func (l *Ledger) applyBatch(batch []*op) (err error) {
	ctx := context.Background() // a caller's cancellation must not abort others' writes
	if _, err = l.txn.begin.exec(ctx, nil); err != nil {
		return fmt.Errorf("usage: begin batch: %w", err)
	}
	defer func() {
		if err != nil {
			// After some errors (a full disk, an I/O error) SQLite has
			// rolled the transaction back itself; this ROLLBACK then finds
			// none and fails, which leaves the connection as it should be.
			_, _ = l.txn.rollback.exec(ctx, nil)
		}
	}()
	for _, o := range batch {
		if err = l.stmts.apply(ctx, o); err != nil {
			return err
		}
	}
	if _, err = l.txn.commit.exec(ctx, nil); err != nil {
		return fmt.Errorf("usage: commit batch: %w", err)
	}
	return nil
}

// writerTxn is the writer's transaction control as statements prepared
// once. database/sql's BeginTx and Commit had the driver prepare "BEGIN"
// and "COMMIT" afresh for every batch: about a tenth of the writer's CPU
// at eight concurrent streams (docs/BENCHMARK.md, fifth round). IMMEDIATE:
// every write transaction takes the write lock up front, so it can never
// fail halfway with SQLITE_BUSY on lock upgrade.
type writerTxn struct{ begin, commit, rollback execStmt }

func (t *writerTxn) prepare(ctx context.Context, c stmtPreparer) error {
	for _, p := range []struct {
		dst *execStmt
		sql string
	}{{&t.begin, "BEGIN IMMEDIATE"}, {&t.commit, "COMMIT"}, {&t.rollback, "ROLLBACK"}} {
		st, err := c.prepare(ctx, p.sql)
		if err != nil {
			return fmt.Errorf("usage: prepare %s: %w", p.sql, err)
		}
		*p.dst = st
	}
	return nil
}

func (t *writerTxn) close() error { return closeStmts(t.begin, t.commit, t.rollback) }

type writerStmts struct {
	insert, finish, ping execStmt
	// args is a statement's argument list, reused: the writer runs one
	// statement at a time, and neither the driver nor database/sql keeps
	// the list.
	args *[]driver.NamedValue
}

const insertSQL = `INSERT INTO usage_records (
	request_id, client_request_id, key_id, key_fingerprint, alias, provider, provider_model,
	status, http_status, error_type, fallbacks, attempts, stream,
	input_tokens, output_tokens, cached_input_tokens, reasoning_tokens, cost_picos, currency,
	latency_ms, created_at_us, finished_at_us
) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (request_id) DO NOTHING`

// The status guard is what makes Finish exactly-once: only an in_progress
// row can be finished.
const finishSQL = `UPDATE usage_records SET
	client_request_id = ?, key_id = ?, key_fingerprint = ?, alias = ?, provider = ?, provider_model = ?,
	status = ?, http_status = ?, error_type = ?, fallbacks = ?, attempts = ?, stream = ?,
	input_tokens = ?, output_tokens = ?, cached_input_tokens = ?, reasoning_tokens = ?, cost_picos = ?, currency = ?,
	latency_ms = ?, finished_at_us = ?
WHERE request_id = ? AND status = 'in_progress'`

const pingSQL = `INSERT INTO ledger_meta (k, v) VALUES ('last_ping', ?)
ON CONFLICT (k) DO UPDATE SET v = excluded.v`

// Statements are prepared once on the writer's pinned connection, where
// its transactions run (writerTxn). Replay prepares them on its
// transaction.
func (s *writerStmts) prepare(ctx context.Context, c stmtPreparer) error {
	for _, p := range []struct {
		dst *execStmt
		sql string
	}{{&s.insert, insertSQL}, {&s.finish, finishSQL}, {&s.ping, pingSQL}} {
		st, err := c.prepare(ctx, p.sql)
		if err != nil {
			return fmt.Errorf("usage: prepare: %w", err)
		}
		*p.dst = st
	}
	s.args = new([]driver.NamedValue)
	return nil
}

func (s *writerStmts) close() error { return closeStmts(s.insert, s.finish, s.ping) }

// closeStmts closes the statements that were prepared.
func closeStmts(sts ...execStmt) error {
	var errs []error
	for _, st := range sts {
		if st != nil {
			errs = append(errs, st.Close())
		}
	}
	return errors.Join(errs...)
}

func (s writerStmts) apply(ctx context.Context, o *op) error {
	r := &o.rec
	switch o.kind {
	case opBegin:
		n, err := s.insert.exec(ctx, s.insertArgs(o, 0))
		if err != nil {
			return fmt.Errorf("usage: begin %s: %w", r.RequestID, err)
		}
		if n == 0 && !o.journaled { // a journaled Begin's Pending is settled
			o.err = fmt.Errorf("%w: %s", ErrDuplicate, r.RequestID)
		}
	case opFinish:
		fin := toMicros(r.FinishedAt)
		if o.merged != nil { // its Begin was never written
			return s.insertFinal(ctx, o, fin)
		}
		n, err := s.finish.exec(ctx, s.finishArgs(o, fin))
		if err != nil {
			return fmt.Errorf("usage: finish %s: %w", r.RequestID, err)
		}
		if n == 1 {
			return nil
		}
		// No in_progress row: either there was never a Begin (insert the
		// final record) or it is already final (the insert does nothing).
		return s.insertFinal(ctx, o, fin)
	case opPing:
		if _, err := s.ping.exec(ctx, namedArgs(nil, time.Now().UTC().Format(time.RFC3339Nano))); err != nil {
			return fmt.Errorf("usage: ping write: %w", err)
		}
	}
	return nil
}

func (s writerStmts) insertFinal(ctx context.Context, o *op, fin int64) error {
	n, err := s.insert.exec(ctx, s.insertArgs(o, fin))
	if err != nil {
		return fmt.Errorf("usage: finish %s: %w", o.rec.RequestID, err)
	}
	if n == 0 {
		o.err = fmt.Errorf("%w: %s", ErrAlreadyFinished, o.rec.RequestID)
	}
	return nil
}

// insertArgs are the insert's arguments for o, in s.args.
func (s writerStmts) insertArgs(o *op, finished int64) []driver.NamedValue {
	*s.args = insertArgs(*s.args, o, finished)
	return *s.args
}

// insertArgs sets dst to the insert's arguments for o, as the driver takes
// them (int64, not int: no converter runs between here and SQLite);
// finished is a final record's, and NULL for any other op's row.
func insertArgs(dst []driver.NamedValue, o *op, finished int64) []driver.NamedValue {
	a := rowArgs(dst).sized(22)
	a.str(0, o.rec.RequestID)
	recordArgs(a, 1, o)
	a.int(20, toMicros(o.rec.CreatedAt))
	if o.kind == opFinish {
		a.int(21, finished)
	} else {
		a[21].Value = nil // an in_progress row's
	}
	return a
}

// finishArgs are the update's arguments for o, in s.args, the same way.
func (s writerStmts) finishArgs(o *op, finished int64) []driver.NamedValue {
	a := rowArgs(*s.args).sized(21)
	recordArgs(a, 0, o)
	a.int(19, finished)
	a.str(20, o.rec.RequestID)
	*s.args = a
	return a
}

// recordArgs sets the 19 columns the insert and the update share, in their
// order (client_request_id through latency_ms), from position at.
func recordArgs(a rowArgs, at int, o *op) {
	r := &o.rec
	for i, v := range [...]string{r.ClientRequestID, r.KeyID, r.KeyFingerprint, r.Alias, r.Provider, r.ProviderModel, r.Status} {
		a.str(at+i, v)
	}
	a.int(at+7, int64(r.HTTPStatus))
	a.str(at+8, r.ErrorType)
	a.int(at+9, int64(r.Fallbacks))
	a.str(at+10, o.attempts)
	a.bool(at+11, r.Stream)
	for i, v := range [...]int64{int64(r.InputTokens), int64(r.OutputTokens), int64(r.CachedInputTokens), int64(r.ReasoningTokens), int64(r.Cost)} {
		a.int(at+12+i, v)
	}
	a.str(at+17, r.Currency)
	a.int(at+18, r.LatencyMs)
}

func changes(res sql.Result, err error) (int64, error) {
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}
