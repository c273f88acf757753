package usage

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"time"
)

// driverStmt is a statement of the SQLite driver itself, prepared on the
// writer's pinned connection and run only inside that connection's Raw
// (Ledger.apply), which holds it for the writer: the writer passes its own
// argument list (rowArgs) straight to the driver, where database/sql's
// Stmt.ExecContext would build and convert a fresh one for every row.
type driverStmt struct {
	driver.Stmt
	x driver.StmtExecContext
}

func prepareDriverStmt(ctx context.Context, dc any, query string) (driverStmt, error) {
	p, ok := dc.(driver.ConnPrepareContext)
	if !ok {
		return driverStmt{}, fmt.Errorf("usage: driver connection %T cannot prepare with a context", dc)
	}
	st, err := p.PrepareContext(ctx, query)
	if err != nil {
		return driverStmt{}, err
	}
	x, ok := st.(driver.StmtExecContext)
	if !ok {
		_ = st.Close()
		return driverStmt{}, fmt.Errorf("usage: driver statement %T cannot execute with a context", st)
	}
	return driverStmt{st, x}, nil
}

// exec runs the statement with positional arguments and reports the rows
// it changed.
func (s driverStmt) exec(ctx context.Context, args []driver.NamedValue) (int64, error) {
	res, err := s.x.ExecContext(ctx, args)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

// namedArgs sets args to vals, positionally, reusing its storage.
func namedArgs(args []driver.NamedValue, vals ...driver.Value) []driver.NamedValue {
	args = args[:0]
	for i, v := range vals {
		args = append(args, driver.NamedValue{Ordinal: i + 1, Value: v})
	}
	return args
}

// rowArgs fills a statement's argument list in place, one position at a
// time, for the writer's one row after another. A string or int64 equal to
// the value already at its position is left as it is: storing either in a
// driver.Value allocates (an int64 from 256 on), and from one row to the
// next most columns repeat (key, alias, provider, model, status, attempts).
type rowArgs []driver.NamedValue

// sized returns a with n positions, numbered; positions it already had keep
// their values for the comparisons.
func (a rowArgs) sized(n int) rowArgs {
	if cap(a) < n {
		a = append(a[:cap(a)], make(rowArgs, n-cap(a))...)
	}
	a = a[:n]
	for i := range a {
		a[i].Ordinal = i + 1
	}
	return a
}

func (a rowArgs) str(i int, s string) {
	if old, ok := a[i].Value.(string); !ok || old != s {
		a[i].Value = s
	}
}

func (a rowArgs) int(i int, v int64) {
	if old, ok := a[i].Value.(int64); !ok || old != v {
		a[i].Value = v
	}
}

func (a rowArgs) bool(i int, v bool) { a[i].Value = v } // no allocation: a bool is boxed statically

// writerTxn is the writer's transaction control as statements prepared
// once on its connection (database/sql's BeginTx and Commit would have the
// driver prepare "BEGIN" and "COMMIT" afresh for every batch). IMMEDIATE:
// every write transaction takes the write lock up front, so it can never
// fail halfway with SQLITE_BUSY on lock upgrade.
type writerTxn struct{ begin, commit, rollback driverStmt }

func (t *writerTxn) prepare(ctx context.Context, dc any) error {
	for _, p := range []struct {
		dst *driverStmt
		sql string
	}{{&t.begin, "BEGIN IMMEDIATE"}, {&t.commit, "COMMIT"}, {&t.rollback, "ROLLBACK"}} {
		st, err := prepareDriverStmt(ctx, dc, p.sql)
		if err != nil {
			return fmt.Errorf("usage: prepare %s: %w", p.sql, err)
		}
		*p.dst = st
	}
	return nil
}

func (t *writerTxn) close() error { return closeStmts(t.begin, t.commit, t.rollback) }

// run runs body in one transaction: committed if body succeeds, rolled
// back otherwise.
func (t *writerTxn) run(ctx context.Context, body func() error) (err error) {
	if _, err = t.begin.exec(ctx, nil); err != nil {
		return fmt.Errorf("usage: begin batch: %w", err)
	}
	defer func() {
		if err != nil {
			// After some errors (a full disk, an I/O error) SQLite has
			// rolled the transaction back itself; this ROLLBACK then finds
			// none and fails, which leaves the connection as it should be.
			_, _ = t.rollback.exec(ctx, nil)
		}
	}()
	if err = body(); err != nil {
		return err
	}
	if _, err = t.commit.exec(ctx, nil); err != nil {
		return fmt.Errorf("usage: commit batch: %w", err)
	}
	return nil
}

type writerStmts struct {
	insert, finish, ping driverStmt
	// The hand-off's (handoff.go).
	forget, metaSet, metaDel driverStmt
	// args is a statement's argument list, reused: the writer runs one
	// statement at a time, and neither the driver nor database/sql keeps
	// the list.
	args *[]driver.NamedValue
}

const insertSQL = `INSERT INTO usage_records (
	request_id, client_request_id, key_id, key_fingerprint, alias, provider, provider_model,
	status, http_status, error_type, fallbacks, attempts, stream,
	input_tokens, output_tokens, cached_input_tokens, reasoning_tokens, cost_picos, currency,
	latency_ms, endpoint, session, key_group, owners, created_at_us, finished_at_us
) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (request_id) DO NOTHING`

// The status guard is what makes Finish exactly-once: only an in_progress
// row can be finished.
const finishSQL = `UPDATE usage_records SET
	client_request_id = ?, key_id = ?, key_fingerprint = ?, alias = ?, provider = ?, provider_model = ?,
	status = ?, http_status = ?, error_type = ?, fallbacks = ?, attempts = ?, stream = ?,
	input_tokens = ?, output_tokens = ?, cached_input_tokens = ?, reasoning_tokens = ?, cost_picos = ?, currency = ?,
	latency_ms = ?, endpoint = ?, session = ?, key_group = ?, owners = ?, finished_at_us = ?
WHERE request_id = ? AND status = 'in_progress'`

const pingSQL = `INSERT INTO ledger_meta (k, v) VALUES ('last_ping', ?)
ON CONFLICT (k) DO UPDATE SET v = excluded.v`

// Statements are prepared once on the writer's pinned connection, where
// its transactions run (writerTxn).
func (s *writerStmts) prepare(ctx context.Context, dc any) error {
	for _, p := range []struct {
		dst *driverStmt
		sql string
	}{{&s.insert, insertSQL}, {&s.finish, finishSQL}, {&s.ping, pingSQL},
		{&s.forget, forgetSQL}, {&s.metaSet, metaSetSQL}, {&s.metaDel, metaDelSQL}} {
		st, err := prepareDriverStmt(ctx, dc, p.sql)
		if err != nil {
			return fmt.Errorf("usage: prepare: %w", err)
		}
		*p.dst = st
	}
	s.args = new([]driver.NamedValue)
	return nil
}

func (s *writerStmts) close() error {
	return closeStmts(s.insert, s.finish, s.ping, s.forget, s.metaSet, s.metaDel)
}

// closeStmts closes the statements that were prepared.
func closeStmts(sts ...driverStmt) error {
	var errs []error
	for _, st := range sts {
		if st.Stmt != nil {
			errs = append(errs, st.Close())
		}
	}
	return errors.Join(errs...)
}

// apply runs o's statement; o.wrote says whether it wrote a row (not when
// the request already has its row: a second Begin, or a Finish of a final
// record).
func (s writerStmts) apply(ctx context.Context, o *op) error {
	r := &o.rec
	switch o.kind {
	case opBegin:
		if o.merged { // its Finish, later in the batch, inserts the row
			o.wrote = true
			return nil
		}
		n, err := s.insert.exec(ctx, s.insertArgs(o, 0))
		if err != nil {
			return fmt.Errorf("usage: begin %s: %w", r.RequestID, err)
		}
		o.wrote = n == 1
	case opFinish:
		// The in_progress row is updated; without one, the final record is
		// inserted (a request whose Begin failed, or whose Begin is in this
		// batch: merged, and tried first). A final row changes neither.
		fin := toMicros(r.FinishedAt)
		update := func() (int64, error) { return s.finish.exec(ctx, s.finishArgs(o, fin)) }
		insert := func() (int64, error) { return s.insert.exec(ctx, s.insertArgs(o, fin)) }
		first, second := update, insert
		if o.merged {
			first, second = insert, update
		}
		n, err := first()
		if err == nil && n == 0 {
			n, err = second()
		}
		if err != nil {
			return fmt.Errorf("usage: finish %s: %w", r.RequestID, err)
		}
		o.wrote = n == 1
	case opImport, opForget, opMeta:
		return s.applyBulk(ctx, o)
	case opPing:
		if _, err := s.ping.exec(ctx, namedArgs(nil, time.Now().UTC().Format(time.RFC3339Nano))); err != nil {
			return fmt.Errorf("usage: ping write: %w", err)
		}
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
	a := rowArgs(dst).sized(recordCols + 3)
	a.str(0, o.rec.RequestID)
	recordArgs(a, 1, o)
	a.int(recordCols+1, toMicros(o.rec.CreatedAt))
	if o.kind == opFinish {
		a.int(recordCols+2, finished)
	} else {
		a[recordCols+2].Value = nil // an in_progress row's
	}
	return a
}

// finishArgs are the update's arguments for o, in s.args, the same way.
func (s writerStmts) finishArgs(o *op, finished int64) []driver.NamedValue {
	a := rowArgs(*s.args).sized(recordCols + 2)
	recordArgs(a, 0, o)
	a.int(recordCols, finished)
	a.str(recordCols+1, o.rec.RequestID)
	*s.args = a
	return a
}

// recordCols is the number of columns the insert and the update share.
const recordCols = 23

// recordArgs sets the recordCols columns the insert and the update share,
// in their order (client_request_id through owners), from position at.
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
	a.str(at+19, r.Endpoint)
	a.str(at+20, r.Session)
	a.str(at+21, r.Group)
	a.str(at+22, o.owners)
}
