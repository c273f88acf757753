package usage

import (
	"bytes"
	"errors"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

func journalOpts() Options {
	return Options{BeginHold: time.Hour, BeginJournal: true}
}

func openLines(l *Ledger) int {
	l.journal.mu.Lock()
	defer l.journal.mu.Unlock()
	return len(l.journal.open)
}

func TestBeginJournalMakesABeginDurableWithoutATransaction(t *testing.T) {
	path := dbPath(t)
	l := openAt(t, path, journalOpts())
	id := NewRequestID()
	created := time.Now().Add(-time.Second).Truncate(time.Microsecond)
	p := l.Begin(Record{RequestID: id, KeyID: "key-a", Alias: "chat", Stream: true, CreatedAt: created})
	select {
	case <-p.Committed():
	default:
		t.Fatal("a journaled Begin is durable at once; Committed must be closed")
	}
	if err := p.Err(); err != nil {
		t.Fatal(err)
	}
	if err := l.Ping(ctxT(t)); err != nil { // the writer has dequeued the Begin
		t.Fatal(err)
	}
	if s := statusOf(t, l, id); s != "" {
		t.Fatalf("the Begin reached the database (status %q); it should only be held", s)
	}
	b, err := os.ReadFile(journalPath(path))
	if err != nil || !bytes.Contains(b, []byte(id)) {
		t.Fatalf("journal %q (err %v) does not hold %s", b, err, id)
	}
	before := l.Stats().Batches
	// Persist has nothing to do: no flush, no transaction.
	if err := l.Persist(ctxT(t), p); err != nil {
		t.Fatal(err)
	}
	if err := l.Finish(ctxT(t), finalRecord(id, "key-a")); err != nil {
		t.Fatal(err)
	}
	if n := l.Stats().Batches - before; n != 1 {
		t.Fatalf("Persist + Finish took %d transactions, want 1", n)
	}
	wantSuccessCreatedAt(t, l, id, created)
	if n := openLines(l); n != 0 {
		t.Fatalf("%d journal lines still open after the final row", n)
	}
	if err := l.Finish(ctxT(t), finalRecord(id, "key-a")); !errors.Is(err, ErrAlreadyFinished) {
		t.Fatalf("second Finish = %v, want ErrAlreadyFinished", err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(journalPath(path)); err != nil || fi.Size() != 0 {
		t.Fatalf("journal after a clean Close: %v, %v; want an empty file", fi, err)
	}
}

func TestBeginJournalKeepsLongRequestsAcrossRewrites(t *testing.T) {
	path := dbPath(t)
	opts := journalOpts()
	opts.JournalSize = 2 << 10
	l := openAt(t, path, opts)
	long := []string{NewRequestID(), NewRequestID(), NewRequestID()}
	for _, id := range long {
		l.Begin(Record{RequestID: id, KeyID: "key-long", Stream: true})
	}
	for range 300 {
		id := NewRequestID()
		l.Begin(Record{RequestID: id, KeyID: "key-short"})
		if err := l.Finish(ctxT(t), finalRecord(id, "key-short")); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(journalPath(path))
	if err != nil {
		t.Fatal(err)
	}
	// 300 lines of about 100 bytes went through a 2 KiB journal.
	if len(b) > int(opts.JournalSize) {
		t.Fatalf("journal is %d bytes, above its %d-byte limit", len(b), opts.JournalSize)
	}
	for _, id := range long {
		if !bytes.Contains(b, []byte(id)) {
			t.Fatalf("rewrite lost the open Begin %s", id)
		}
	}
	if n := openLines(l); n != len(long) {
		t.Fatalf("%d lines open, want %d", n, len(long))
	}
}

func TestOpenReplaysTheBeginJournal(t *testing.T) {
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
		`{"id":"` + open + `","cid":"client-1","key":"key-a","fp":"0123456789ab","alias":"chat","stream":true,"created_us":` + strconv.FormatInt(created.UnixMicro(), 10) + `}`,
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
		got.Alias != "chat" || !got.Stream || !got.CreatedAt.Equal(created) || got.FinishedAt.IsZero() {
		t.Fatalf("replayed record = %+v", got)
	}
	if s := statusOf(t, l, done); s != StatusSuccess {
		t.Fatalf("a finished request became %q", s)
	}
	if s := statusOf(t, l, cut); s != "" {
		t.Fatalf("a cut line was replayed (status %q)", s)
	}
	// Without the journal option the file is gone once replayed.
	if _, err := os.Stat(journalPath(path)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("journal after replay: %v", err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if l2 := openAt(t, path, journalOpts()); l2.Recovered() != 0 {
		t.Fatalf("reopen recovered %d, want 0", l2.Recovered())
	}
}

// BenchmarkJournalAdd is what the begin journal adds to a Begin: encoding
// the line and one write(2), from many goroutines (the written call that
// frees the line is included).
func BenchmarkJournalAdd(b *testing.B) {
	j, err := openJournal(b.TempDir()+"/j", 4<<20, slog.New(slog.DiscardHandler))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = j.f.Close() })
	b.SetParallelism(8)
	b.ReportAllocs()
	cpu0 := processCPU()
	b.RunParallel(func(pb *testing.PB) {
		batch := make([]*op, 1)
		for pb.Next() {
			o := &op{Pending: &Pending{}, kind: opBegin, rec: Record{RequestID: NewRequestID(), KeyID: "team-a/key-a", KeyFingerprint: "0123456789ab", CreatedAt: time.Now()}, attempts: "[]"}
			if ok, _ := j.add(o); !ok {
				b.Error("not journaled")
				return
			}
			batch[0] = o
			j.written(batch)
		}
	})
	b.ReportMetric(float64(processCPU()-cpu0)/float64(b.N), "cpu-ns/op")
}

// After a failed write the journal turns itself off, says so once, and the
// ledger goes back to committing a held Begin as a row when asked to.
func TestBeginJournalFallsBackAfterAWriteError(t *testing.T) {
	var logs bytes.Buffer
	opts := journalOpts()
	opts.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	l := openTest(t, opts)
	_ = l.journal.f.Close() // every later write fails
	for range 2 {
		id := NewRequestID()
		p := l.Begin(Record{RequestID: id, KeyID: "key-a"})
		if err := p.Err(); !errors.Is(err, ErrNotCommittedYet) {
			t.Fatalf("Begin with a broken journal: Err = %v, want it held (ErrNotCommittedYet)", err)
		}
		persistWait(t, l, p, id)
	}
	if n := strings.Count(logs.String(), "begin journal off"); n != 1 {
		t.Fatalf("the journal's failure was logged %d times, want once:\n%s", n, logs.String())
	}
}
