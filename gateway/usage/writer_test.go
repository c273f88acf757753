package usage

import (
	"context"
	"errors"
	"log/slog"
	"math/rand/v2"
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
	begin := Record{RequestID: id, ClientRequestID: "client-1", Stream: true, CreatedAt: created}
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

func TestFinishExactlyOnce(t *testing.T) {
	logs := &testutil.SyncBuffer{}
	l := openTest(t, Options{Logger: slog.New(slog.NewTextHandler(logs, nil))})
	ctx := ctxT(t)
	id := NewRequestID()
	beginWait(t, l, Record{RequestID: id})
	first := finalRecord(id, "key-a")
	if err := l.Finish(ctx, first); err != nil {
		t.Fatal(err)
	}
	second := finalRecord(id, "key-b")
	second.Status = StatusError
	if err := l.Finish(ctx, second); !errors.Is(err, ErrAlreadyFinished) {
		t.Fatalf("second Finish: %v, want ErrAlreadyFinished", err)
	}
	got, err := l.Get(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != StatusSuccess || got.KeyID != "key-a" {
		t.Fatalf("second Finish changed the record: %+v", got)
	}
	if !strings.Contains(logs.String(), "duplicate finish") || !strings.Contains(logs.String(), id) {
		t.Errorf("duplicate finish not reported in logs: %q", logs.String())
	}

	// Also when both Finishes land in the same batch.
	l2 := openTest(t, Options{MaxDelay: 50 * time.Millisecond})
	id2 := NewRequestID()
	l2.Begin(Record{RequestID: id2})
	errs := make(chan error, 2)
	for range 2 {
		go func() { errs <- l2.Finish(ctx, finalRecord(id2, "key-a")) }()
	}
	e1, e2 := <-errs, <-errs
	if (e1 == nil) == (e2 == nil) || !(errors.Is(e1, ErrAlreadyFinished) || errors.Is(e2, ErrAlreadyFinished)) {
		t.Fatalf("concurrent double Finish: %v / %v, want exactly one ErrAlreadyFinished", e1, e2)
	}
	if n, _, _ := l2.Count(ctx); n != 1 {
		t.Fatalf("Count = %d, want 1", n)
	}
}

func TestFinishWhileBeginQueued(t *testing.T) {
	// The batch cannot commit before its second op arrives (or 10s pass), so
	// the Begin is certainly still uncommitted when Finish is queued.
	l := openTest(t, Options{MaxDelay: 10 * time.Second, MaxBatch: 2})
	id := NewRequestID()
	p := l.Begin(Record{RequestID: id, ClientRequestID: "c"})
	if err := p.Err(); !errors.Is(err, ErrNotCommittedYet) {
		t.Fatalf("Err before commit = %v, want ErrNotCommittedYet", err)
	}
	if err := l.Finish(ctxT(t), finalRecord(id, "key-a")); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.Committed():
	default:
		t.Fatal("Finish returned before the earlier Begin was committed")
	}
	if err := p.Err(); err != nil {
		t.Fatalf("Begin: %v", err)
	}
	got, err := l.Get(ctxT(t), id)
	if err != nil || got.Status != StatusSuccess {
		t.Fatalf("Get = %+v, %v; want success", got, err)
	}
}

func TestBeginValidationAndDuplicates(t *testing.T) {
	l := openTest(t, Options{})
	ctx := ctxT(t)
	if err := l.Begin(Record{}).Wait(ctx); !errors.Is(err, ErrInvalidRecord) {
		t.Fatalf("Begin without id: %v", err)
	}
	id := NewRequestID()
	beginWait(t, l, Record{RequestID: id})
	if err := l.Begin(Record{RequestID: id}).Wait(ctx); !errors.Is(err, ErrDuplicate) {
		t.Fatalf("duplicate Begin: %v, want ErrDuplicate", err)
	}
	for _, st := range []string{"", StatusInProgress, "bogus"} {
		if err := l.Finish(ctx, Record{RequestID: id, Status: st}); !errors.Is(err, ErrInvalidRecord) {
			t.Errorf("Finish with status %q: %v, want ErrInvalidRecord", st, err)
		}
	}
	if err := l.Finish(ctx, Record{Status: StatusSuccess}); !errors.Is(err, ErrInvalidRecord) {
		t.Errorf("Finish without id: %v", err)
	}
	// A duplicate in the same batch as good ops fails alone.
	l2 := openTest(t, Options{MaxDelay: 50 * time.Millisecond})
	a, b := NewRequestID(), NewRequestID()
	pa, pdup, pb := l2.Begin(Record{RequestID: a}), l2.Begin(Record{RequestID: a}), l2.Begin(Record{RequestID: b})
	for i, p := range []*Pending{pa, pdup, pb} {
		err := p.Wait(ctx)
		if (i == 1) != errors.Is(err, ErrDuplicate) || (i != 1 && err != nil) {
			t.Errorf("op %d: %v", i, err)
		}
	}
}

func TestCommittedOrdering(t *testing.T) {
	l := openTest(t, Options{MaxBatch: 3})
	ps := make([]*Pending, 300)
	for i := range ps {
		ps[i] = l.Begin(Record{RequestID: NewRequestID()})
	}
	// Whichever one we wait for, everything queued before it is committed.
	for _, k := range rand.Perm(len(ps)) {
		<-ps[k].Committed()
		for j := 0; j < k; j++ {
			select {
			case <-ps[j].Committed():
			default:
				t.Fatalf("pending %d committed before pending %d", k, j)
			}
		}
	}
	for i, p := range ps {
		if err := p.Err(); err != nil {
			t.Fatalf("pending %d: %v", i, err)
		}
	}
	if s := l.Stats(); s.Batches < 100 {
		t.Errorf("MaxBatch 3 gave %d batches for 300 ops", s.Batches)
	}
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
				p := l.Begin(Record{RequestID: id})
				if err := l.Finish(ctx, finalRecord(id, key)); err != nil {
					t.Errorf("Finish: %v", err)
					return
				}
				if err := p.Err(); err != nil {
					t.Errorf("Begin: %v", err)
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
	open := make([]*Pending, 500)
	openIDs := make([]string, len(open))
	for i := range open {
		openIDs[i] = NewRequestID()
		open[i] = l.Begin(Record{RequestID: openIDs[i], KeyID: "key-a"})
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	for i, p := range open {
		if err := p.Err(); err != nil {
			t.Fatalf("queued Begin %d not drained by Close: %v", i, err)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if err := l.Begin(Record{RequestID: NewRequestID()}).Err(); !errors.Is(err, ErrClosed) {
		t.Fatalf("Begin after Close: %v", err)
	}
	if err := l.Finish(ctx, finalRecord(NewRequestID(), "k")); !errors.Is(err, ErrClosed) {
		t.Fatalf("Finish after Close: %v", err)
	}
	if err := l.Ping(ctx); !errors.Is(err, ErrClosed) {
		t.Fatalf("Ping after Close: %v", err)
	}

	l = openAt(t, path, Options{})
	if l.Recovered() != len(open) {
		t.Fatalf("Recovered = %d, want %d", l.Recovered(), len(open))
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
	if by[StatusInterrupted] != len(open) || by[StatusSuccess] != len(finished) || by[StatusInProgress] != 0 {
		t.Fatalf("after restart: %v", by)
	}
	// An interrupted record is final: a late Finish cannot rewrite it.
	if err := l.Finish(ctx, finalRecord(openIDs[0], "key-a")); !errors.Is(err, ErrAlreadyFinished) {
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

func TestFinishContextCancelled(t *testing.T) {
	// Begin + Finish + Ping fill the batch; until Ping arrives nothing commits.
	l := openTest(t, Options{MaxDelay: 10 * time.Second, MaxBatch: 3})
	id := NewRequestID()
	l.Begin(Record{RequestID: id})
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if err := l.Finish(ctx, finalRecord(id, "key-a")); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Finish = %v, want DeadlineExceeded", err)
	}
	// The queued update still lands.
	if err := l.Ping(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	got, err := l.Get(ctxT(t), id)
	if err != nil || got.Status != StatusSuccess {
		t.Fatalf("Get = %+v, %v", got, err)
	}
}

func listAll(t *testing.T, l *Ledger, key string, limit int) []Record {
	t.Helper()
	var all []Record
	cursor := ""
	for page := 0; ; page++ {
		recs, next, more, err := l.List(ctxT(t), key, limit, cursor)
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
