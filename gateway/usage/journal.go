package usage

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/llmgw/llmgw/api/money"
)

// The journal is how a record becomes durable. Begin and Finish each
// append the record, as one JSON line, to a file beside the database
// (path + "-begins") and return: one write(2) into the page cache, which
// survives kill -9 as a WAL commit with synchronous=NORMAL does (and, like
// it, not an OS crash). The writer then commits the rows in batches
// (writer.go), and every read first waits for the rows of the records
// journaled before it (Ledger.sync). Open replays what the journal holds and
// the database does not, then closes the rows still in_progress as
// interrupted: one recovery path for every way a process can end.
//
// A line is needed until a row is committed for its request (the
// in_progress row for a Begin's line, the final row for a Finish's). The
// journal keeps those lines in memory and, once the file outgrows
// Options.JournalSize, rewrites it with only them (a new file renamed over
// the old one), so it stays small however many requests pass.

// journalLine is a Begin or a Finish as the journal stores it: what the
// in_progress insert writes, and with Status set the final record.
type journalLine struct {
	RequestID       string `json:"id"`
	ClientRequestID string `json:"cid,omitzero"`
	Endpoint        string `json:"ep,omitzero"`
	Session         string `json:"sid,omitzero"`
	Group           string `json:"grp,omitzero"`
	Owners          string `json:"own,omitzero"` // the owners column (encodeOwners), as attempts
	KeyID           string `json:"key,omitzero"`
	KeyFingerprint  string `json:"fp,omitzero"`
	Alias           string `json:"alias,omitzero"`
	Provider        string `json:"prov,omitzero"`
	ProviderModel   string `json:"pm,omitzero"`
	Stream          bool   `json:"stream,omitzero"`
	Attempts        string `json:"att,omitzero"`
	CreatedAtUs     int64  `json:"created_us"`

	// A final record's (empty on a Begin's line).
	Status            string `json:"st,omitzero"`
	HTTPStatus        int    `json:"hs,omitzero"`
	ErrorType         string `json:"et,omitzero"`
	Fallbacks         int    `json:"fb,omitzero"`
	InputTokens       int    `json:"in,omitzero"`
	OutputTokens      int    `json:"out,omitzero"`
	CachedInputTokens int    `json:"cin,omitzero"`
	ReasoningTokens   int    `json:"rt,omitzero"`
	CostPicos         int64  `json:"cost,omitzero"`
	Currency          string `json:"cur,omitzero"`
	LatencyMs         int64  `json:"lat,omitzero"`
	FinishedAtUs      int64  `json:"fin_us,omitzero"`
}

// lineOf is o's journal line, with its newline.
func lineOf(o *op) ([]byte, error) {
	r := &o.rec
	jl := journalLine{RequestID: r.RequestID, ClientRequestID: r.ClientRequestID, Endpoint: r.Endpoint, Session: r.Session, Group: r.Group, Owners: o.owners,
		KeyID: r.KeyID, KeyFingerprint: r.KeyFingerprint, Alias: r.Alias, Provider: r.Provider, ProviderModel: r.ProviderModel,
		Stream: r.Stream, CreatedAtUs: toMicros(r.CreatedAt)}
	if o.attempts != "[]" { // what nearly every Begin has; opOf puts it back
		jl.Attempts = o.attempts
	}
	if o.kind == opFinish {
		jl.Status, jl.HTTPStatus, jl.ErrorType, jl.Fallbacks = r.Status, r.HTTPStatus, r.ErrorType, r.Fallbacks
		jl.InputTokens, jl.OutputTokens, jl.CachedInputTokens, jl.ReasoningTokens = r.InputTokens, r.OutputTokens, r.CachedInputTokens, r.ReasoningTokens
		jl.CostPicos, jl.Currency, jl.LatencyMs, jl.FinishedAtUs = int64(r.Cost), r.Currency, r.LatencyMs, toMicros(r.FinishedAt)
	}
	b, err := json.Marshal(&jl, jsontext.AllowInvalidUTF8(true))
	if err != nil {
		return nil, fmt.Errorf("usage: journal line of %s: %w", r.RequestID, err)
	}
	return append(b, '\n'), nil
}

// opOf is the ledger operation a line stands for.
func opOf(jl *journalLine) *op {
	o := &op{kind: opBegin, attempts: jl.Attempts, owners: jl.Owners, rec: Record{RequestID: jl.RequestID,
		ClientRequestID: jl.ClientRequestID, Endpoint: jl.Endpoint, Session: jl.Session, Group: jl.Group, KeyID: jl.KeyID, KeyFingerprint: jl.KeyFingerprint, Alias: jl.Alias,
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

type journal struct {
	path  string
	limit int64

	rot       sync.RWMutex // appends share it; a rewrite holds it alone
	mu        sync.Mutex   // the fields below
	f         *os.File
	size      int64                   // of the file
	open      map[string]journalEntry // request id → its newest line, until its row is committed
	openBytes int64                   // the lines in open
	// broken is the error of a failed write: the file may end in part of a
	// line, so nothing is appended to it again; the next append (or
	// repair) rewrites the file first.
	broken error
	// closing are the closes of replaced files, in the background.
	closing sync.WaitGroup
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
// replayed what the last one held).
func openJournal(path string, limit int64) (*journal, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("usage: journal: %w", err)
	}
	return &journal{path: path, limit: limit, f: f, open: map[string]journalEntry{}}, nil
}

// add makes o durable by appending its line. A Begin for a request with a
// line still open is refused with ErrDuplicate, a second final record with
// ErrAlreadyFinished; a failed write leaves nothing behind but an error.
func (j *journal) add(o *op) error {
	line, err := lineOf(o)
	if err != nil {
		return err
	}
	if err := j.repair(); err != nil {
		return err
	}
	// Appends write outside mu, so that requests on many cores do not queue
	// behind each other's write(2) (O_APPEND keeps each line whole); a
	// rewrite takes rot exclusively, so no append is in flight during it.
	id := o.rec.RequestID
	j.rot.RLock()
	prev, rewrite, err := j.reserve(id, journalEntry{line: line, final: o.kind == opFinish})
	if err != nil {
		j.rot.RUnlock()
		return err
	}
	_, err = j.f.Write(line)
	j.rot.RUnlock()
	if err != nil {
		j.mu.Lock()
		if j.broken == nil {
			j.broken = err
		}
		j.forget(id, true)
		if prev.line != nil { // the Begin's line is still needed
			j.open[id] = prev
			j.openBytes += int64(len(prev.line))
		}
		j.mu.Unlock()
		return fmt.Errorf("usage: journal: %w", err)
	}
	if rewrite {
		j.rot.Lock()
		j.mu.Lock()
		// Another request may have rewritten it meanwhile.
		if j.broken == nil && j.overgrown() {
			j.broken = j.rotate()
		}
		j.mu.Unlock()
		j.rot.Unlock()
	}
	return nil
}

// reserve records e as id's open line and counts it in the file; rewrite
// says the file is overgrown, prev is the Begin's line a final one
// replaces. Called with rot held.
func (j *journal) reserve(id string, e journalEntry) (prev journalEntry, rewrite bool, err error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.broken != nil {
		return prev, false, fmt.Errorf("usage: journal: %w", j.broken)
	}
	if cur, had := j.open[id]; had {
		switch {
		case !e.final:
			return prev, false, fmt.Errorf("%w: %s", ErrDuplicate, id)
		case cur.final:
			return prev, false, fmt.Errorf("%w: %s", ErrAlreadyFinished, id)
		}
		prev = cur
		j.openBytes -= int64(len(cur.line))
	}
	j.open[id] = e
	j.openBytes += int64(len(e.line))
	j.size += int64(len(e.line))
	return prev, j.overgrown(), nil
}

// overgrown: the file is past its limit and mostly lines no longer needed
// (rewriting costs the open lines, so a journal of many long streams is
// not rewritten at every append). Called with mu held.
func (j *journal) overgrown() bool {
	return j.size > j.limit && j.size > 2*j.openBytes
}

// failed is the error of the last failed write while the journal cannot
// append, nil otherwise.
func (j *journal) failed() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.broken
}

// repair rewrites the file after a failed write, so that appends start on
// a whole line again; it does nothing while the journal is sound, and
// returns the error while the file cannot be rewritten (a full disk).
func (j *journal) repair() error {
	if j.failed() == nil {
		return nil
	}
	j.rot.Lock()
	defer j.rot.Unlock()
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.broken == nil {
		return nil
	}
	if err := j.rotate(); err != nil {
		return fmt.Errorf("usage: journal: %w", err)
	}
	j.broken = nil
	return nil
}

// forget drops id's line, a Begin's only unless final; called with mu held.
func (j *journal) forget(id string, final bool) {
	if e, ok := j.open[id]; ok && (final || !e.final) {
		delete(j.open, id)
		j.openBytes -= int64(len(e.line))
	}
}

// drop forgets a final record the writer gave up on (counted lost).
func (j *journal) drop(id string) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.forget(id, true)
}

// written forgets the lines of the requests a committed transaction wrote
// a row for: a final row ends every line of its request, an in_progress
// row only the Begin's.
func (j *journal) written(batch []*op) {
	j.mu.Lock()
	defer j.mu.Unlock()
	for _, o := range batch {
		switch o.kind {
		case opFinish:
			j.forget(o.rec.RequestID, true)
		case opBegin:
			j.forget(o.rec.RequestID, false)
		}
	}
}

// rotate replaces the file with one holding only the open lines. Renaming
// over the old file is atomic: a crash leaves one or the other, and both
// hold every line still needed. Called with rot and mu held.
func (j *journal) rotate() error {
	tmp := j.path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("rewrite: %w", err)
	}
	w := bufio.NewWriter(f)
	var size int64
	for _, e := range j.open {
		n, _ := w.Write(e.line)
		size += int64(n)
	}
	if err = errors.Join(w.Flush(), os.Rename(tmp, j.path)); err != nil {
		_ = f.Close()
		_ = os.Remove(tmp)
		return fmt.Errorf("rewrite: %w", err)
	}
	old := j.f
	j.f, j.size = f, size
	// Closing the replaced file frees its blocks (its name is gone), which
	// on a filesystem mounted with discard can take milliseconds; every
	// append waits while rot is held, so it happens outside. Its error says
	// nothing: every line was written with its own write(2).
	j.closing.Go(func() { _ = old.Close() })
	return nil
}

// close empties the journal when no line is needed any more (the writer
// has committed every row); otherwise it keeps the file for the next Open.
func (j *journal) close() error {
	j.rot.Lock()
	defer j.rot.Unlock()
	j.mu.Lock()
	defer j.mu.Unlock()
	j.closing.Wait()
	if len(j.open) > 0 {
		return errors.Join(j.f.Close(), fmt.Errorf("usage: journal: %d records without their row at close, kept for the next start", len(j.open)))
	}
	return errors.Join(j.f.Truncate(0), j.f.Close())
}

// readJournal reads the journal at path as the operations its lines stand
// for. Lines are independent of their order (a rewrite keeps them in any
// order), and applying them twice writes nothing twice. A line cut short or
// garbled (a write that failed halfway) is skipped and counted in bad. A
// missing file is an empty journal.
func readJournal(path string) (ops []*op, bad int, err error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, 0, nil
	}
	if err != nil {
		return nil, 0, fmt.Errorf("usage: journal: %w", err)
	}
	defer f.Close()
	rd := bufio.NewReader(f)
	for {
		line, rerr := rd.ReadBytes('\n')
		if len(line) > 0 {
			var jl journalLine
			if line[len(line)-1] != '\n' || json.Unmarshal(line, &jl, jsontext.AllowInvalidUTF8(true)) != nil ||
				jl.RequestID == "" || (jl.Status != "" && !isFinalStatus(jl.Status)) {
				bad++
			} else {
				ops = append(ops, opOf(&jl))
			}
		}
		if rerr == io.EOF {
			return ops, bad, nil
		}
		if rerr != nil {
			return nil, 0, fmt.Errorf("usage: journal: %w", rerr)
		}
	}
}
