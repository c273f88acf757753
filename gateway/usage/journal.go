package usage

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
)

// The begin journal makes a held Begin durable without a transaction.
//
// With Options.BeginHold alone, a Begin lives in the writer's memory until
// its Finish or the end of its hold, so a crash loses it, and a stream must
// have its in_progress row committed (Persist) before its first byte: a
// second transaction for nearly every stream. With Options.BeginJournal,
// Begin also appends the row, as one JSON line, to a file beside the
// database: one write(2) into the page cache, which survives kill -9 as the
// WAL does with synchronous=NORMAL (and, like it, not an OS crash). The
// Begin is durable as soon as the line is written, so Committed closes at
// once and Persist has nothing left to do. Open inserts every journaled
// Begin that has no row yet, and recovery closes it as interrupted like any
// in_progress row: a crash loses no record, however young.
//
// A line is needed until the writer commits a row for its request (the
// in_progress row at the end of a hold, or the final row). The journal
// keeps those lines in memory and, once the file outgrows
// Options.JournalSize, rewrites it with only them (a new file renamed over
// the old one), so it stays small however many requests pass.

// journalLine is a Begin as the journal stores it: what the in_progress
// insert writes.
type journalLine struct {
	RequestID       string `json:"id"`
	ClientRequestID string `json:"cid,omitempty"`
	KeyID           string `json:"key,omitempty"`
	KeyFingerprint  string `json:"fp,omitempty"`
	Alias           string `json:"alias,omitempty"`
	Provider        string `json:"prov,omitempty"`
	ProviderModel   string `json:"pm,omitempty"`
	Stream          bool   `json:"stream,omitempty"`
	Attempts        string `json:"att,omitempty"`
	CreatedAtUs     int64  `json:"created_us"`
}

type beginJournal struct {
	path  string
	limit int64
	log   *slog.Logger

	rot       sync.RWMutex // appends share it; a rewrite holds it alone
	mu        sync.Mutex   // the fields below
	f         *os.File
	size      int64             // of the file
	open      map[string][]byte // request id → its line, until a row is committed
	openBytes int64             // the lines in open
	err       error             // sticky: after a failed write the journal is off
}

func journalPath(db string) string { return db + "-begins" }

// openJournal starts an empty journal file at path (Open has already
// recovered what the last one held).
func openJournal(path string, limit int64, log *slog.Logger) (*beginJournal, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("usage: begin journal: %w", err)
	}
	return &beginJournal{path: path, limit: limit, log: log, f: f, open: map[string][]byte{}}, nil
}

// add writes o's line; false when the journal cannot take it (o is then
// left to the writer, as without a journal).
func (j *beginJournal) add(o *op) bool {
	r := &o.rec
	att := o.attempts
	if att == "[]" {
		att = "" // what nearly every Begin has; replay puts it back
	}
	line, err := json.Marshal(journalLine{RequestID: r.RequestID, ClientRequestID: r.ClientRequestID,
		KeyID: r.KeyID, KeyFingerprint: r.KeyFingerprint, Alias: r.Alias, Provider: r.Provider,
		ProviderModel: r.ProviderModel, Stream: r.Stream, Attempts: att, CreatedAtUs: toMicros(r.CreatedAt)})
	if err != nil {
		return false
	}
	line = append(line, '\n')
	// Appends write outside mu, so that Begins on many cores do not queue
	// behind each other's write(2) (O_APPEND keeps each line whole); a
	// rewrite takes rot exclusively, so no append is in flight during it.
	j.rot.RLock()
	rewrite, ok := j.reserve(r.RequestID, line)
	if !ok {
		j.rot.RUnlock()
		return false
	}
	_, err = j.f.Write(line)
	j.rot.RUnlock()
	if err != nil {
		j.mu.Lock()
		j.fail(err)
		j.forget(r.RequestID)
		j.mu.Unlock()
		return false
	}
	o.journaled = true
	if rewrite {
		j.rot.Lock()
		j.mu.Lock()
		// Another Begin may have rewritten it meanwhile.
		if j.err == nil && j.overgrown() {
			j.fail(j.rotate())
		}
		j.mu.Unlock()
		j.rot.Unlock()
	}
	return true
}

// reserve records line as open and counts it in the file; rewrite says
// the file is overgrown.
func (j *beginJournal) reserve(id string, line []byte) (rewrite, ok bool) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.err != nil {
		return false, false
	}
	if _, dup := j.open[id]; dup {
		return false, false // the writer reports the duplicate
	}
	j.open[id] = line
	j.openBytes += int64(len(line))
	j.size += int64(len(line))
	return j.overgrown(), true
}

// overgrown: the file is past its limit and mostly lines no longer needed
// (rewriting costs the open lines, so a journal of many long streams is
// not rewritten at every Begin). Called with mu held.
func (j *beginJournal) overgrown() bool {
	return j.size > j.limit && j.size > 2*j.openBytes
}

// fail turns the journal off after err (nil: nothing happened), once and
// loudly: from then on held Begins are written as rows before a first byte,
// as without a journal, and a crash loses the held ones again. Called with
// mu held.
func (j *beginJournal) fail(err error) {
	if err == nil || j.err != nil {
		return
	}
	j.err = err
	j.log.Error("usage ledger: begin journal off after a write error; held Begins are committed as rows instead",
		"path", j.path, "err", err)
}

// forget drops id's line; called with mu held.
func (j *beginJournal) forget(id string) {
	if line, ok := j.open[id]; ok {
		delete(j.open, id)
		j.openBytes -= int64(len(line))
	}
}

// written forgets the lines of the journaled ops a committed transaction
// wrote a row for.
func (j *beginJournal) written(batch []*op) {
	j.mu.Lock()
	defer j.mu.Unlock()
	for _, o := range batch {
		b := o
		if o.kind == opFinish {
			b = o.merged
		}
		if b != nil && b.journaled {
			j.forget(b.rec.RequestID)
		}
	}
}

// rotate replaces the file with one holding only the open lines. Renaming
// over the old file is atomic: a crash leaves one or the other, and both
// hold every line still needed. Called with rot and mu held.
func (j *beginJournal) rotate() error {
	tmp := j.path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("usage: begin journal: rotate: %w", err)
	}
	w := bufio.NewWriter(f)
	var size int64
	for _, line := range j.open {
		n, _ := w.Write(line)
		size += int64(n)
	}
	if err = errors.Join(w.Flush(), os.Rename(tmp, j.path)); err != nil {
		_ = f.Close()
		return fmt.Errorf("usage: begin journal: rotate: %w", err)
	}
	old := j.f
	j.f, j.size = f, size
	return old.Close()
}

// close empties the journal: called after the writer committed every
// queued and held op, so no line is still needed.
func (j *beginJournal) close() error {
	j.rot.Lock()
	defer j.rot.Unlock()
	j.mu.Lock()
	defer j.mu.Unlock()
	if len(j.open) > 0 {
		return errors.Join(j.f.Close(), fmt.Errorf("usage: begin journal: %d begins without a row at close", len(j.open)))
	}
	return errors.Join(j.f.Truncate(0), j.f.Close())
}

// replayJournal inserts, as in_progress rows, the Begins the journal at path
// holds that have no row yet; recovery then closes them like any other. A
// line cut short or garbled (a write that failed halfway) is skipped and
// counted. A missing file is an empty journal.
func replayJournal(ctx context.Context, db *sql.DB, path string) (inserted, bad int, err error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return 0, 0, nil
	}
	if err != nil {
		return 0, 0, fmt.Errorf("usage: begin journal: %w", err)
	}
	defer f.Close()
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return 0, 0, fmt.Errorf("usage: begin journal: replay: %w", err)
	}
	defer func() {
		if err != nil {
			_ = tx.Rollback()
		}
	}()
	st, err := tx.PrepareContext(ctx, insertSQL)
	if err != nil {
		return 0, 0, fmt.Errorf("usage: begin journal: replay: %w", err)
	}
	defer st.Close()
	rd := bufio.NewReader(f)
	for {
		line, rerr := rd.ReadBytes('\n')
		if len(line) > 0 {
			var jl journalLine
			if line[len(line)-1] != '\n' || json.Unmarshal(line, &jl) != nil || jl.RequestID == "" {
				bad++
			} else {
				o := &op{rec: Record{RequestID: jl.RequestID, ClientRequestID: jl.ClientRequestID, KeyID: jl.KeyID,
					KeyFingerprint: jl.KeyFingerprint, Alias: jl.Alias, Provider: jl.Provider, ProviderModel: jl.ProviderModel,
					Status: StatusInProgress, Stream: jl.Stream, CreatedAt: fromMicros(jl.CreatedAtUs)}, attempts: jl.Attempts}
				if o.attempts == "" {
					o.attempts = "[]"
				}
				n, err := changes(st.ExecContext(ctx, insertArgs(o, nil)...))
				if err != nil {
					return 0, 0, fmt.Errorf("usage: begin journal: replay %s: %w", jl.RequestID, err)
				}
				inserted += int(n)
			}
		}
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			return 0, 0, fmt.Errorf("usage: begin journal: %w", rerr)
		}
	}
	if err = tx.Commit(); err != nil {
		return 0, 0, fmt.Errorf("usage: begin journal: replay: %w", err)
	}
	return inserted, bad, nil
}
