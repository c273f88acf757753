package usage

import (
	"errors"
	"testing"
	"time"
)

// statusOf is the status of request id's row, "" when there is none.
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

func TestBeginHoldMergesAShortRequestIntoOneInsert(t *testing.T) {
	l := openTest(t, Options{BeginHold: time.Hour})
	id := NewRequestID()
	created := time.Now().Add(-time.Second).Truncate(time.Microsecond)
	p := l.Begin(Record{RequestID: id, KeyID: "key-a", CreatedAt: created})
	// Held: nothing reaches the database, and Committed stays open.
	if err := l.Ping(ctxT(t)); err != nil { // a commit after the Begin was dequeued
		t.Fatal(err)
	}
	if s := statusOf(t, l, id); s != "" {
		t.Fatalf("held Begin was written (status %q)", s)
	}
	if err := p.Err(); !errors.Is(err, ErrNotCommittedYet) {
		t.Fatalf("held Begin Err = %v, want ErrNotCommittedYet", err)
	}
	before := l.Stats().Batches
	if err := l.Finish(ctxT(t), finalRecord(id, "key-a")); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.Committed():
	default:
		t.Fatal("Finish returned before its held Begin was answered")
	}
	if err := p.Err(); err != nil {
		t.Fatalf("Begin: %v", err)
	}
	wantSuccessCreatedAt(t, l, id, created)
	if n := l.Stats().Batches - before; n != 1 {
		t.Fatalf("the pair took %d transactions, want 1", n)
	}
	// Exactly once still holds for the merged pair.
	if err := l.Finish(ctxT(t), finalRecord(id, "key-a")); !errors.Is(err, ErrAlreadyFinished) {
		t.Fatalf("second Finish = %v, want ErrAlreadyFinished", err)
	}
}

func TestBeginHoldWritesTheRowWhenTheHoldEnds(t *testing.T) {
	l := openTest(t, Options{BeginHold: 30 * time.Millisecond})
	id := NewRequestID()
	p := l.Begin(Record{RequestID: id, KeyID: "key-a"})
	if err := p.Wait(ctxT(t)); err != nil { // bounded by the test's context, not a sleep
		t.Fatal(err)
	}
	if s := statusOf(t, l, id); s != StatusInProgress {
		t.Fatalf("status after the hold = %q, want in_progress", s)
	}
	if err := l.Finish(ctxT(t), finalRecord(id, "key-a")); err != nil {
		t.Fatal(err)
	}
	if s := statusOf(t, l, id); s != StatusSuccess {
		t.Fatalf("status = %q, want success", s)
	}
}

func TestPersistWritesAHeldBeginAtOnce(t *testing.T) {
	l := openTest(t, Options{BeginHold: time.Hour})
	id := NewRequestID()
	p := l.Begin(Record{RequestID: id, KeyID: "key-a"})
	persistWait(t, l, p, id)
	// Persist of a committed Begin is a no-op, and Finish updates the row.
	if err := l.Persist(ctxT(t), p); err != nil {
		t.Fatal(err)
	}
	if err := l.Finish(ctxT(t), finalRecord(id, "key-a")); err != nil {
		t.Fatal(err)
	}
	if s := statusOf(t, l, id); s != StatusSuccess {
		t.Fatalf("status = %q, want success", s)
	}
}

func TestCloseWritesHeldBeginsForRecovery(t *testing.T) {
	path := dbPath(t)
	l := openAt(t, path, Options{BeginHold: time.Hour})
	ids := []string{NewRequestID(), NewRequestID(), NewRequestID()}
	ps := make([]*Pending, len(ids))
	for i, id := range ids {
		ps[i] = l.Begin(Record{RequestID: id, KeyID: "key-a"})
	}
	if err := l.Finish(ctxT(t), finalRecord(ids[1], "key-a")); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	for i, p := range ps {
		if err := p.Err(); err != nil {
			t.Fatalf("Begin %d after Close: %v", i, err)
		}
	}
	l2 := openAt(t, path, Options{})
	want := []string{StatusInterrupted, StatusSuccess, StatusInterrupted}
	for i, id := range ids {
		if s := statusOf(t, l2, id); s != want[i] {
			t.Errorf("record %d: status %q, want %q", i, s, want[i])
		}
	}
}

func TestHeldBeginsExpireInOrder(t *testing.T) {
	var h heldBegins
	t0 := time.Unix(1000, 0)
	ops := make([]*op, 4)
	for i := range ops {
		ops[i] = &op{Pending: &Pending{}, kind: opBegin, rec: Record{RequestID: string(rune('a' + i))}}
		h.add(ops[i], t0.Add(time.Duration(i)*time.Second))
	}
	if h.take("b") != ops[1] || h.take("b") != nil {
		t.Fatal("take must return a held op once")
	}
	if d, ok := h.next(); !ok || !d.Equal(t0) {
		t.Fatalf("next = %v %v", d, ok)
	}
	got := h.expired(nil, t0.Add(2*time.Second))
	if len(got) != 2 || got[0] != ops[0] || got[1] != ops[2] {
		t.Fatalf("expired = %v, want a and c", got)
	}
	if d, ok := h.next(); !ok || !d.Equal(t0.Add(3*time.Second)) {
		t.Fatalf("next after expiry = %v %v", d, ok)
	}
	if rest := h.expired(nil, time.Time{}); len(rest) != 1 || rest[0] != ops[3] {
		t.Fatalf("expired(all) = %v", rest)
	}
	if _, ok := h.next(); ok {
		t.Fatal("nothing should be held")
	}
}
