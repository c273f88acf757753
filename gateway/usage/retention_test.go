package usage

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

// fill writes n final records for key "k", created at created (ids in
// creation order), with their rows committed, and returns their ids.
func fill(t *testing.T, l *Ledger, prefix string, n int, created time.Time) []string {
	t.Helper()
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("%s%06d", prefix, i)
		r := finalRecord(ids[i], "k")
		r.CreatedAt = created
		r.ClientRequestID = strings.Repeat("x", 200) // some bulk per row for the size bound
		r.Session = prefix                           // the session index is pruned with its rows
		beginWait(t, l, r)
		if err := l.Finish(ctxT(t), r); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.sync(ctxT(t)); err != nil { // every row committed
		t.Fatal(err)
	}
	return ids
}

func exists(t *testing.T, l *Ledger, id string) bool {
	t.Helper()
	_, err := l.Get(ctxT(t), id)
	if err != nil && !errors.Is(err, ErrNotFound) {
		t.Fatal(err)
	}
	return err == nil
}

func TestPruneByAgeKeepsNewAndInProgress(t *testing.T) {
	l := openTest(t, Options{})                                    // no background pass: this test prunes by itself
	old := fill(t, l, "req_a", 2500, time.Now().Add(-2*time.Hour)) // more than two batches
	fresh := fill(t, l, "req_b", 10, time.Now())
	open := finalRecord("req_0open", "k") // sorts first, created long ago, still running
	open.CreatedAt = time.Now().Add(-3 * time.Hour)
	beginWait(t, l, open)

	n, err := l.prune(ctxT(t), Retention{MaxAge: time.Hour})
	if err != nil || n != len(old) {
		t.Fatalf("Prune: dropped %d, %v; want %d", n, err, len(old))
	}
	if exists(t, l, old[0]) || exists(t, l, old[len(old)-1]) || !exists(t, l, fresh[0]) || !exists(t, l, open.RequestID) {
		t.Fatal("age retention dropped the wrong records")
	}
	if st := l.RetentionStats(); st.DroppedByAge != uint64(len(old)) || st.DroppedBySize != 0 {
		t.Fatalf("stats %+v", st)
	}
	if n := len(listAllFiltered(t, l, "k", Filter{Session: "req_a"}, 0)); n != 0 {
		t.Fatalf("the dropped records' session still lists %d", n)
	}
	if n := len(listAllFiltered(t, l, "k", Filter{Session: "req_b"}, 0)); n != len(fresh) {
		t.Fatalf("the kept records' session lists %d, want %d", n, len(fresh))
	}
}

func TestPruneBySizeDropsOldestFirst(t *testing.T) {
	l := openTest(t, Options{})
	ids := fill(t, l, "req_c", 3000, time.Now())
	full, err := l.liveBytes(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	n, err := l.prune(ctxT(t), Retention{MaxBytes: full / 2})
	if err != nil || n == 0 || n == len(ids) {
		t.Fatalf("Prune: dropped %d of %d, %v", n, len(ids), err)
	}
	used, err := l.liveBytes(ctxT(t))
	if err != nil || used > full/2 {
		t.Fatalf("live bytes %d after pruning to %d (%v)", used, full/2, err)
	}
	// Oldest first: the dropped records are exactly the first n ids.
	if exists(t, l, ids[n-1]) || !exists(t, l, ids[n]) || !exists(t, l, ids[len(ids)-1]) {
		t.Fatalf("size retention did not drop the oldest %d records first", n)
	}
	if st := l.RetentionStats(); st.DroppedBySize != uint64(n) {
		t.Fatalf("stats %+v, want %d dropped by size", st, n)
	}
}

// The background loop prunes without being asked, while the writer keeps
// committing.
func TestRetentionRunsInTheBackground(t *testing.T) {
	l := openTest(t, Options{Retention: Retention{MaxAge: time.Hour, Interval: 50 * time.Millisecond}})
	old := fill(t, l, "req_d", 50, time.Now().Add(-2*time.Hour))
	deadline := time.Now().Add(60 * time.Second) // generous: -race on two busy cores
	for l.RetentionStats().DroppedByAge < uint64(len(old)) {
		fill(t, l, fmt.Sprintf("req_e%d_", time.Now().UnixNano()), 1, time.Now()) // the writer keeps working
		if time.Now().After(deadline) {
			t.Fatalf("background retention dropped %d of %d old records", l.RetentionStats().DroppedByAge, len(old))
		}
		time.Sleep(20 * time.Millisecond)
	}
	if exists(t, l, old[0]) {
		t.Fatal("an old record survived the background pass")
	}
}
