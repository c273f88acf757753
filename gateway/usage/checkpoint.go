package usage

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"time"
)

// checkpointInterval is how often the WAL is copied back into the database
// file. The writer's connection has auto-checkpoint off, so the fsyncs of a
// checkpoint never happen inside a commit that a request is waiting for.
const checkpointInterval = time.Second

func (l *Ledger) startCheckpointer(ctx context.Context, abs, busy string) error {
	var err error
	l.c, err = sql.Open("sqlite", dsn(abs, url.Values{"_pragma": {"busy_timeout(" + busy + ")"}}))
	if err != nil {
		return fmt.Errorf("usage: open checkpointer: %w", err)
	}
	l.c.SetMaxOpenConns(1)
	if err := l.c.PingContext(ctx); err != nil {
		return fmt.Errorf("usage: open checkpointer: %w", err)
	}
	l.ckStop, l.ckDone = make(chan struct{}), make(chan struct{})
	go l.checkpointLoop()
	return nil
}

// checkpointLoop runs PASSIVE checkpoints: they copy what they can without
// waiting for (or blocking) the writer or readers.
func (l *Ledger) checkpointLoop() {
	defer close(l.ckDone)
	t := time.NewTicker(checkpointInterval)
	defer t.Stop()
	r := l.opts.Retention
	prune := r.MaxAge > 0 || r.MaxBytes > 0
	next := time.Now() // the first pass right away: a restart after a long stop prunes at once
	for {
		select {
		case <-l.ckStop:
			return
		case <-t.C:
			if prune && !time.Now().Before(next) {
				next = time.Now().Add(r.Interval)
				// A pass may take its interval, but never less than a floor: a
				// short interval on a busy machine must slow pruning down, not
				// make every pass time out before it has dropped anything.
				ctx, cancel := context.WithTimeout(context.Background(), max(r.Interval, minRetentionPass))
				if n, err := l.Prune(ctx); err != nil {
					l.log.Warn("usage ledger: retention pass failed", "err", err, "dropped", n)
				} else if n > 0 {
					l.log.Info("usage ledger: retention dropped the oldest records", "dropped", n,
						"max_age", r.MaxAge.String(), "max_bytes", r.MaxBytes)
				}
				cancel()
			}
			if _, err := l.c.Exec("PRAGMA wal_checkpoint(PASSIVE)"); err != nil {
				l.log.Warn("usage ledger: background checkpoint failed", "err", err)
			}
		}
	}
}

// minRetentionPass is the least time one retention pass is given.
const minRetentionPass = 10 * time.Second

func (l *Ledger) stopCheckpointer() {
	if l.ckStop == nil {
		return
	}
	close(l.ckStop)
	<-l.ckDone
}
