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
	"strconv"
	"sync"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/llmgw/llmgw/api/money"
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

// journalLine is a Begin or a Finish as the journal stores it: what the
// in_progress insert writes, and with Status set the final record
// (Options.FinishJournal).
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

	// A final record's (empty on a Begin's line).
	Status            string `json:"st,omitempty"`
	HTTPStatus        int    `json:"hs,omitempty"`
	ErrorType         string `json:"et,omitempty"`
	Fallbacks         int    `json:"fb,omitempty"`
	InputTokens       int    `json:"in,omitempty"`
	OutputTokens      int    `json:"out,omitempty"`
	CachedInputTokens int    `json:"cin,omitempty"`
	ReasoningTokens   int    `json:"rt,omitempty"`
	CostPicos         int64  `json:"cost,omitempty"`
	Currency          string `json:"cur,omitempty"`
	LatencyMs         int64  `json:"lat,omitempty"`
	FinishedAtUs      int64  `json:"fin_us,omitempty"`
}

// appendLine appends o's journal line, the JSON of its journalLine, with
// its newline. Appends rather than json.Marshal, because every request
// pays for two lines: a final record's line takes ≈ 0.8 µs and no
// allocation against ≈ 2.2 µs and two with json.Marshal
// (BenchmarkJournalLine); TestAppendLineDecodesAsTheRecord keeps the two
// equal.
func appendLine(b []byte, o *op) []byte {
	r := &o.rec
	b = appendStr(append(b, `{"id":`...), r.RequestID)
	b = appendOptStr(b, `,"cid":`, r.ClientRequestID)
	b = appendOptStr(b, `,"key":`, r.KeyID)
	b = appendOptStr(b, `,"fp":`, r.KeyFingerprint)
	b = appendOptStr(b, `,"alias":`, r.Alias)
	b = appendOptStr(b, `,"prov":`, r.Provider)
	b = appendOptStr(b, `,"pm":`, r.ProviderModel)
	if r.Stream {
		b = append(b, `,"stream":true`...)
	}
	if o.attempts != "[]" { // what nearly every record has; replay puts it back
		b = appendOptStr(b, `,"att":`, o.attempts)
	}
	b = strconv.AppendInt(append(b, `,"created_us":`...), toMicros(r.CreatedAt), 10)
	if o.kind == opFinish {
		b = appendOptStr(b, `,"st":`, r.Status)
		b = appendOptInt(b, `,"hs":`, int64(r.HTTPStatus))
		b = appendOptStr(b, `,"et":`, r.ErrorType)
		b = appendOptInt(b, `,"fb":`, int64(r.Fallbacks))
		b = appendOptInt(b, `,"in":`, int64(r.InputTokens))
		b = appendOptInt(b, `,"out":`, int64(r.OutputTokens))
		b = appendOptInt(b, `,"cin":`, int64(r.CachedInputTokens))
		b = appendOptInt(b, `,"rt":`, int64(r.ReasoningTokens))
		b = appendOptInt(b, `,"cost":`, int64(r.Cost))
		b = appendOptStr(b, `,"cur":`, r.Currency)
		b = appendOptInt(b, `,"lat":`, r.LatencyMs)
		b = appendOptInt(b, `,"fin_us":`, toMicros(r.FinishedAt))
	}
	return append(b, "}\n"...)
}

// lineSize is about what appendLine writes for o (more only when a string
// needs escapes): the line is kept while its request is open, and a buffer
// grown by append would copy it and leave twice its size behind.
func lineSize(o *op) int {
	r := &o.rec
	// The member names and a time; the attempts are JSON in a string, a
	// backslash before each of their quotes.
	n := 128 + len(r.RequestID) + len(r.ClientRequestID) + len(r.KeyID) + len(r.KeyFingerprint) +
		len(r.Alias) + len(r.Provider) + len(r.ProviderModel) + len(o.attempts) + len(o.attempts)/2
	if o.kind == opFinish {
		n += 192 + len(r.Status) + len(r.ErrorType) + len(r.Currency)
	}
	return n
}

// appendStr quotes s as JSON; invalid UTF-8 becomes U+FFFD, as with
// json.Marshal.
func appendStr(b []byte, s string) []byte {
	b, _ = jsontext.AppendQuote(b, s)
	return b
}

func appendOptStr(b []byte, key, s string) []byte {
	if s == "" {
		return b
	}
	return appendStr(append(b, key...), s)
}

func appendOptInt(b []byte, key string, n int64) []byte {
	if n == 0 {
		return b
	}
	return strconv.AppendInt(append(b, key...), n, 10)
}

// op is the ledger operation a line stands for.
func (jl *journalLine) op() *op {
	o := &op{Pending: &Pending{}, kind: opBegin, journaled: true, attempts: jl.Attempts, rec: Record{RequestID: jl.RequestID,
		ClientRequestID: jl.ClientRequestID, KeyID: jl.KeyID, KeyFingerprint: jl.KeyFingerprint, Alias: jl.Alias,
		Provider: jl.Provider, ProviderModel: jl.ProviderModel, Status: StatusInProgress, Stream: jl.Stream,
		CreatedAt: fromMicros(jl.CreatedAtUs)}}
	if o.attempts == "" {
		o.attempts = "[]"
	}
	if jl.Status != "" {
		r := &o.rec
		o.kind = opFinish
		r.Status, r.HTTPStatus, r.ErrorType, r.Fallbacks = jl.Status, jl.HTTPStatus, jl.ErrorType, jl.Fallbacks
		r.InputTokens, r.OutputTokens, r.CachedInputTokens, r.ReasoningTokens = jl.InputTokens, jl.OutputTokens, jl.CachedInputTokens, jl.ReasoningTokens
		r.Cost, r.Currency, r.LatencyMs, r.FinishedAt = money.Picos(jl.CostPicos), jl.Currency, jl.LatencyMs, fromMicros(jl.FinishedAtUs)
	}
	return o
}

type beginJournal struct {
	path  string
	limit int64
	log   *slog.Logger

	rot       sync.RWMutex // appends share it; a rewrite holds it alone
	mu        sync.Mutex   // the fields below
	f         *os.File
	size      int64                   // of the file
	open      map[string]journalEntry // request id → its newest line, until its row is committed
	openBytes int64                   // the lines in open
	err       error                   // sticky: after a failed write the journal is off
}

// journalEntry is the line a request still needs: its Begin's, until a row
// is committed for it, or its final record's, which replaces the Begin's
// (it says everything the Begin did) until the final row is committed.
type journalEntry struct {
	line  []byte
	final bool
}

func journalPath(db string) string { return db + "-begins" }

// openJournal starts an empty journal file at path (Open has already
// recovered what the last one held).
func openJournal(path string, limit int64, log *slog.Logger) (*beginJournal, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("usage: begin journal: %w", err)
	}
	return &beginJournal{path: path, limit: limit, log: log, f: f, open: map[string]journalEntry{}}, nil
}

// add writes o's line (a Begin's, or a Finish's final record); false when
// the journal cannot take it (o is then left to the writer, as without a
// journal). A Finish whose final line is already written is refused with
// ErrAlreadyFinished.
func (j *beginJournal) add(o *op) (bool, error) {
	line := appendLine(make([]byte, 0, lineSize(o)), o)
	final := o.kind == opFinish
	// Appends write outside mu, so that requests on many cores do not queue
	// behind each other's write(2) (O_APPEND keeps each line whole); a
	// rewrite takes rot exclusively, so no append is in flight during it.
	j.rot.RLock()
	id := o.rec.RequestID
	rewrite, prev, ok, err := j.reserve(id, journalEntry{line: line, final: final})
	if !ok {
		j.rot.RUnlock()
		return false, err
	}
	_, err = j.f.Write(line)
	j.rot.RUnlock()
	if err != nil {
		j.mu.Lock()
		j.fail(err)
		j.forget(id, true)
		if prev.line != nil { // the Begin's line is still in the file
			j.open[id] = prev
			j.openBytes += int64(len(prev.line))
		}
		j.mu.Unlock()
		return false, nil
	}
	o.journaled = true
	if rewrite {
		j.rot.Lock()
		j.mu.Lock()
		// Another request may have rewritten it meanwhile.
		if j.err == nil && j.overgrown() {
			j.fail(j.rotate())
		}
		j.mu.Unlock()
		j.rot.Unlock()
	}
	return true, nil
}

// reserve records e as id's open line and counts it in the file; rewrite
// says the file is overgrown, prev is the Begin's line a final one replaces.
// Called with rot held.
func (j *beginJournal) reserve(id string, e journalEntry) (rewrite bool, prev journalEntry, ok bool, err error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.err != nil {
		return false, prev, false, nil
	}
	if cur, had := j.open[id]; had {
		switch {
		case !e.final:
			return false, prev, false, nil // a second Begin: the writer reports the duplicate
		case cur.final:
			return false, prev, false, fmt.Errorf("%w: %s", ErrAlreadyFinished, id)
		}
		prev = cur
		j.openBytes -= int64(len(cur.line))
	}
	j.open[id] = e
	j.openBytes += int64(len(e.line))
	j.size += int64(len(e.line))
	return j.overgrown(), prev, true, nil
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

// forget drops id's line, a Begin's only unless final; called with mu held.
func (j *beginJournal) forget(id string, final bool) {
	if e, ok := j.open[id]; ok && (final || !e.final) {
		delete(j.open, id)
		j.openBytes -= int64(len(e.line))
	}
}

// drop forgets a final record the writer gave up on (counted lost).
func (j *beginJournal) drop(id string) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.forget(id, true)
}

// written forgets the lines of the requests a committed transaction wrote
// a row for: a final row ends every line of its request, an in_progress
// row only the Begin's.
func (j *beginJournal) written(batch []*op) {
	j.mu.Lock()
	defer j.mu.Unlock()
	for _, o := range batch {
		switch {
		case o.kind == opFinish:
			j.forget(o.rec.RequestID, true)
		case o.kind == opBegin && o.journaled:
			j.forget(o.rec.RequestID, false)
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
	for _, e := range j.open {
		n, _ := w.Write(e.line)
		size += int64(n)
	}
	if err = errors.Join(w.Flush(), os.Rename(tmp, j.path)); err != nil {
		_ = f.Close()
		return fmt.Errorf("usage: begin journal: rotate: %w", err)
	}
	old := j.f
	j.f, j.size = f, size
	// Closing the replaced file frees its blocks (its name is gone), which
	// on a filesystem mounted with discard can take milliseconds; every
	// request's append waits while rot is held, so it happens outside. Its
	// error says nothing: every line was written with its own write(2).
	go func() { _ = old.Close() }()
	return nil
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

// replayed is what replayJournal did.
type replayed struct {
	begins int // in_progress rows inserted: recovery closes them as interrupted
	finals int // final records written
	bad    int // lines cut short or garbled, skipped
}

// replayJournal writes what the journal at path holds and the database does
// not: a Begin without a row becomes an in_progress row (recovery then
// closes it like any other), a final record becomes the request's final row
// unless it has one. Lines are independent of their order (a rewrite keeps
// them in any order), and replaying twice writes nothing twice. A line cut
// short or garbled (a write that failed halfway) is skipped and counted. A
// missing file is an empty journal.
func replayJournal(ctx context.Context, db *sql.DB, path string) (res replayed, err error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return res, nil
	}
	if err != nil {
		return res, fmt.Errorf("usage: begin journal: %w", err)
	}
	defer f.Close()
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return res, fmt.Errorf("usage: begin journal: replay: %w", err)
	}
	defer func() {
		if err != nil {
			_ = tx.Rollback()
		}
	}()
	var st writerStmts
	defer st.close()
	if err = st.prepare(ctx, txPreparer{tx}); err != nil {
		return res, fmt.Errorf("usage: begin journal: replay: %w", err)
	}
	rd := bufio.NewReader(f)
	for {
		line, rerr := rd.ReadBytes('\n')
		if len(line) > 0 {
			var jl journalLine
			if line[len(line)-1] != '\n' || json.Unmarshal(line, &jl) != nil || jl.RequestID == "" ||
				(jl.Status != "" && !isFinalStatus(jl.Status)) {
				res.bad++
			} else if err = res.apply(ctx, st, jl.op()); err != nil {
				return res, fmt.Errorf("usage: begin journal: replay: %w", err)
			}
		}
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			return res, fmt.Errorf("usage: begin journal: %w", rerr)
		}
	}
	if err = tx.Commit(); err != nil {
		return res, fmt.Errorf("usage: begin journal: replay: %w", err)
	}
	return res, nil
}

func (res *replayed) apply(ctx context.Context, st writerStmts, o *op) error {
	if o.kind == opFinish {
		if err := st.apply(ctx, o); err != nil {
			return err
		}
		if o.err == nil {
			res.finals++
		}
		return nil
	}
	n, err := st.insert.exec(ctx, st.insertArgs(o, 0))
	if err != nil {
		return fmt.Errorf("%s: %w", o.rec.RequestID, err)
	}
	res.begins += int(n)
	return nil
}
