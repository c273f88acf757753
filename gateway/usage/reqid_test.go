package usage

import (
	"sync"
	"testing"
	"time"
)

func TestRequestIDShape(t *testing.T) {
	before := time.Now().Add(-time.Millisecond)
	id := NewRequestID()
	if !IsRequestID(id) || len(id) != 30 {
		t.Fatalf("NewRequestID() = %q", id)
	}
	ts, ok := RequestIDTime(id)
	if !ok || ts.Before(before.Truncate(time.Millisecond)) || ts.After(time.Now().Add(2*time.Second)) {
		t.Fatalf("RequestIDTime(%s) = %v, %v", id, ts, ok)
	}
	for _, bad := range []string{"", "req_", "req_8ZZZZZZZZZZZZZZZZZZZZZZZZZ", "req_0123456789ABCDEFGHJKMNPQRI", "xyz_0123456789ABCDEFGHJKMNPQRS", id + "0"} {
		if IsRequestID(bad) {
			t.Errorf("IsRequestID(%q) = true", bad)
		}
	}
	if got := encodeRequestID(^uint64(0), ^uint64(0)); got != "req_7ZZZZZZZZZZZZZZZZZZZZZZZZZ" {
		t.Errorf("max id = %s", got)
	}
	if got := encodeRequestID(0, 1); got != "req_00000000000000000000000001" {
		t.Errorf("id 1 = %s", got)
	}
}

func TestRequestIDOrdering(t *testing.T) {
	prev := NewRequestID()
	for range 200000 { // spans several milliseconds and many ids per millisecond
		id := NewRequestID()
		if id <= prev {
			t.Fatalf("%s issued after %s", id, prev)
		}
		prev = id
	}
	// Across a millisecond boundary, the timestamp orders them.
	a := NewRequestID()
	time.Sleep(2 * time.Millisecond)
	b := NewRequestID()
	ta, _ := RequestIDTime(a)
	tb, _ := RequestIDTime(b)
	if !(a < b) || !ta.Before(tb) {
		t.Fatalf("%s (%v) vs %s (%v)", a, ta, b, tb)
	}
}

func TestRequestIDSequenceCarry(t *testing.T) {
	// Pretend the clock ran 1s ahead and the sequence is about to wrap: ids
	// must keep increasing rather than go back to the real clock.
	ahead := uint64(time.Now().Add(time.Second).UnixMilli())<<16 | 0xfffe
	if cur := idClock.Load(); cur > ahead { // never move the shared clock back
		ahead = cur | 0xfffe
	}
	idClock.Store(ahead)
	a, b, c := NewRequestID(), NewRequestID(), NewRequestID()
	if !(a < b && b < c) {
		t.Fatalf("not increasing across a sequence carry: %s %s %s", a, b, c)
	}
	tc, _ := RequestIDTime(c)
	if tc.UnixMilli() != int64(ahead>>16)+1 {
		t.Fatalf("carry did not advance the millisecond: %v", tc)
	}
}

func TestRequestIDConcurrentUnique(t *testing.T) {
	const workers, each = 64, 5000
	out := make([][]string, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			ids := make([]string, each)
			for i := range ids {
				ids[i] = NewRequestID()
				if i > 0 && ids[i] <= ids[i-1] {
					t.Errorf("goroutine %d: %s after %s", w, ids[i], ids[i-1])
					return
				}
			}
			out[w] = ids
		})
	}
	wg.Wait()
	seen := make(map[string]bool, workers*each)
	for _, ids := range out {
		for _, id := range ids {
			if seen[id] {
				t.Fatalf("duplicate %s", id)
			}
			seen[id] = true
		}
	}
}
