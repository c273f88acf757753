package usage

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// The hand-off moves a ledger's final records to another replica's ledger
// when its replica is removed (gateway/peers.HandOff): the sender exports
// a batch (ExportBatch), the receiver inserts it (Import) and acknowledges,
// the sender deletes it (Forget). Import skips a record it already has, so
// a batch sent again after a crash or a lost answer is added once; a
// marker in ledger_meta (SetHandoff) names the receiver until the sender is
// empty, so a hand-off cut short is finished later with the same receiver,
// never split across two.
//
// Every write here goes through the single writer (opImport, opForget,
// opMeta) and is committed before the call returns.

// DefaultExportBatch is ExportBatch's n when it is given none.
const DefaultExportBatch = 500

// handoffKey is the ledger_meta key of the hand-off marker.
const handoffKey = "handoff_to"

// maxRequestIDLen is the longest request id Import takes: the longest a
// cursor carries (DecodeCursor), so every imported record can be paged.
const maxRequestIDLen = 128

// bulkOp is a hand-off op's work and result.
type bulkOp struct {
	rows     []*op    // opImport: one final record each (kind opFinish)
	ids      []string // opForget
	key, val string   // opMeta; val "" deletes the key
	n        int64    // rows changed by the committed transaction
}

// exportSQL walks the primary key's index from after, without a sort
// (TestExportWalksThePrimaryKey).
const exportSQL = `SELECT ` + selectCols + ` FROM usage_records
	WHERE request_id > ? AND status != 'in_progress'
	ORDER BY request_id LIMIT ?`

const forgetSQL = `DELETE FROM usage_records WHERE request_id = ? AND status != 'in_progress'`

const metaSetSQL = `INSERT INTO ledger_meta (k, v) VALUES (?, ?)
ON CONFLICT (k) DO UPDATE SET v = excluded.v`

const metaDelSQL = `DELETE FROM ledger_meta WHERE k = ?`

// ExportBatch returns up to n final records (in_progress ones are left
// out: they are not done changing) with a request id greater than after
// ("" for the first), in ascending request id order, with every column. n
// below 1 is DefaultExportBatch. Records a Begin or Finish returned for
// before the call are committed first, so they are seen.
func (l *Ledger) ExportBatch(ctx context.Context, after string, n int) ([]Record, error) {
	if n < 1 {
		n = DefaultExportBatch
	}
	if err := l.sync(ctx); err != nil {
		return nil, fmt.Errorf("usage: export: %w", err)
	}
	rows, err := l.r.QueryContext(ctx, exportSQL, after, n)
	if err != nil {
		return nil, fmt.Errorf("usage: export: %w", err)
	}
	defer rows.Close()
	recs := make([]Record, 0, min(n, 64))
	for rows.Next() {
		r, err := scanRecord(rows)
		if err != nil {
			return nil, fmt.Errorf("usage: export: %w", err)
		}
		recs = append(recs, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("usage: export: %w", err)
	}
	return recs, nil
}

// Import inserts recs, other ledgers' final records, as this ledger's own.
// A record whose request id is already here (an earlier attempt's batch, or
// a replay) is skipped and not counted in added. The whole batch is
// checked first (ValidateImport): one invalid record refuses all of it with
// an error wrapping ErrInvalidRecord, and nothing is written. The batch is
// one transaction, committed before Import returns; an error that is not
// ErrInvalidRecord (or ErrClosed, or ctx's) wraps ErrNotWritable. If ctx
// ends while the writer has the batch, it may still be committed: importing
// it again adds nothing twice.
func (l *Ledger) Import(ctx context.Context, recs []Record) (added int, err error) {
	seen := make(map[string]struct{}, len(recs))
	for i := range recs {
		if err := ValidateImport(&recs[i]); err != nil {
			return 0, fmt.Errorf("usage: import: record %d: %w", i, err)
		}
		if _, dup := seen[recs[i].RequestID]; dup {
			return 0, fmt.Errorf("usage: import: %w: request id %s twice in one batch", ErrInvalidRecord, recs[i].RequestID)
		}
		seen[recs[i].RequestID] = struct{}{}
	}
	if len(recs) == 0 {
		return 0, nil
	}
	b := &bulkOp{rows: make([]*op, len(recs))}
	for i, r := range recs {
		b.rows[i] = &op{kind: opFinish, rec: r, attempts: encodeAttempts(r.Attempts), owners: encodeOwners(r.Owners)}
	}
	if err := l.bulk(ctx, opImport, b, "import"); err != nil {
		var re *rowError
		switch {
		case errors.As(err, &re) && refused(re.err):
			return 0, fmt.Errorf("%w: %w", ErrInvalidRecord, err)
		case errors.Is(err, ErrClosed), errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
			return 0, err
		}
		return 0, fmt.Errorf("%w: %w", ErrNotWritable, err)
	}
	return int(b.n), nil
}

// ValidateImport says whether Import takes r: a final record with a
// request id a cursor can carry (1 to 128 printable ASCII bytes, no
// space), its creation and finish times, and no negative count or cost.
// It accepts whatever else Finish accepts, so that every record a ledger
// holds can be handed to another.
func ValidateImport(r *Record) error {
	switch {
	case r.RequestID == "":
		return errRequestIDMissing
	case len(r.RequestID) > maxRequestIDLen || !printableASCII(r.RequestID):
		return fmt.Errorf("%w: request id %q is not 1 to %d printable ASCII bytes", ErrInvalidRecord, r.RequestID, maxRequestIDLen)
	case !isFinalStatus(r.Status):
		return fmt.Errorf("%w: %s: %q is not a final status", ErrInvalidRecord, r.RequestID, r.Status)
	case r.CreatedAt.IsZero() || r.FinishedAt.IsZero():
		return fmt.Errorf("%w: %s: a final record needs its created and finished times", ErrInvalidRecord, r.RequestID)
	case r.InputTokens < 0 || r.OutputTokens < 0 || r.CachedInputTokens < 0 || r.ReasoningTokens < 0 ||
		r.Cost < 0 || r.Fallbacks < 0 || r.LatencyMs < 0 || r.HTTPStatus < 0:
		return fmt.Errorf("%w: %s: a negative count or cost", ErrInvalidRecord, r.RequestID)
	}
	return nil
}

func printableASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c <= ' ' || c > '~' {
			return false
		}
	}
	return true
}

// Forget deletes the final records of ids (in_progress ones stay), once
// the receiver of a hand-off has acknowledged them; ids not here are
// skipped. The deletion is committed before Forget returns.
func (l *Ledger) Forget(ctx context.Context, ids []string) error {
	if len(ids) == 0 {
		return nil
	}
	return l.bulk(ctx, opForget, &bulkOp{ids: ids}, "forget")
}

// SetHandoff records, durably, that this ledger is being handed to the
// receiver to (a base URL), before any record is sent: a process that dies
// half-way finds it at its next start (Handoff) and finishes with the same
// receiver.
func (l *Ledger) SetHandoff(ctx context.Context, to string) error {
	if to == "" {
		return errors.New("usage: set handoff: a receiver is required")
	}
	return l.bulk(ctx, opMeta, &bulkOp{key: handoffKey, val: to}, "set handoff")
}

// Handoff returns the receiver SetHandoff recorded, if a hand-off was
// started and not finished (ClearHandoff).
func (l *Ledger) Handoff(ctx context.Context) (to string, ok bool, err error) {
	err = l.r.QueryRowContext(ctx, `SELECT v FROM ledger_meta WHERE k = ?`, handoffKey).Scan(&to)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return "", false, nil
	case err != nil:
		return "", false, fmt.Errorf("usage: handoff marker: %w", err)
	}
	return to, true, nil
}

// ClearHandoff removes the marker once every record was handed off.
func (l *Ledger) ClearHandoff(ctx context.Context) error {
	return l.bulk(ctx, opMeta, &bulkOp{key: handoffKey}, "clear handoff")
}

// bulk has the writer run b as an op of kind and waits for its commit.
func (l *Ledger) bulk(ctx context.Context, kind opKind, b *bulkOp, what string) error {
	return l.await(ctx, &op{kind: kind, bulk: b, done: make(chan struct{})}, what)
}

// applyBulk runs a hand-off op's statements in the writer's transaction.
// b.n is set afresh on every run: a failed transaction is tried again.
func (s writerStmts) applyBulk(ctx context.Context, o *op) error {
	b := o.bulk
	b.n = 0
	switch o.kind {
	case opImport:
		for _, row := range b.rows {
			n, err := s.insert.exec(ctx, s.insertArgs(row, toMicros(row.rec.FinishedAt)))
			if err != nil {
				return fmt.Errorf("usage: import %s: %w", row.rec.RequestID, err)
			}
			b.n += n
		}
	case opForget:
		for _, id := range b.ids {
			n, err := s.forget.exec(ctx, namedArgs(nil, id))
			if err != nil {
				return fmt.Errorf("usage: forget %s: %w", id, err)
			}
			b.n += n
		}
	case opMeta:
		var err error
		if b.val == "" {
			b.n, err = s.metaDel.exec(ctx, namedArgs(nil, b.key))
		} else {
			b.n, err = s.metaSet.exec(ctx, namedArgs(nil, b.key, b.val))
		}
		if err != nil {
			return fmt.Errorf("usage: meta %s: %w", b.key, err)
		}
	}
	return nil
}
