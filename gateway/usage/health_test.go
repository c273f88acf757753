package usage

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/llmgw/llmgw/test/testutil"
)

// waitUntil polls cond until it holds or d passes.
func waitUntil(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s", what, d)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// On a filesystem that fills up, a failed commit makes the ledger not
// writable and counts the final record it lost; once space is freed, the
// prober's write alone (nothing else writes here) makes it writable again,
// and records commit.
func TestWritableTracksCommitsOnAFullDisk(t *testing.T) {
	dir := testutil.SmallFS(t, 2<<20)
	l := openAt(t, filepath.Join(dir, "usage.db"), Options{ProbeInterval: 20 * time.Millisecond})
	ctx := ctxT(t)
	if err := l.Writable(); err != nil {
		t.Fatalf("a fresh ledger is not writable: %v", err)
	}
	id := NewRequestID()
	beginWait(t, l, Record{RequestID: id})
	if err := l.Finish(ctx, finalRecord(id, "k")); err != nil {
		t.Fatal(err)
	}

	filler := testutil.FillFS(t, dir)
	// SQLite may still fit a commit or two into space its files already
	// hold; the disk is full once a commit fails. Every Finish that failed
	// is a lost final record, and only those are.
	var failed int
	var lastErr error
	for i := 0; i < 10000 && failed == 0; i++ {
		id := NewRequestID()
		_ = l.Begin(Record{RequestID: id})
		if lastErr = l.Finish(ctx, finalRecord(id, "k")); lastErr != nil {
			failed++
		}
	}
	if failed == 0 {
		t.Fatal("no commit failed on a full filesystem")
	}
	err := l.Writable()
	if !errors.Is(err, ErrNotWritable) {
		t.Fatalf("Writable after a failed commit = %v, want ErrNotWritable", err)
	}
	if got := l.Stats().Unrecorded; got != uint64(failed) {
		t.Fatalf("Unrecorded = %d, want %d (the failed Finish)", got, failed)
	}
	// Still full: the prober keeps failing and the verdict stays.
	pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := l.Ping(pctx); err == nil {
		t.Fatal("Ping succeeded on a full filesystem")
	}
	if l.Writable() == nil {
		t.Fatal("writable again while the filesystem is still full")
	}
	// A Begin alone that fails loses no final record: its Finish may still
	// insert one.
	_ = l.Begin(Record{RequestID: NewRequestID()})
	if got := l.Stats().Unrecorded; got != uint64(failed) {
		t.Fatalf("Unrecorded = %d after a failed Begin, want %d", got, failed)
	}

	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, 10*time.Second, "writable again after space was freed", func() bool { return l.Writable() == nil })
	id = NewRequestID()
	beginWait(t, l, Record{RequestID: id})
	if err := l.Finish(ctx, finalRecord(id, "k")); err != nil {
		t.Fatalf("Finish after recovery: %v", err)
	}
	if r, err := l.Get(ctx, id); err != nil || r.Status != StatusSuccess {
		t.Fatalf("record after recovery: %+v %v", r, err)
	}
}

// A Finish the closed ledger cannot take is a lost final record too.
func TestFinishAfterCloseCountsUnrecorded(t *testing.T) {
	l := openTest(t, Options{})
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if err := l.Finish(ctxT(t), finalRecord(NewRequestID(), "k")); !errors.Is(err, ErrClosed) {
		t.Fatalf("Finish after Close = %v, want ErrClosed", err)
	}
	if got := l.Stats().Unrecorded; got != 1 {
		t.Fatalf("Unrecorded = %d, want 1", got)
	}
}
