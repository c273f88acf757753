package usage

import "context"

// With Options.FinishJournal, Finish returns once its final record is a
// journal line, before the writer commits its row. A read must still see
// every record whose Finish returned before the read began (the gateway
// writes the record before a response's last byte, so a caller that got
// its answer finds its record); sync gives it that by waiting for a
// marker queued behind them (commits are FIFO) — and costs nothing when
// no journaled Finish is waiting for its row.
func (l *Ledger) sync(ctx context.Context) error {
	if l.unsynced.Load() == 0 {
		return nil
	}
	return l.through(ctx, opSync, "sync")
}
