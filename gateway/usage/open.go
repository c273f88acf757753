package usage

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"time"

	_ "modernc.org/sqlite" // registers driver "sqlite"
)

// Options tunes the writer. The zero value is a good default.
type Options struct {
	// MaxBatch caps how many queued operations share one transaction
	// (default 256).
	MaxBatch int
	// QueueSize bounds the operations waiting for the writer (default 8192).
	// When it is full, Begin blocks and Finish waits (up to its context):
	// backpressure instead of unbounded memory.
	QueueSize int
	// BatchDelay is how long the writer gathers rows into one transaction
	// (default 20ms): nobody waits for them (each record is a journal line
	// already), and tens of rows sharing a commit cost a fraction of a
	// commit each. A read or a Ping ends the wait.
	BatchDelay time.Duration
	// JournalLag, if set, is called by the writer for every final record
	// whose row it commits, with the time since its Finish: how long the
	// record existed only as a journal line. It must be quick (a
	// histogram's Observe).
	JournalLag func(time.Duration)
	// JournalSize is the size past which the journal is rewritten with only
	// the records still without their row (default 4 MiB).
	JournalSize int64
	// BusyTimeout is how long SQLite waits on a locked file (default 5s).
	BusyTimeout time.Duration
	// Retention bounds the ledger by age and size (the zero value keeps
	// everything).
	Retention Retention
	// ProbeInterval is how often a ledger whose last commit failed tries a
	// tiny write to learn whether it can commit again (default 1s).
	ProbeInterval time.Duration
	// Logger defaults to slog.Default().
	Logger *slog.Logger
}

func (o *Options) defaults() {
	if o.MaxBatch <= 0 {
		o.MaxBatch = 256
	}
	if o.QueueSize <= 0 {
		o.QueueSize = 8192
	}
	if o.BatchDelay <= 0 {
		o.BatchDelay = 20 * time.Millisecond
	}
	if o.JournalSize <= 0 {
		o.JournalSize = 4 << 20
	}
	if o.BusyTimeout <= 0 {
		o.BusyTimeout = 5 * time.Second
	}
	if o.Retention.Interval <= 0 {
		o.Retention.Interval = time.Minute
	}
	if o.ProbeInterval <= 0 {
		o.ProbeInterval = time.Second
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
}

// Ledger is safe for concurrent use.
type Ledger struct {
	opts Options
	log  *slog.Logger
	path string
	w    *sql.DB // exactly one connection, owned by the writer goroutine
	// wc is that connection, pinned after the migration: the writer's
	// statements, its BEGIN and COMMIT included, are prepared on it once
	// (writerTxn), and a statement on a pinned connection can never be
	// retried on another one in the middle of a transaction.
	wc     *sql.Conn
	txn    writerTxn
	r      *sql.DB // query_only pool; WAL lets it read while the writer writes
	c      *sql.DB // one connection for background WAL checkpoints
	ckStop chan struct{}
	ckDone chan struct{}
	stmts  writerStmts
	// journal makes each Begin and Finish durable (journal.go).
	journal *journal
	// retry are rows whose transaction failed (a full disk): they are tried
	// again first in the next one. Writer goroutine only.
	retry     []*op
	unlock    func() error
	recovered int
	// recoveredIDs are the request ids Open turned into interrupted: the
	// gateway releases their quota reservations (gateway/quota).
	recoveredIDs []string

	// mu guards closed and the send side of q: Begin/Finish hold it shared
	// while sending, Close takes it exclusively before closing q, so no send
	// can ever hit a closed channel.
	mu     sync.RWMutex
	closed bool
	q      chan *op

	counters
	writeHealth
	writerDone chan struct{}
	closeOnce  sync.Once
	closeErr   error
}

// writerCacheSize bounds the writer connection's page cache (KiB, as
// SQLite's negative cache_size). SQLite's default, 2,000 KiB, fills up
// after a few hundred thousand records and stays: memory outside the Go
// heap (modernc's allocator). Appending a record touches the right edge of
// the table and of each index, a few dozen pages; pages beyond the cache
// are read back from the OS page cache, at no measurable CPU cost a
// request.
const writerCacheSize = "-256"

// Open opens (creating if needed) the ledger at path, migrates its schema,
// writes the rows of the journal's records that the file does not have,
// and recovers rows a previous process left in_progress: they become
// "interrupted" with finished_at set to now. Only one Ledger may have a file
// open at a time (an advisory lock on path+".lock"), because recovery assumes
// no other live process owns those in_progress rows.
func Open(ctx context.Context, path string, opts Options) (_ *Ledger, err error) {
	opts.defaults()
	if path == "" || path == ":memory:" {
		return nil, fmt.Errorf("usage: open: a file path is required, got %q", path)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("usage: open: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(abs), 0o750); err != nil {
		return nil, fmt.Errorf("usage: open: create directory: %w", err)
	}
	unlock, err := lockFile(abs + ".lock")
	if err != nil {
		return nil, fmt.Errorf("usage: open %s: %w", abs, err)
	}
	l := &Ledger{opts: opts, log: opts.Logger, path: abs, unlock: unlock}
	defer func() {
		if err != nil {
			if l.journal != nil {
				_ = l.journal.close()
			}
			_ = l.closeDBs()
		}
	}()
	// Create the file ourselves so it (and, by SQLite's rule, its -wal and
	// -shm) gets 0600 instead of the umask default.
	f, err := os.OpenFile(abs, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("usage: open: %w", err)
	}
	_ = f.Close()

	busy := fmt.Sprint(opts.BusyTimeout.Milliseconds())
	l.w, err = sql.Open("sqlite", dsn(abs, url.Values{
		"_pragma": {
			"busy_timeout(" + busy + ")",
			"journal_mode(WAL)",
			// NORMAL in WAL mode: a commit survives a process crash (the
			// WAL is written before COMMIT returns) but not an OS crash;
			// fsync per commit would cap us at the disk's flush rate.
			"synchronous(NORMAL)",
			"journal_size_limit(67108864)",
			// No checkpoint inside a commit a request is waiting for: its
			// fsyncs set the tail latency. The checkpointer goroutine does
			// it in the background instead (see checkpoint.go).
			"wal_autocheckpoint(0)",
			"cache_size(" + writerCacheSize + ")",
		},
		// Every write transaction takes the write lock up front, so it can
		// never fail halfway with SQLITE_BUSY on lock upgrade.
		"_txlock": {"immediate"},
	}))
	if err != nil {
		return nil, fmt.Errorf("usage: open writer: %w", err)
	}
	l.w.SetMaxOpenConns(1)
	l.w.SetMaxIdleConns(1)
	l.w.SetConnMaxLifetime(0)
	l.w.SetConnMaxIdleTime(0)

	from, to, err := migrate(ctx, l.w)
	if err != nil {
		return nil, err
	}
	if from != to {
		l.log.Info("usage ledger schema migrated", "path", abs, "from", from, "to", to)
	}
	if l.wc, err = l.w.Conn(ctx); err != nil {
		return nil, fmt.Errorf("usage: open writer: %w", err)
	}
	if err = l.wc.Raw(func(dc any) error {
		if err := l.stmts.prepare(ctx, dc); err != nil {
			return err
		}
		return l.txn.prepare(ctx, dc)
	}); err != nil {
		return nil, err
	}
	// The journal's records become rows first, so recovery closes the
	// in_progress ones with the rest. Replay is idempotent: a crash before
	// the journal is emptied below replays it again, writing nothing twice.
	jpath := journalPath(abs)
	if err = l.replay(jpath); err != nil {
		return nil, err
	}
	if l.recoveredIDs, err = recoverInProgress(ctx, l.wc); err != nil {
		return nil, err
	}
	l.recovered = len(l.recoveredIDs)
	if l.recovered > 0 {
		l.log.Warn("usage ledger recovered unfinished records as interrupted", "path", abs, "count", l.recovered)
	}
	if l.journal, err = openJournal(jpath, opts.JournalSize); err != nil {
		return nil, err
	}

	l.r, err = sql.Open("sqlite", dsn(abs, url.Values{
		"_pragma": {"busy_timeout(" + busy + ")", "query_only(1)"},
	}))
	if err != nil {
		return nil, fmt.Errorf("usage: open reader: %w", err)
	}
	l.r.SetMaxOpenConns(4)
	l.r.SetMaxIdleConns(4)
	if err = l.r.PingContext(ctx); err != nil {
		return nil, fmt.Errorf("usage: open reader: %w", err)
	}

	if err = l.startCheckpointer(ctx, abs, busy); err != nil {
		return nil, err
	}

	l.q = make(chan *op, opts.QueueSize)
	l.writerDone = make(chan struct{})
	go l.run()
	l.startProber()
	return l, nil
}

// dsn builds a file: URI so that any byte in the path ('?', '#', '%') is
// escaped instead of being taken for a query string.
func dsn(abs string, q url.Values) string {
	u := url.URL{Scheme: "file", Path: abs}
	return "file:" + u.EscapedPath() + "?" + q.Encode()
}

// replay writes the rows of the journal's records that the database does
// not have, in one transaction of the writer's (before it runs).
func (l *Ledger) replay(path string) error {
	ops, bad, err := readJournal(path)
	if err != nil {
		return err
	}
	if bad > 0 {
		l.log.Warn("usage ledger: journal lines unreadable, skipped", "path", path, "count", bad)
	}
	if len(ops) == 0 {
		return nil
	}
	if err := l.apply(ops); err != nil {
		return fmt.Errorf("usage: journal: replay: %w", err)
	}
	begins, finals := 0, 0
	for _, o := range ops {
		switch {
		case !o.wrote:
		case o.kind == opFinish:
			finals++
		default:
			begins++
		}
	}
	if begins > 0 || finals > 0 {
		l.log.Info("usage ledger: records recovered from the journal", "path", path,
			"begins", begins, "final_records", finals)
	}
	return nil
}

func recoverInProgress(ctx context.Context, db *sql.Conn) ([]string, error) {
	rows, err := db.QueryContext(ctx,
		`UPDATE usage_records SET status = ?, finished_at_us = ? WHERE status = ? RETURNING request_id`,
		StatusInterrupted, time.Now().UnixMicro(), StatusInProgress)
	if err != nil {
		return nil, fmt.Errorf("usage: recover in_progress records: %w", err)
	}
	defer rows.Close()
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, fmt.Errorf("usage: recover in_progress records: %w", err)
		}
		ids = append(ids, id)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("usage: recover in_progress records: %w", err)
	}
	return ids, nil
}

// Recovered reports how many in_progress rows Open turned into interrupted.
func (l *Ledger) Recovered() int { return l.recovered }

// RecoveredIDs are the request ids of the records Open turned into
// interrupted (a new slice each call).
func (l *Ledger) RecoveredIDs() []string { return append([]string(nil), l.recoveredIDs...) }

// Path is the absolute path of the database file.
func (l *Ledger) Path() string { return l.path }

// Close stops accepting operations, waits until every queued operation is
// committed, and closes the database. It is safe to call more than once.
func (l *Ledger) Close() error {
	l.closeOnce.Do(func() {
		l.stopProber()
		l.mu.Lock()
		l.closed = true
		close(l.q)
		l.mu.Unlock()
		<-l.writerDone
		l.stopCheckpointer()
		var jerr error
		if l.journal != nil {
			jerr = l.journal.close()
		}
		l.closeErr = errors.Join(jerr, l.closeDBs())
	})
	return l.closeErr
}

func (l *Ledger) closeDBs() error {
	var errs []error
	if l.wc != nil {
		// The driver's statements are closed while Raw holds their connection.
		errs = append(errs, l.wc.Raw(func(any) error { return errors.Join(l.stmts.close(), l.txn.close()) }))
		errs = append(errs, l.wc.Close())
	}
	if l.c != nil {
		errs = append(errs, l.c.Close())
	}
	if l.r != nil {
		errs = append(errs, l.r.Close())
	}
	if l.w != nil {
		// Closing the last connection checkpoints the WAL into the main file.
		errs = append(errs, l.w.Close())
	}
	if l.unlock != nil {
		errs = append(errs, l.unlock())
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("usage: close: %w", err)
	}
	return nil
}
