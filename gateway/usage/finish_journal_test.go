package usage

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/llmgw/llmgw/api/money"
)

// finishJournalOpts holds Begins and journaled Finishes for an hour: rows
// reach the database only when somebody waits for them (a read, a Ping) or
// the ledger closes.
func finishJournalOpts() Options {
	return Options{BeginHold: time.Hour, BeginJournal: true, FinishJournal: true, BatchDelay: time.Hour}
}

func TestFinishJournalAnswersAtOnceAndReadsSeeTheRecord(t *testing.T) {
	path := dbPath(t)
	l := openAt(t, path, finishJournalOpts())
	ctx := ctxT(t)
	id := NewRequestID()
	created := time.Now().Add(-time.Second).Truncate(time.Microsecond)
	l.Begin(Record{RequestID: id, KeyID: "key-a", CreatedAt: created})
	rec := finalRecord(id, "key-a")
	rec.CreatedAt = created
	// Were Finish waiting for its row, it would wait for the hour-long
	// batch delay and the test's deadline would end it.
	if err := l.Finish(ctx, rec); err != nil {
		t.Fatal(err)
	}
	if n := l.Stats().Batches; n != 0 {
		t.Fatalf("%d transactions before any read; a journaled Finish must not commit its row itself", n)
	}
	b, err := os.ReadFile(journalPath(path))
	if err != nil || !bytes.Contains(b, []byte(`"st":"success"`)) {
		t.Fatalf("journal %q (err %v) does not hold the final record", b, err)
	}
	// A second Finish is refused while the first is still only a line.
	if err := l.Finish(ctx, rec); !errors.Is(err, ErrAlreadyFinished) {
		t.Fatalf("second Finish = %v, want ErrAlreadyFinished", err)
	}
	// Every read sees the records whose Finish returned before it.
	wantSuccessCreatedAt(t, l, id, created)
	if n := l.Stats().Batches; n != 1 {
		t.Fatalf("the read took %d transactions, want the one that wrote the row", n)
	}
	if recs := listAll(t, l, "key-a", 10); len(recs) != 1 || recs[0].RequestID != id {
		t.Fatalf("List = %+v, want the one record", recs)
	}
	// Once its row is committed, no line is needed; a read with nothing
	// waiting costs no transaction.
	if n := openLines(l); n != 0 {
		t.Fatalf("%d journal lines open after the row was committed", n)
	}
	if _, err := l.Summary(ctx, "key-a", created, time.Now()); err != nil {
		t.Fatal(err)
	}
	if n := l.Stats().Batches; n != 1 {
		t.Fatalf("%d transactions, want 1: a read with no journaled Finish pending must not sync", n)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(journalPath(path)); err != nil || len(b) != 0 {
		t.Fatalf("journal after a clean close = %q (err %v), want empty", b, err)
	}
}

// A final line replaces its request's Begin line, and an in_progress row
// committed later (the hold ended) must not drop it: the final record
// exists nowhere else yet.
func TestJournalKeepsAFinalLineUntilItsRow(t *testing.T) {
	j, err := openJournal(t.TempDir()+"/j", 4<<20, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	id := NewRequestID()
	begin := &op{Pending: &Pending{}, kind: opBegin, rec: Record{RequestID: id, KeyID: "key-a", CreatedAt: time.Now()}, attempts: "[]"}
	if ok, err := j.add(begin); !ok || err != nil {
		t.Fatalf("add Begin = %v, %v", ok, err)
	}
	fin := &op{Pending: &Pending{}, kind: opFinish, rec: finalRecord(id, "key-a"), attempts: "[]"}
	fin.rec.CreatedAt, fin.rec.FinishedAt = begin.rec.CreatedAt, time.Now()
	if ok, err := j.add(fin); !ok || err != nil {
		t.Fatalf("add Finish = %v, %v", ok, err)
	}
	j.written([]*op{begin}) // the held Begin's in_progress row
	j.rot.Lock()
	j.mu.Lock()
	e, ok := j.open[id]
	n := len(j.open)
	err = j.rotate()
	j.mu.Unlock()
	j.rot.Unlock()
	if !ok || !e.final || n != 1 || err != nil {
		t.Fatalf("open lines after the in_progress row: %d, %s final=%v (rotate: %v); want the final line", n, id, e.final, err)
	}
	// A rewrite keeps the open line only: the final one.
	b, err := os.ReadFile(j.path)
	if err != nil {
		t.Fatal(err)
	}
	if lines := strings.Count(string(b), "\n"); lines != 1 || !bytes.Contains(b, []byte(`"st":"success"`)) {
		t.Fatalf("journal after rewrites = %q, want the final line alone", b)
	}
	j.written([]*op{fin})
	if err := j.close(); err != nil {
		t.Fatalf("close with no open line: %v", err)
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
		return `{"id":"` + id + `","cid":"client-9","key":"key-a","fp":"0123456789ab","alias":"chat","prov":"alpha","pm":"alpha-large",` +
			`"att":"[{\"p\":\"alpha\",\"o\":\"ok\",\"s\":200}]","created_us":` + cu + `,"st":"partial","hs":200,"et":"upstream_cut","fb":1,` +
			`"in":11,"out":13,"cin":3,"rt":2,"cost":4500,"cur":"USD","lat":1500,"fin_us":` + fu + `}`
	}
	lines := []string{
		begin(withBegin), final(withBegin),
		final(alone),
		final(reordered), begin(reordered), // a rewrite keeps lines in any order
		final(rowOnly),
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
	for _, id := range []string{withBegin, alone, reordered, rowOnly} {
		got, err := l.Get(ctxT(t), id)
		if err != nil {
			t.Fatal(err)
		}
		if got.Status != StatusPartial || got.HTTPStatus != 200 || got.ErrorType != "upstream_cut" || got.Fallbacks != 1 ||
			got.ClientRequestID != "client-9" || got.Provider != "alpha" || got.ProviderModel != "alpha-large" ||
			got.InputTokens != 11 || got.OutputTokens != 13 || got.CachedInputTokens != 3 || got.ReasoningTokens != 2 ||
			got.Cost != money.Picos(4500) || got.Currency != "USD" || got.LatencyMs != 1500 ||
			len(got.Attempts) != 1 || got.Attempts[0].Outcome != OutcomeOK || !got.FinishedAt.Equal(finished) {
			t.Fatalf("%s replayed as %+v", id, got)
		}
		if id != rowOnly && !got.CreatedAt.Equal(created) {
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

// A journaled final record is not lost when its transaction fails (here
// another connection holds the write lock; a full disk is the same): its
// line keeps it, the next transaction tries its row again, and a ledger
// closed before that leaves it to the next Open. Only what does not fit the
// retry list (Options.QueueSize) is given up and counted unrecorded.
func TestFinishJournalKeepsRecordsThroughFailedCommits(t *testing.T) {
	path := dbPath(t)
	opts := finishJournalOpts()
	opts.BatchDelay, opts.BusyTimeout, opts.ProbeInterval, opts.QueueSize = 0, time.Millisecond, time.Hour, 2
	l := openAt(t, path, opts)
	ctx := ctxT(t)
	lock := writeLock(t, path)
	var ids []string
	for range 3 {
		ids = append(ids, beginFinish(t, l))
	}
	if err := l.Ping(ctx); err == nil {
		t.Fatal("Ping committed while another connection holds the write lock")
	}
	if l.Writable() == nil {
		t.Fatal("Writable after a failed commit")
	}
	if n := l.Stats().Unrecorded; n != 1 {
		t.Fatalf("Unrecorded = %d, want 1: two final records fit the retry list, the third does not", n)
	}
	lock()
	if err := l.Ping(ctx); err != nil {
		t.Fatal(err)
	}
	for i, id := range ids {
		if s, want := statusOf(t, l, id), map[bool]string{true: StatusSuccess, false: ""}[i < 2]; s != want {
			t.Fatalf("request %d: status %q, want %q", i, s, want)
		}
	}
	if n := openLines(l); n != 0 {
		t.Fatalf("%d journal lines open after the retry committed", n)
	}

	// Closed while the rows cannot be written: the journal keeps them.
	lock = writeLock(t, path)
	id := beginFinish(t, l)
	if err := l.Close(); err == nil {
		t.Fatal("Close reported nothing while a final record had no row")
	}
	lock()
	l = openAt(t, path, opts)
	if s := statusOf(t, l, id); s != StatusSuccess {
		t.Fatalf("after reopening: status %q, want success from the journal", s)
	}
}

// beginFinish begins and finishes one request with its Begin's time, as
// the gateway does (a journaled Finish needs it), and returns its id.
func beginFinish(t *testing.T, l *Ledger) string {
	t.Helper()
	r := finalRecord(NewRequestID(), "key-a")
	r.CreatedAt = time.Now()
	l.Begin(r)
	if err := l.Finish(ctxT(t), r); err != nil {
		t.Fatal(err)
	}
	return r.RequestID
}

// writeLock takes SQLite's write lock on path from another connection, as
// a second writer would; the returned func releases it.
func writeLock(t *testing.T, path string) (release func()) {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := db.Conn(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.ExecContext(ctxT(t), "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	return func() {
		if _, err := conn.ExecContext(ctxT(t), "ROLLBACK"); err != nil {
			t.Fatal(err)
		}
		_ = conn.Close()
		_ = db.Close()
	}
}

// lineOf is what appendLine must encode: the journalLine of o, as
// json.Marshal would write it.
func lineOf(o *op) journalLine {
	r := &o.rec
	att := o.attempts
	if att == "[]" {
		att = ""
	}
	jl := journalLine{RequestID: r.RequestID, ClientRequestID: r.ClientRequestID,
		KeyID: r.KeyID, KeyFingerprint: r.KeyFingerprint, Alias: r.Alias, Provider: r.Provider,
		ProviderModel: r.ProviderModel, Stream: r.Stream, Attempts: att, CreatedAtUs: toMicros(r.CreatedAt)}
	if o.kind == opFinish {
		jl.Status, jl.HTTPStatus, jl.ErrorType, jl.Fallbacks = r.Status, r.HTTPStatus, r.ErrorType, r.Fallbacks
		jl.InputTokens, jl.OutputTokens, jl.CachedInputTokens, jl.ReasoningTokens = r.InputTokens, r.OutputTokens, r.CachedInputTokens, r.ReasoningTokens
		jl.CostPicos, jl.Currency, jl.LatencyMs, jl.FinishedAtUs = int64(r.Cost), r.Currency, r.LatencyMs, toMicros(r.FinishedAt)
	}
	return jl
}

func journalCases() []*op {
	full := finalRecord(NewRequestID(), "team-a/key-\"quoted\"")
	full.ClientRequestID = "client <&> \u2028 \x01 \\ /"
	full.Alias, full.ErrorType, full.Currency = "chat-ü-\u00e9", "upstream_cut", "EUR"
	full.Fallbacks, full.CachedInputTokens, full.ReasoningTokens, full.Cost = 2, 3, 4, money.Picos(-7)
	full.Stream, full.HTTPStatus, full.Status = true, 599, StatusPartial
	full.CreatedAt, full.FinishedAt = time.UnixMicro(1796000000000001), time.UnixMicro(1796000000999999)
	bad := Record{RequestID: "req-\xff\xfe-invalid-utf8", KeyID: "k", CreatedAt: time.UnixMicro(1)}
	return []*op{
		{kind: opBegin, rec: Record{RequestID: NewRequestID(), CreatedAt: time.Now()}, attempts: "[]"},
		{kind: opBegin, rec: full, attempts: `[{"p":"alpha","o":"ok","s":200,"l":3}]`},
		{kind: opFinish, rec: full, attempts: `[{"p":"alpha","o":"timeout"},{"p":"beta","o":"ok","s":200}]`},
		{kind: opFinish, rec: Record{RequestID: "r", Status: StatusRejected, CreatedAt: time.UnixMicro(5), FinishedAt: time.UnixMicro(6)}, attempts: "[]"},
		{kind: opBegin, rec: bad, attempts: "[]"},
	}
}

func TestAppendLineDecodesAsTheRecord(t *testing.T) {
	for i, o := range journalCases() {
		line := appendLine(nil, o)
		if line[len(line)-1] != '\n' || bytes.Count(line, []byte("\n")) != 1 {
			t.Fatalf("case %d: %q is not one line", i, line)
		}
		var got journalLine
		if err := json.Unmarshal(line, &got); err != nil {
			t.Fatalf("case %d: %q: %v", i, line, err)
		}
		want := lineOf(o)
		ref, _ := json.Marshal(want)
		_ = json.Unmarshal(ref, &want) // invalid UTF-8 turns into U+FFFD as it does in the line
		if got != want {
			t.Fatalf("case %d:\n got %+v\nwant %+v\nline %s", i, got, want, line)
		}
	}
}

// BenchmarkJournalLine compares the appended line with json.Marshal of the
// same journalLine, for a final record.
func BenchmarkJournalLine(b *testing.B) {
	o := journalCases()[2]
	b.Run("append", func(b *testing.B) {
		b.ReportAllocs()
		buf := make([]byte, 0, 512)
		for b.Loop() {
			buf = appendLine(buf[:0], o)
		}
	})
	b.Run("json.Marshal", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := json.Marshal(lineOf(o)); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// TestLineSizeHoldsTheLine: the buffer a journal line is built in is sized
// for it, so the line kept for its open request is not a copy grown out of
// a smaller one. Only strings that need escapes beyond the attempts' quotes
// (the invalid UTF-8 case) may outgrow it.
func TestLineSizeHoldsTheLine(t *testing.T) {
	cases := journalCases()
	big := *cases[2]
	big.rec.InputTokens, big.rec.OutputTokens, big.rec.Cost, big.rec.LatencyMs = 1<<40, 1<<40, 1<<62, 1<<40
	big.rec.CachedInputTokens, big.rec.ReasoningTokens, big.rec.Fallbacks = 1<<40, 1<<40, 99
	for i, o := range append(cases[:len(cases)-1], &big) {
		if n, size := len(appendLine(nil, o)), lineSize(o); n > size {
			t.Errorf("case %d: line of %d bytes, lineSize %d", i, n, size)
		}
	}
}

// doneCounter counts the calls of Done: a context that starts a timer only
// then (the gateway's detached one) starts none if nobody calls it.
type doneCounter struct {
	context.Context
	calls atomic.Int32
}

func (c *doneCounter) Done() <-chan struct{} {
	c.calls.Add(1)
	return c.Context.Done()
}

// A journaled Finish with room in the queue neither waits nor asks its
// context for Done; a Finish that waits for its row does.
func TestFinishAsksForDoneOnlyWhenItWaits(t *testing.T) {
	for _, tc := range []struct {
		name     string
		opts     Options
		wantDone bool
	}{
		{"journaled", finishJournalOpts(), false},
		{"waits for its row", Options{}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := openAt(t, dbPath(t), tc.opts)
			id := NewRequestID()
			created := time.Now().Truncate(time.Microsecond)
			l.Begin(Record{RequestID: id, KeyID: "key-a", CreatedAt: created})
			rec := finalRecord(id, "key-a")
			rec.CreatedAt = created
			ctx := &doneCounter{Context: ctxT(t)}
			if err := l.Finish(ctx, rec); err != nil {
				t.Fatal(err)
			}
			if got := ctx.calls.Load() > 0; got != tc.wantDone {
				t.Fatalf("Done called %d times; want calls %v", ctx.calls.Load(), tc.wantDone)
			}
			wantSuccessCreatedAt(t, l, id, created)
		})
	}
}
