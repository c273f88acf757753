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
	for {
		select {
		case <-l.ckStop:
			return
		case <-t.C:
			if _, err := l.c.Exec("PRAGMA wal_checkpoint(PASSIVE)"); err != nil {
				l.log.Warn("usage ledger: background checkpoint failed", "err", err)
			}
		}
	}
}

func (l *Ledger) stopCheckpointer() {
	if l.ckStop == nil {
		return
	}
	close(l.ckStop)
	<-l.ckDone
}
