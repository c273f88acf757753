package usage

import (
	"context"
	"database/sql"
	"errors"
	"log/slog"
	"net/url"
	"os"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/llmgw/llmgw/test/testutil"
)

// sameRecord compares records field by field, times by instant.
func sameRecord(t *testing.T, got, want Record) {
	t.Helper()
	if !got.CreatedAt.Equal(want.CreatedAt) || !got.FinishedAt.Equal(want.FinishedAt) {
		t.Errorf("times: got created=%v finished=%v, want %v %v", got.CreatedAt, got.FinishedAt, want.CreatedAt, want.FinishedAt)
	}
	got.CreatedAt, got.FinishedAt, want.CreatedAt, want.FinishedAt = time.Time{}, time.Time{}, time.Time{}, time.Time{}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("record mismatch\n got: %+v\nwant: %+v", got, want)
	}
}

func TestBeginFinishRoundTrip(t *testing.T) {
	l := openTest(t, Options{})
	ctx := ctxT(t)
	created := time.Date(2026, 3, 4, 5, 6, 7, 891234567, time.FixedZone("X", 3600))
	id := NewRequestID()
	begin := Record{RequestID: id, ClientRequestID: "client-1", Endpoint: EndpointMessages,
		Session: "0f9c2d1e-claude-code session", Stream: true, CreatedAt: created}
	beginWait(t, l, begin)

	got, err := l.Get(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	wantBegin := begin
	wantBegin.Status = StatusInProgress
	wantBegin.CreatedAt = created.Truncate(time.Microsecond)
	sameRecord(t, got, wantBegin)
	if got.CreatedAt.Location() != time.UTC {
		t.Errorf("CreatedAt location = %v, want UTC", got.CreatedAt.Location())
	}

	final := Record{
		RequestID:       id,
		ClientRequestID: "client-1",
		Endpoint:        EndpointMessages,
		Session:         "0f9c2d1e-claude-code session",
		KeyID:           "key-a",
		KeyFingerprint:  "abcdef012345",
		Alias:           "chat-alpha",
		Provider:        "beta",
		ProviderModel:   "beta-large",
		Status:          StatusPartial,
		HTTPStatus:      200,
		ErrorType:       "stream_error",
		Fallbacks:       1,
		Attempts: []Attempt{
			{Provider: "alpha", Model: "alpha-large", Outcome: OutcomeStatus, StatusCode: 503, LatencyMs: 12},
			{Provider: "beta", Model: "beta-large", Outcome: OutcomeStreamError, StatusCode: 200, LatencyMs: 345},
		},
		Stream:       true,
		InputTokens:  11,
		OutputTokens: 22,
		LatencyMs:    360,
		CreatedAt:    created.Add(time.Hour), // ignored: Begin's value stays
		FinishedAt:   created.Add(360 * time.Millisecond),
	}
	if err := l.Finish(ctx, final); err != nil {
		t.Fatal(err)
	}
	got, err = l.Get(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	want := final
	want.CreatedAt = created.Truncate(time.Microsecond)
	want.FinishedAt = final.FinishedAt.Truncate(time.Microsecond)
	sameRecord(t, got, want)

	// Zero-valued optional fields round-trip as zero values, attempts as nil.
	id2 := NewRequestID()
	if err := l.Finish(ctx, Record{RequestID: id2, Status: StatusRejected, HTTPStatus: 401, ErrorType: "authentication_error"}); err != nil {
		t.Fatal(err)
	}
	got, err = l.Get(ctx, id2)
	if err != nil {
		t.Fatal(err)
	}
	if got.Attempts != nil || got.KeyID != "" || got.FinishedAt.IsZero() || !got.CreatedAt.Equal(got.FinishedAt) {
		t.Errorf("minimal record came back as %+v", got)
	}
}

func TestBeginDefaultsCreatedAtAndIgnoresFinalFields(t *testing.T) {
	l := openTest(t, Options{})
	before := time.Now().Truncate(time.Microsecond)
	id := NewRequestID()
	beginWait(t, l, Record{RequestID: id, Status: StatusSuccess, FinishedAt: time.Now()})
	got, err := l.Get(ctxT(t), id)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != StatusInProgress || !got.FinishedAt.IsZero() || got.CreatedAt.Before(before) {
		t.Fatalf("Begin stored %+v", got)
	}
}

// gathering holds rows for an hour: nothing is committed until a read
// syncs, a Ping comes, or MaxBatch rows are queued.
var gathering = Options{BatchDelay: time.Hour}

func TestFinishExactlyOnce(t *testing.T) {
	logs := &testutil.SyncBuffer{}
	opts := gathering
	opts.Logger = slog.New(slog.NewTextHandler(logs, nil))
	l := openTest(t, opts)
	ctx := ctxT(t)
	id := NewRequestID()
	beginWait(t, l, Record{RequestID: id})
	first := finalRecord(id, "key-a")
	if err := l.Finish(ctx, first); err != nil {
		t.Fatal(err)
	}
	// While the first one's row waits for its transaction, the journal
	// refuses a second final record.
	second := finalRecord(id, "key-b")
	second.Status = StatusError
	if err := l.Finish(ctx, second); !errors.Is(err, ErrAlreadyFinished) {
		t.Fatalf("second Finish: %v, want ErrAlreadyFinished", err)
	}
	// Once the row is committed, the writer ignores it.
	if got, err := l.Get(ctx, id); err != nil || got.Status != StatusSuccess {
		t.Fatalf("record = %+v, %v", got, err)
	}
	if err := l.Finish(ctx, second); err != nil {
		t.Fatalf("a Finish after the row: %v", err)
	}
	got, err := l.Get(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != StatusSuccess || got.KeyID != "key-a" {
		t.Fatalf("second Finish changed the record: %+v", got)
	}
	if n := strings.Count(logs.String(), "duplicate finish"); n != 2 || !strings.Contains(logs.String(), id) {
		t.Errorf("duplicate finishes logged %d times, want 2: %q", n, logs.String())
	}

	// Two at once: exactly one is taken.
	id2 := NewRequestID()
	beginWait(t, l, Record{RequestID: id2})
	errs := make(chan error, 2)
	for range 2 {
		go func() { errs <- l.Finish(ctx, finalRecord(id2, "key-a")) }()
	}
	e1, e2 := <-errs, <-errs
	if (e1 == nil) == (e2 == nil) || !(errors.Is(e1, ErrAlreadyFinished) || errors.Is(e2, ErrAlreadyFinished)) {
		t.Fatalf("concurrent double Finish: %v / %v, want exactly one ErrAlreadyFinished", e1, e2)
	}
	if n, _, _ := l.Count(ctx); n != 2 {
		t.Fatalf("Count = %d, want 2", n)
	}
}

// A Begin and its Finish in one transaction leave the final record.
func TestBeginAndFinishInOneBatch(t *testing.T) {
	l := openTest(t, gathering)
	id := NewRequestID()
	created := time.Now()
	beginWait(t, l, Record{RequestID: id, ClientRequestID: "c", CreatedAt: created})
	r := finalRecord(id, "key-a")
	r.CreatedAt = created.Add(time.Hour) // the Begin's time stays
	if err := l.Finish(ctxT(t), r); err != nil {
		t.Fatal(err)
	}
	if n := l.Stats().Batches; n != 0 {
		t.Fatalf("%d transactions before any read", n)
	}
	wantSuccessCreatedAt(t, l, id, created.Truncate(time.Microsecond))
	if n := l.Stats().Batches; n != 1 {
		t.Fatalf("%d transactions, want 1", n)
	}
}

func TestBeginValidationAndDuplicates(t *testing.T) {
	l := openTest(t, gathering)
	ctx := ctxT(t)
	if err := l.Begin(Record{}); !errors.Is(err, ErrInvalidRecord) {
		t.Fatalf("Begin without id: %v", err)
	}
	id := NewRequestID()
	beginWait(t, l, Record{RequestID: id, ClientRequestID: "first"})
	if err := l.Begin(Record{RequestID: id}); !errors.Is(err, ErrDuplicate) {
		t.Fatalf("duplicate Begin: %v, want ErrDuplicate", err)
	}
	// Once its row is committed, the writer ignores it.
	if _, err := l.Get(ctx, id); err != nil {
		t.Fatal(err)
	}
	if err := l.Begin(Record{RequestID: id, ClientRequestID: "second"}); err != nil {
		t.Fatalf("a Begin after the row: %v", err)
	}
	if got, err := l.Get(ctx, id); err != nil || got.ClientRequestID != "first" {
		t.Fatalf("second Begin changed the record: %+v, %v", got, err)
	}
	for _, st := range []string{"", StatusInProgress, "bogus"} {
		if err := l.Finish(ctx, Record{RequestID: id, Status: st}); !errors.Is(err, ErrInvalidRecord) {
			t.Errorf("Finish with status %q: %v, want ErrInvalidRecord", st, err)
		}
	}
	if err := l.Finish(ctx, Record{Status: StatusSuccess}); !errors.Is(err, ErrInvalidRecord) {
		t.Errorf("Finish without id: %v", err)
	}
}

// Rows are gathered into one transaction, which a read ends at once: it
// sees every record journaled before it.
func TestReadsSeeEveryRecordJournaledBeforeThem(t *testing.T) {
	l := openTest(t, gathering)
	ctx := ctxT(t)
	ids := make([]string, 100)
	for i := range ids {
		ids[i] = NewRequestID()
		beginWait(t, l, Record{RequestID: ids[i], KeyID: "key-a"})
		if i%2 == 0 {
			if err := l.Finish(ctx, finalRecord(ids[i], "key-a")); err != nil {
				t.Fatal(err)
			}
		}
	}
	start := time.Now()
	total, by, err := l.Count(ctx)
	if err != nil || total != 100 || by[StatusSuccess] != 50 || by[StatusInProgress] != 50 {
		t.Fatalf("Count = %d %v, %v; want 50 final and 50 in progress", total, by, err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("the read waited %v: it must end the gathering", d)
	}
	if s := l.Stats(); s.Batches != 1 || s.Ops != 150 {
		t.Fatalf("Stats = %+v, want 150 rows in 1 transaction", s)
	}
	// With nothing waiting for its row, a read does not sync.
	if _, _, err := l.Count(ctx); err != nil {
		t.Fatal(err)
	}
	if n := l.Stats().Batches; n != 1 {
		t.Fatalf("%d transactions after an idle read, want 1", n)
	}
}

// A full batch ends the gathering: rows do not wait out the delay however
// many pile up.
func TestGatherEndsWithAFullBatch(t *testing.T) {
	opts := gathering
	opts.MaxBatch = 4
	l := openTest(t, opts)
	for range 4 {
		beginWait(t, l, Record{RequestID: NewRequestID()})
	}
	waitUntil(t, 10*time.Second, "a full batch committed", func() bool { return l.Stats().Batches > 0 })
}

func TestConcurrentLoad(t *testing.T) {
	l := openTest(t, Options{})
	ctx := ctxT(t)
	const workers, total = 64, 2000
	ids := make(chan string, total)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := w; i < total; i += workers {
				id := NewRequestID()
				key := []string{"key-a", "key-b"}[i%2]
				if err := l.Begin(Record{RequestID: id}); err != nil {
					t.Errorf("Begin: %v", err)
					return
				}
				if err := l.Finish(ctx, finalRecord(id, key)); err != nil {
					t.Errorf("Finish: %v", err)
					return
				}
				ids <- id
			}
		})
	}
	wg.Wait()
	close(ids)
	issued := map[string]bool{}
	for id := range ids {
		issued[id] = true
	}
	total0, by, err := l.Count(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if total0 != total || by[StatusSuccess] != total || len(issued) != total {
		t.Fatalf("Count = %d %v, issued %d unique ids; want %d successes", total0, by, len(issued), total)
	}
	seen := map[string]bool{}
	for _, key := range []string{"key-a", "key-b"} {
		for _, r := range listAll(t, l, key, 500) {
			if seen[r.RequestID] || !issued[r.RequestID] {
				t.Fatalf("listed %s twice or never issued", r.RequestID)
			}
			seen[r.RequestID] = true
		}
	}
	if len(seen) != total {
		t.Fatalf("listed %d records, want %d", len(seen), total)
	}
	s := l.Stats()
	t.Logf("writer: %d ops in %d batches", s.Ops, s.Batches)
	if s.Ops != 2*total || s.FailedBatches != 0 {
		t.Errorf("Stats = %+v", s)
	}
}

func TestCloseDrainsAndSurvivesRestart(t *testing.T) {
	path := dbPath(t)
	l := openAt(t, path, Options{})
	ctx := ctxT(t)
	var finished []Record
	for i := range 20 {
		r := finalRecord(NewRequestID(), "key-a")
		r.InputTokens = i
		r.CreatedAt = time.Now()
		beginWait(t, l, Record{RequestID: r.RequestID, CreatedAt: r.CreatedAt})
		if err := l.Finish(ctx, r); err != nil {
			t.Fatal(err)
		}
		finished = append(finished, r)
	}
	openIDs := make([]string, 500)
	for i := range openIDs {
		openIDs[i] = NewRequestID()
		beginWait(t, l, Record{RequestID: openIDs[i], KeyID: "key-a"})
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	// Close committed every row: the journal is empty.
	if b, err := os.ReadFile(journalPath(path)); err != nil || len(b) != 0 {
		t.Fatalf("journal after a clean Close: %d bytes, %v; want an empty file", len(b), err)
	}
	if err := l.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if err := l.Begin(Record{RequestID: NewRequestID()}); !errors.Is(err, ErrClosed) {
		t.Fatalf("Begin after Close: %v", err)
	}
	if err := l.Finish(ctx, finalRecord(NewRequestID(), "k")); !errors.Is(err, ErrClosed) {
		t.Fatalf("Finish after Close: %v", err)
	}
	if err := l.Ping(ctx); !errors.Is(err, ErrClosed) {
		t.Fatalf("Ping after Close: %v", err)
	}

	l = openAt(t, path, Options{})
	if l.Recovered() != len(openIDs) {
		t.Fatalf("Recovered = %d, want %d", l.Recovered(), len(openIDs))
	}
	for _, want := range finished {
		got, err := l.Get(ctx, want.RequestID)
		if err != nil {
			t.Fatal(err)
		}
		want.CreatedAt = want.CreatedAt.Truncate(time.Microsecond)
		want.FinishedAt = got.FinishedAt
		sameRecord(t, got, want)
	}
	_, by, err := l.Count(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if by[StatusInterrupted] != len(openIDs) || by[StatusSuccess] != len(finished) || by[StatusInProgress] != 0 {
		t.Fatalf("after restart: %v", by)
	}
	// An interrupted record is final: a late Finish cannot rewrite it.
	if err := l.Finish(ctx, finalRecord(openIDs[0], "key-a")); err != nil {
		t.Fatalf("Finish of an interrupted record: %v", err)
	}
	if got, err := l.Get(ctx, openIDs[0]); err != nil || got.Status != StatusInterrupted || got.FinishedAt.IsZero() {
		t.Fatalf("recovered record = %+v, %v", got, err)
	}
}

func TestPing(t *testing.T) {
	l := openTest(t, Options{})
	before := l.Stats().Ops
	for range 3 {
		if err := l.Ping(ctxT(t)); err != nil {
			t.Fatal(err)
		}
	}
	if got := l.Stats().Ops - before; got != 3 {
		t.Fatalf("Ping went through the writer %d times, want 3", got)
	}
}

// A Finish whose row cannot be queued before its context ends (the queue
// is full) has its record durable all the same: the next Open writes it.
func TestFinishContextCancelledKeepsTheRecord(t *testing.T) {
	path := dbPath(t)
	l := openAt(t, path, Options{QueueSize: 1})
	release := blockWriter(t, l)
	ids := []string{NewRequestID(), ""}
	beginWait(t, l, Record{RequestID: ids[0]})
	waitUntil(t, 10*time.Second, "the writer takes the first Begin", func() bool { return l.Stats().Queued == 0 })
	// The writer takes Begins until it waits for the lock; the next one
	// stays in the queue, which is then full.
	open := 1
	for l.Stats().Queued == 0 {
		ids[1] = NewRequestID()
		beginWait(t, l, Record{RequestID: ids[1]})
		open++
		time.Sleep(10 * time.Millisecond)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	err := l.Finish(ctx, finalRecord(ids[1], "key-a"))
	if !errors.Is(err, ErrQueueFull) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Finish = %v, want ErrQueueFull and DeadlineExceeded", err)
	}
	if got := l.Stats().Unrecorded; got != 0 {
		t.Fatalf("Unrecorded = %d for a journaled record", got)
	}
	release()
	if err := l.Close(); err == nil {
		t.Fatal("Close with a record without its row: want the error that keeps the journal")
	}
	l = openAt(t, path, Options{})
	if got, err := l.Get(ctxT(t), ids[1]); err != nil || got.Status != StatusSuccess {
		t.Fatalf("after reopening: %+v, %v; want the journaled final record", got, err)
	}
	if l.Recovered() != open-1 {
		t.Fatalf("Recovered = %d, want %d (the Begins without a Finish)", l.Recovered(), open-1)
	}
}

func listAll(t *testing.T, l *Ledger, key string, limit int) []Record {
	t.Helper()
	return listAllFiltered(t, l, key, Filter{}, limit)
}

// listAllFiltered pages through key's records matching f, limit a page.
func listAllFiltered(t *testing.T, l *Ledger, key string, f Filter, limit int) []Record {
	t.Helper()
	var all []Record
	cursor := ""
	for page := 0; ; page++ {
		recs, next, more, err := l.ListFiltered(ctxT(t), key, f, limit, cursor)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, recs...)
		if !more {
			if next != "" {
				t.Fatalf("page %d: next %q without has_more", page, next)
			}
			return all
		}
		if page > 10000 {
			t.Fatalf("pagination does not end for %s", key)
		}
		cursor = next
	}
}

// blockWriter holds the database's write lock from a second connection
// until release: the writer takes its next batch and waits in BEGIN
// IMMEDIATE (up to its busy timeout, 5 s), and what is queued after it
// stays queued.
func blockWriter(t *testing.T, l *Ledger) (release func()) {
	t.Helper()
	ctx := ctxT(t)
	side, err := sql.Open("sqlite", dsn(l.Path(), url.Values{"_pragma": {"busy_timeout(5000)"}}))
	if err != nil {
		t.Fatal(err)
	}
	conn, err := side.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	release = func() {
		once.Do(func() {
			_, _ = conn.ExecContext(ctx, "ROLLBACK")
			_ = conn.Close()
			_ = side.Close()
		})
	}
	t.Cleanup(release)
	return release
}
