package usage

import (
	"context"
	"fmt"
	"time"
)

// Retention bounds the ledger. Pruning runs on the background connection
// (the checkpointer's), in short transactions of at most retentionBatch rows,
// so the request writer waits at most one small delete for the write lock.
// Only final records are dropped, oldest first (request ids are time
// ordered); a request still in progress is never touched.
type Retention struct {
	// MaxAge drops final records older than this (0: keep forever).
	MaxAge time.Duration
	// MaxBytes drops the oldest final records while the live data (pages in
	// use, free pages excluded) is larger than this (0: no size bound). The
	// file does not shrink: SQLite reuses the freed pages, so it stops
	// growing at about this size.
	MaxBytes int64
	// Interval between pruning passes (default one minute).
	Interval time.Duration
}

const retentionBatch = 1000

// RetentionStats counts what pruning dropped since the ledger opened.
type RetentionStats struct {
	DroppedByAge, DroppedBySize uint64
}

// RetentionStats reports what pruning has dropped so far.
func (l *Ledger) RetentionStats() RetentionStats {
	return RetentionStats{DroppedByAge: l.nDroppedAge.Load(), DroppedBySize: l.nDroppedSize.Load()}
}

// Prune runs one retention pass now (the background loop calls it every
// Interval); it returns how many records it dropped.
func (l *Ledger) Prune(ctx context.Context) (int, error) { return l.prune(ctx, l.opts.Retention) }

// prune first has the rows still in the writer's hands committed, so a
// pass judges every record journaled before it.
func (l *Ledger) prune(ctx context.Context, r Retention) (int, error) {
	if err := l.sync(ctx); err != nil {
		return 0, err
	}
	total := 0
	if r.MaxAge > 0 {
		cutoff := time.Now().Add(-r.MaxAge).UnixMicro()
		for {
			n, err := l.dropOldest(ctx, cutoff)
			total += n
			l.nDroppedAge.Add(uint64(n))
			if err != nil || n < retentionBatch {
				if err != nil {
					return total, err
				}
				break
			}
		}
	}
	if r.MaxBytes > 0 {
		for {
			used, err := l.liveBytes(ctx)
			if err != nil {
				return total, err
			}
			if used <= r.MaxBytes {
				break
			}
			n, err := l.dropOldest(ctx, 0)
			total += n
			l.nDroppedSize.Add(uint64(n))
			if err != nil {
				return total, err
			}
			if n == 0 {
				break // nothing final left to drop
			}
		}
	}
	return total, nil
}

// dropOldest deletes up to retentionBatch of the oldest final records (only
// those created before createdBeforeUs when it is not 0), in one short
// transaction.
func (l *Ledger) dropOldest(ctx context.Context, createdBeforeUs int64) (int, error) {
	if createdBeforeUs == 0 {
		createdBeforeUs = 1<<63 - 1
	}
	res, err := l.c.ExecContext(ctx, `DELETE FROM usage_records WHERE request_id IN (
		SELECT request_id FROM usage_records WHERE status != 'in_progress' AND created_at_us < ?
		ORDER BY request_id LIMIT ?)`, createdBeforeUs, retentionBatch)
	if err != nil {
		return 0, fmt.Errorf("usage: retention: %w", err)
	}
	n, err := res.RowsAffected()
	return int(n), err
}

// liveBytes is the database's size without its free pages.
func (l *Ledger) liveBytes(ctx context.Context) (int64, error) {
	var pages, free, size int64
	for _, q := range []struct {
		pragma string
		into   *int64
	}{{"page_count", &pages}, {"freelist_count", &free}, {"page_size", &size}} {
		if err := l.c.QueryRowContext(ctx, "PRAGMA "+q.pragma).Scan(q.into); err != nil {
			return 0, fmt.Errorf("usage: retention: %s: %w", q.pragma, err)
		}
	}
	return (pages - free) * size, nil
}
