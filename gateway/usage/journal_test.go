package usage

import (
	"bytes"
	"errors"
	"log/slog"
	"os"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-json-experiment/json"

	"github.com/llmgw/llmgw/api/money"
	"github.com/llmgw/llmgw/test/testutil"
)

func openLines(l *Ledger) int {
	l.journal.mu.Lock()
	defer l.journal.mu.Unlock()
	return len(l.journal.open)
}

func statusOf(t *testing.T, l *Ledger, id string) string {
	t.Helper()
	r, err := l.Get(ctxT(t), id)
	if errors.Is(err, ErrNotFound) {
		return ""
	}
	if err != nil {
		t.Fatal(err)
	}
	return r.Status
}

// A Begin and a Finish are journal lines when they return, before any
// transaction; the rows follow, and then the lines are no longer needed.
func TestJournalMakesRecordsDurableBeforeTheirRows(t *testing.T) {
	path := dbPath(t)
	l := openAt(t, path, gathering)
	id := NewRequestID()
	created := time.Now().Add(-time.Second).Truncate(time.Microsecond)
	beginWait(t, l, Record{RequestID: id, KeyID: "key-a", Alias: "chat", Stream: true, CreatedAt: created})
	r := finalRecord(id, "key-a")
	r.CreatedAt = created
	if err := l.Finish(ctxT(t), r); err != nil {
		t.Fatal(err)
	}
	if n := l.Stats().Batches; n != 0 {
		t.Fatalf("%d transactions before any read: records must not wait for their rows", n)
	}
	b, err := os.ReadFile(journalPath(path))
	if err != nil || bytes.Count(b, []byte(id)) != 2 {
		t.Fatalf("journal %q (err %v) does not hold the Begin and the final record of %s", b, err, id)
	}
	wantSuccessCreatedAt(t, l, id, created)
	if n := openLines(l); n != 0 {
		t.Fatalf("%d journal lines open after the row was committed", n)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(journalPath(path)); err != nil || len(b) != 0 {
		t.Fatalf("journal after a clean close = %q (err %v), want empty", b, err)
	}
}

// The journal is rewritten with only the lines still needed once it
// outgrows its size, so it stays small however many requests pass.
func TestJournalStaysSmall(t *testing.T) {
	path := dbPath(t)
	opts := Options{JournalSize: 2 << 10}
	l := openAt(t, path, opts)
	for range 300 {
		id := NewRequestID()
		beginWait(t, l, Record{RequestID: id, KeyID: "key-short"})
		if err := l.Finish(ctxT(t), finalRecord(id, "key-short")); err != nil {
			t.Fatal(err)
		}
		if s := statusOf(t, l, id); s != StatusSuccess { // its row committed: its lines are done
			t.Fatalf("status %q", s)
		}
	}
	b, err := os.ReadFile(journalPath(path))
	if err != nil {
		t.Fatal(err)
	}
	// 600 lines of about 100 to 200 bytes went through a 2 KiB journal.
	if len(b) > int(opts.JournalSize) {
		t.Fatalf("journal is %d bytes, above its %d-byte limit", len(b), opts.JournalSize)
	}
}

// A rewrite keeps every line whose row is not committed: a Begin's until
// its in_progress row, a final record's until its final row.
func TestJournalRewriteKeepsTheLinesStillNeeded(t *testing.T) {
	path := t.TempDir() + "/j"
	j, err := openJournal(path, 512)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = j.close() })
	add := func(kind opKind, id string) *op {
		t.Helper()
		o := &op{kind: kind, rec: finalRecord(id, "key-a"), attempts: "[]"}
		if err := j.add(o); err != nil {
			t.Fatal(err)
		}
		return o
	}
	long := add(opBegin, "req_long")       // its row never committed
	rowed := add(opBegin, "req_rowed")     // its in_progress row committed
	finished := add(opFinish, "req_rowed") // its final row not committed
	j.written([]*op{rowed})                // the Begin's line is replaced by the final one anyway
	for i := range 50 {                    // short requests, rows committed
		id := "req_short" + strconv.Itoa(i)
		j.written([]*op{add(opBegin, id), add(opFinish, id)})
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) > 1024 {
		t.Fatalf("journal is %d bytes after 100 lines through a 512-byte limit", len(b))
	}
	ops, bad, err := readJournal(path)
	if err != nil || bad != 0 {
		t.Fatalf("readJournal: %d bad lines, %v", bad, err)
	}
	got := map[string]opKind{}
	for _, o := range ops {
		if strings.HasPrefix(o.rec.RequestID, "req_short") {
			continue // the lines since the last rewrite
		}
		got[o.rec.RequestID] = o.kind
	}
	if want := map[string]opKind{long.rec.RequestID: opBegin, finished.rec.RequestID: opFinish}; !reflect.DeepEqual(got, want) {
		t.Fatalf("lines kept: %v, want %v", got, want)
	}
}

// What lineOf writes, opOf reads back as the same operation.
func TestJournalLineRoundTrips(t *testing.T) {
	full := finalRecord("req_full", "key-a")
	full.ClientRequestID, full.Stream, full.ErrorType, full.Fallbacks = `c"1\`, true, "upstream_cut", 2
	full.CachedInputTokens, full.ReasoningTokens, full.Cost, full.Currency = 3, 4, money.Picos(123456789), "EUR"
	full.Endpoint, full.Session = EndpointResponses, `codex "s" \ 1`
	full.Group, full.Owners = "platform.ml", map[string]string{"team": "a", "example.com/cost-center": `c"c\1`}
	full.CreatedAt = time.Date(2026, 12, 7, 10, 0, 0, 123456000, time.UTC)
	full.FinishedAt = full.CreatedAt.Add(1500 * time.Millisecond)
	full.Attempts = append(full.Attempts, Attempt{Provider: "tab\tnl\n<&>\u2028", Outcome: OutcomeStatus, StatusCode: 503})
	begin := Record{RequestID: "req_begin", KeyID: "ünïcödé 漢字", Status: StatusInProgress, CreatedAt: full.CreatedAt,
		Endpoint: EndpointMessages, Session: "claude-session-1", Group: "g", Owners: map[string]string{"env": "prod"}}
	for _, o := range []*op{
		{kind: opFinish, rec: full},
		{kind: opBegin, rec: begin},
	} {
		o.attempts, o.owners = encodeAttempts(o.rec.Attempts), encodeOwners(o.rec.Owners)
		line, err := lineOf(o)
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Count(line, []byte("\n")) != 1 || line[len(line)-1] != '\n' {
			t.Fatalf("line %q is not one line", line)
		}
		var jl journalLine
		if err := json.Unmarshal(line, &jl); err != nil {
			t.Fatalf("line %s: %v", line, err)
		}
		got := opOf(&jl)
		want := &op{kind: o.kind, rec: o.rec, attempts: o.attempts, owners: o.owners}
		want.rec.Attempts, want.rec.Owners = nil, nil // the columns carry them, in attempts and owners
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("line %s reads as\n%+v\nwant\n%+v", line, got, want)
		}
	}
}

// Open writes the rows of what the journal holds and the database does not
// (lines as an earlier version wrote them, too), skips what it cannot
// read, and closes the Begins left without a final record as interrupted.
func TestOpenReplaysTheJournal(t *testing.T) {
	path := dbPath(t)
	l := openAt(t, path, Options{})
	done := NewRequestID()
	beginWait(t, l, Record{RequestID: done, KeyID: "key-a"})
	if err := l.Finish(ctxT(t), finalRecord(done, "key-a")); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	open, cut := NewRequestID(), NewRequestID()
	created := time.Now().Add(-time.Minute).Truncate(time.Microsecond)
	lines := []string{
		`{"id":"` + open + `","cid":"client-1","ep":"messages","sid":"sess-9","key":"key-a","fp":"0123456789ab","alias":"chat","stream":true,"created_us":` + strconv.FormatInt(created.UnixMicro(), 10) + `}`,
		`{"id":"` + done + `","key":"key-a","created_us":1}`, // has its final row: untouched
		`not json`,
		`{"key":"no-id","created_us":1}`,
		`{"id":"` + cut + `","key":"key-a","crea`, // the last write, cut short: no newline
	}
	if err := os.WriteFile(journalPath(path), []byte(strings.Join(lines, "\n")), 0o600); err != nil {
		t.Fatal(err)
	}
	l = openAt(t, path, Options{})
	if ids := l.RecoveredIDs(); len(ids) != 1 || ids[0] != open {
		t.Fatalf("RecoveredIDs = %v, want [%s]", ids, open)
	}
	got, err := l.Get(ctxT(t), open)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != StatusInterrupted || got.KeyID != "key-a" || got.ClientRequestID != "client-1" ||
		got.Endpoint != EndpointMessages || got.Session != "sess-9" || got.Alias != "chat" || !got.Stream || !got.CreatedAt.Equal(created) || got.FinishedAt.IsZero() {
		t.Fatalf("replayed record = %+v", got)
	}
	if s := statusOf(t, l, done); s != StatusSuccess {
		t.Fatalf("a finished request became %q", s)
	}
	if s := statusOf(t, l, cut); s != "" {
		t.Fatalf("a cut line was replayed (status %q)", s)
	}
	// A fresh journal, and nothing left to replay.
	if b, err := os.ReadFile(journalPath(path)); err != nil || len(b) != 0 {
		t.Fatalf("journal after replay: %q, %v", b, err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if l2 := openAt(t, path, Options{}); l2.Recovered() != 0 {
		t.Fatalf("reopen recovered %d, want 0", l2.Recovered())
	}
}

func TestOpenReplaysFinalRecords(t *testing.T) {
	path := dbPath(t)
	l := openAt(t, path, Options{})
	done := NewRequestID()
	beginWait(t, l, Record{RequestID: done, KeyID: "key-a"})
	if err := l.Finish(ctxT(t), finalRecord(done, "key-a")); err != nil {
		t.Fatal(err)
	}
	rowOnly := NewRequestID() // an in_progress row the final line closes
	beginWait(t, l, Record{RequestID: rowOnly, KeyID: "key-a"})
	rowBoth := NewRequestID() // the same, with its Begin's line still in the journal
	beginWait(t, l, Record{RequestID: rowBoth, KeyID: "key-a"})
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	withBegin, alone, reordered := NewRequestID(), NewRequestID(), NewRequestID()
	created := time.Now().Add(-time.Minute).Truncate(time.Microsecond)
	finished := created.Add(1500 * time.Millisecond)
	cu, fu := strconv.FormatInt(created.UnixMicro(), 10), strconv.FormatInt(finished.UnixMicro(), 10)
	begin := func(id string) string {
		return `{"id":"` + id + `","key":"key-a","fp":"0123456789ab","alias":"chat","created_us":` + cu + `}`
	}
	final := func(id string) string {
		return `{"id":"` + id + `","cid":"client-9","ep":"embeddings","sid":"s-fin","key":"key-a","fp":"0123456789ab","alias":"chat","prov":"alpha","pm":"alpha-large",` +
			`"att":"[{\"p\":\"alpha\",\"o\":\"ok\",\"s\":200}]","created_us":` + cu + `,"st":"partial","hs":200,"et":"upstream_cut","fb":1,` +
			`"in":11,"out":13,"cin":3,"rt":2,"cost":4500,"cur":"USD","lat":1500,"fin_us":` + fu + `}`
	}
	lines := []string{
		begin(withBegin), final(withBegin),
		final(alone),
		final(reordered), begin(reordered), // a rewrite keeps lines in any order
		final(rowOnly),
		begin(rowBoth), final(rowBoth),
		`{"id":"` + done + `","key":"key-a","created_us":1,"st":"error","hs":502}`, // already final: untouched
		`{"id":"bad-status","key":"key-a","created_us":1,"st":"in_progress"}`,
		`{"id":"` + NewRequestID() + `","key":"key-a","created_us":1,"st":"succ`, // cut short
	}
	if err := os.WriteFile(journalPath(path), []byte(strings.Join(lines, "\n")), 0o600); err != nil {
		t.Fatal(err)
	}
	l = openAt(t, path, Options{})
	if n := l.Recovered(); n != 0 {
		t.Fatalf("recovered %d as interrupted (%v); every request here has its final record", n, l.RecoveredIDs())
	}
	for _, id := range []string{withBegin, alone, reordered, rowOnly, rowBoth} {
		got, err := l.Get(ctxT(t), id)
		if err != nil {
			t.Fatal(err)
		}
		if got.Status != StatusPartial || got.HTTPStatus != 200 || got.ErrorType != "upstream_cut" || got.Fallbacks != 1 ||
			got.ClientRequestID != "client-9" || got.Endpoint != EndpointEmbeddings || got.Session != "s-fin" || got.Provider != "alpha" || got.ProviderModel != "alpha-large" ||
			got.InputTokens != 11 || got.OutputTokens != 13 || got.CachedInputTokens != 3 || got.ReasoningTokens != 2 ||
			got.Cost != money.Picos(4500) || got.Currency != "USD" || got.LatencyMs != 1500 ||
			len(got.Attempts) != 1 || got.Attempts[0].Outcome != OutcomeOK || !got.FinishedAt.Equal(finished) {
			t.Fatalf("%s replayed as %+v", id, got)
		}
		if id != rowOnly && id != rowBoth && !got.CreatedAt.Equal(created) {
			t.Fatalf("%s created %v, want %v", id, got.CreatedAt, created)
		}
	}
	if got, err := l.Get(ctxT(t), done); err != nil || got.Status != StatusSuccess || got.HTTPStatus != 200 {
		t.Fatalf("an already final record was changed by a replayed line: %+v, %v", got, err)
	}
	if s := statusOf(t, l, "bad-status"); s != "" {
		t.Fatalf("a line with a status that is not final was replayed (%q)", s)
	}
}

// A record is not lost when its row's transaction fails (here another
// connection holds the write lock; a full disk is the same): its line keeps
// it, the next transaction tries its row again, and a ledger closed before
// that leaves it to the next Open. Only what does not fit the retry list
// (Options.QueueSize) is given up, and a final record given up is counted
// unrecorded.
func TestJournalKeepsRecordsThroughFailedCommits(t *testing.T) {
	path := dbPath(t)
	opts := Options{BatchDelay: time.Hour, BusyTimeout: time.Millisecond, ProbeInterval: time.Hour, QueueSize: 4}
	l := openAt(t, path, opts)
	ctx := ctxT(t)
	release := blockWriter(t, l)
	var ids []string
	for range 3 {
		id := NewRequestID()
		beginWait(t, l, Record{RequestID: id, KeyID: "key-a"})
		if err := l.Finish(ctx, finalRecord(id, "key-a")); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	if err := l.Ping(ctx); err == nil {
		t.Fatal("Ping committed while another connection holds the write lock")
	}
	if l.Writable() == nil {
		t.Fatal("Writable after a failed commit")
	}
	if n := l.Stats().Unrecorded; n != 1 {
		t.Fatalf("Unrecorded = %d, want 1: two requests' rows fit the retry list, the third's do not", n)
	}
	release()
	if err := l.Ping(ctx); err != nil {
		t.Fatal(err)
	}
	for i, id := range ids[:2] {
		if s := statusOf(t, l, id); s != StatusSuccess {
			t.Fatalf("request %d: status %q, want success", i, s)
		}
	}
	if l.Writable() != nil {
		t.Fatalf("not writable after a commit: %v", l.Writable())
	}

	// Closed while the rows cannot be written: the journal keeps them.
	release = blockWriter(t, l)
	id := NewRequestID()
	beginWait(t, l, Record{RequestID: id, KeyID: "key-a"})
	if err := l.Finish(ctx, finalRecord(id, "key-a")); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err == nil {
		t.Fatal("Close reported nothing while a final record had no row")
	}
	release()
	l = openAt(t, path, opts)
	if s := statusOf(t, l, id); s != StatusSuccess {
		t.Fatalf("after reopening: status %q, want success from the journal", s)
	}
}

// A failed journal write fails its Begin or Finish and makes the ledger not
// writable; the file is rewritten (here by the prober) before anything is
// appended again, and the ledger is writable once that and a commit work.
func TestJournalWriteFailure(t *testing.T) {
	logs := &testutil.SyncBuffer{}
	l := openTest(t, Options{ProbeInterval: 20 * time.Millisecond, Logger: slog.New(slog.NewTextHandler(logs, nil))})
	ctx := ctxT(t)
	kept := NewRequestID()
	beginWait(t, l, Record{RequestID: kept, KeyID: "key-a"})
	l.journal.rot.Lock()
	_ = l.journal.f.Close() // the next write fails
	l.journal.rot.Unlock()
	id := NewRequestID()
	if err := l.Finish(ctx, finalRecord(id, "key-a")); err == nil {
		t.Fatal("Finish succeeded with a failing journal")
	}
	if n := l.Stats().Unrecorded; n != 1 {
		t.Fatalf("Unrecorded = %d, want 1", n)
	}
	if err := l.Writable(); !errors.Is(err, ErrNotWritable) {
		t.Fatalf("Writable = %v, want ErrNotWritable", err)
	}
	waitUntil(t, 10*time.Second, "writable again", func() bool { return l.Writable() == nil })
	if n := strings.Count(logs.String(), "a journal write failed"); n != 1 {
		t.Fatalf("the journal's failure was logged %d times, want once:\n%s", n, logs.String())
	}
	if err := l.Finish(ctx, finalRecord(kept, "key-a")); err != nil {
		t.Fatal(err)
	}
	if s := statusOf(t, l, kept); s != StatusSuccess {
		t.Fatalf("status %q after the journal was rewritten", s)
	}
	if s := statusOf(t, l, id); s != "" {
		t.Fatalf("the failed Finish left a record (%q)", s)
	}
}
