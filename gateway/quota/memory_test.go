package quota

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/llmgw/llmgw/api/snapshot"
)

var t0 = time.Date(2026, 11, 5, 12, 0, 0, 0, time.UTC)

func rpm(id string, rpm, burst int) Limit {
	return RateLimit(&snapshot.Key{ID: id, RateLimit: snapshot.RateLimit{RPM: rpm, Burst: burst}})
}

func bucket(name string, capacity int64, period time.Duration, amount int64) Limit {
	return Limit{Counter: name, Kind: Bucket, Capacity: capacity, Period: period, Amount: amount}
}

func window(name string, capacity int64, end time.Time, amount int64) Limit {
	return Limit{Counter: name, Kind: Window, Capacity: capacity, End: end, Amount: amount}
}

func reserve(t *testing.T, m *Memory, id string, now time.Time, ls ...Limit) Decision {
	t.Helper()
	d, err := m.Reserve(context.Background(), id, ls, time.Minute, now)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func settle(t *testing.T, m *Memory, id string, now time.Time, actual ...int64) {
	t.Helper()
	if err := m.Settle(context.Background(), id, actual, now); err != nil {
		t.Fatal(err)
	}
}

// The request-per-minute bucket keeps gateway/ratelimit's semantics: burst
// at once, then one per 60/rpm seconds, Retry-After to the next token.
func TestRateLimitBurstThenRefill(t *testing.T) {
	m := NewMemory()
	for i := 0; i < 3; i++ {
		if d := reserve(t, m, "", t0, rpm("a", 60, 3)); !d.Allowed {
			t.Fatalf("request %d denied within burst", i)
		}
	}
	d := reserve(t, m, "", t0, rpm("a", 60, 3))
	if d.Allowed || d.Denied != 0 {
		t.Fatalf("4th request: %+v, want denied at limit 0", d)
	}
	if d.RetryAfter != time.Second {
		t.Fatalf("retry after %v, want exactly 1s at 60 rpm", d.RetryAfter)
	}
	if d := reserve(t, m, "", t0.Add(400*time.Millisecond), rpm("a", 60, 3)); d.Allowed || d.RetryAfter != 600*time.Millisecond {
		t.Fatalf("0.4s later: %+v, want denied with 600ms to go", d)
	}
	if d := reserve(t, m, "", t0.Add(time.Second), rpm("a", 60, 3)); !d.Allowed {
		t.Fatal("token not refilled after 1s at 60 rpm")
	}
	if d := reserve(t, m, "", t0.Add(time.Second), rpm("a", 60, 3)); d.Allowed {
		t.Fatal("refilled more than one token in 1s at 60 rpm")
	}
	if _, res := m.Len(); res != 0 {
		t.Fatalf("an empty id left %d reservations", res)
	}
}

func TestRateLimitKeysIndependent(t *testing.T) {
	m := NewMemory()
	for i := 0; i < 5; i++ {
		reserve(t, m, "", t0, rpm("a", 60, 2))
	}
	if d := reserve(t, m, "", t0, rpm("b", 60, 2)); !d.Allowed {
		t.Fatal("key b denied after key a exhausted its bucket")
	}
}

func TestRateLimitChangeApplies(t *testing.T) {
	m := NewMemory()
	reserve(t, m, "", t0, rpm("a", 60, 10))
	// burst lowered to 1: at most one more request now
	if d := reserve(t, m, "", t0, rpm("a", 60, 1)); !d.Allowed {
		t.Fatal("first request after lowering burst denied")
	}
	if d := reserve(t, m, "", t0, rpm("a", 60, 1)); d.Allowed {
		t.Fatal("lowered burst not enforced")
	}
	// a higher rate refills faster from now on: 600 rpm is one per 100ms
	if d := reserve(t, m, "", t0.Add(100*time.Millisecond), rpm("a", 600, 1)); !d.Allowed {
		t.Fatal("raised rate not applied")
	}
}

// Refill is exact integer arithmetic: 7 rpm never drifts over many periods.
func TestBucketRefillIsExact(t *testing.T) {
	m := NewMemory()
	l := bucket("k/x/tpm", 7, time.Minute, 7)
	reserve(t, m, "", t0, l) // empty
	l.Amount = 1
	got := 0
	// 7 per minute, asked every 1.25 s for an hour: exactly 420 tokens.
	for ts := t0.Add(1250 * time.Millisecond); !ts.After(t0.Add(time.Hour)); ts = ts.Add(1250 * time.Millisecond) {
		if reserve(t, m, "", ts, l).Allowed {
			got++
		}
	}
	if got != 420 {
		t.Fatalf("%d tokens in an hour at 7/min, want 420", got)
	}
}

func TestReserveIsAllOrNothing(t *testing.T) {
	m := NewMemory()
	end := t0.Add(time.Hour)
	tpm := bucket("k/a/tpm", 100, time.Minute, 60)
	budget := window("k/a/budget/w", 10, end, 11)
	d := reserve(t, m, "r1", t0, tpm, budget)
	if d.Allowed || d.Denied != 1 || d.RetryAfter != time.Hour {
		t.Fatalf("got %+v, want denied by limit 1 until the window's end", d)
	}
	// Nothing was taken from the tokens: 100 still fit.
	tpm.Amount, budget.Amount = 100, 10
	if d := reserve(t, m, "r2", t0, tpm, budget); !d.Allowed {
		t.Fatalf("the refused reservation took something: %+v", d)
	}
}

func TestSameCounterTwiceNeedsRoomForBoth(t *testing.T) {
	m := NewMemory()
	w := window("g/team/budget/w", 10, t0.Add(time.Hour), 6)
	if d := reserve(t, m, "r", t0, w, w); d.Allowed || d.Denied != 1 {
		t.Fatalf("6+6 fit in 10: %+v", d)
	}
	w.Amount = 5
	if d := reserve(t, m, "r", t0, w, w); !d.Allowed {
		t.Fatalf("5+5 did not fit in 10: %+v", d)
	}
}

func TestSettle(t *testing.T) {
	end := t0.Add(24 * time.Hour)
	cases := []struct {
		name string
		// reserved amounts (bucket of 100/min, window of 100) and settled use
		reserve, actual [2]int64
		// what the next request of amount 1 sees
		later    time.Duration
		wantNext bool
		// the window's use after settling, checked with a reservation of
		// exactly the rest
		rest int64
	}{
		{"unused room comes back", [2]int64{80, 80}, [2]int64{30, 30}, 0, true, 70},
		{"exact use", [2]int64{80, 80}, [2]int64{80, 80}, 0, true, 20},
		{"zeros release", [2]int64{80, 80}, [2]int64{0, 0}, 0, true, 100},
		{"overuse overdraws: even 1 is refused", [2]int64{80, 80}, [2]int64{150, 150}, 0, false, -50},
		{"an overdrawn bucket refills", [2]int64{100, 0}, [2]int64{130, 0}, 19 * time.Second, true, 100},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := NewMemory()
			b := bucket("k/a/tpm", 100, time.Minute, c.reserve[0])
			w := window("k/a/budget/w", 100, end, c.reserve[1])
			if d := reserve(t, m, "req", t0, b, w); !d.Allowed {
				t.Fatal(d)
			}
			settle(t, m, "req", t0, c.actual[:]...)
			b.Amount, w.Amount = 1, 0
			at := t0.Add(c.later)
			if d := reserve(t, m, "", at, b, w); d.Allowed != c.wantNext {
				t.Fatalf("next request allowed=%v, want %v (%+v)", d.Allowed, c.wantNext, d)
			}
			if c.rest >= 0 {
				w.Amount = c.rest
				if d := reserve(t, m, "", at, w); !d.Allowed {
					t.Fatalf("the window lacks its rest %d", c.rest)
				}
				w.Amount = 1
				if d := reserve(t, m, "", at, w); d.Allowed {
					t.Fatal("the window has more than its rest")
				}
			}
		})
	}
}

func TestSettleIsOnceAndBounded(t *testing.T) {
	m := NewMemory()
	w := window("k/a/budget/w", 10, t0.Add(time.Hour), 10)
	reserve(t, m, "r", t0, w)
	settle(t, m, "r", t0, 0)
	settle(t, m, "r", t0, 0) // again: nothing more comes back
	settle(t, m, "never-reserved", t0, 0, 0, 0)
	if err := m.Settle(context.Background(), "never-reserved", nil, t0); err != nil {
		t.Fatal(err)
	}
	w.Amount = 10
	if d := reserve(t, m, "r2", t0, w); !d.Allowed {
		t.Fatal("released room missing")
	}
	w.Amount = 1
	if d := reserve(t, m, "r3", t0, w); d.Allowed {
		t.Fatal("settling twice gave room back twice")
	}
	// After its ttl a reservation stays used: a replica that died without
	// settling cannot hand it back later.
	settle(t, m, "r2", t0.Add(time.Minute), 0)
	if d := reserve(t, m, "r4", t0.Add(time.Minute), w); d.Allowed {
		t.Fatal("a settle after the ttl gave room back")
	}
	if err := m.Settle(context.Background(), "r4", []int64{1, 2}, t0); err != nil {
		t.Fatalf("a refused reservation is unknown to Settle, got %v", err)
	}
	// Recovery settles with nil: zeros for every limit.
	reserve(t, m, "r6", t0.Add(time.Minute), window("k/c/budget/w", 10, t0.Add(time.Hour), 10), bucket("k/c/tpm", 5, time.Hour, 5))
	settle(t, m, "r6", t0.Add(time.Minute))
	if d := reserve(t, m, "", t0.Add(time.Minute), window("k/c/budget/w", 10, t0.Add(time.Hour), 10), bucket("k/c/tpm", 5, time.Hour, 5)); !d.Allowed {
		t.Fatal("a nil settlement did not release everything")
	}
	reserve(t, m, "r5", t0.Add(time.Minute), window("k/b/budget/w", 10, t0.Add(time.Hour), 1))
	if err := m.Settle(context.Background(), "r5", []int64{1, 2}, t0.Add(time.Minute)); err == nil {
		t.Fatal("settling with the wrong number of values is not an error")
	}
}

// Settling after the window ended touches nothing (the new period is a new
// counter), and a window's Retry-After is its end.
func TestWindowEnd(t *testing.T) {
	m := NewMemory()
	end := t0.Add(90 * time.Minute)
	w := window("k/a/budget/2026-11-05", 5, end, 5)
	reserve(t, m, "r", t0, w)
	d := reserve(t, m, "", end.Add(-time.Second), w)
	if d.Allowed || d.RetryAfter != time.Second {
		t.Fatalf("at the window's last second: %+v, want Retry-After 1s", d)
	}
	settle(t, m, "r", end, 0)
	if n, _ := m.Len(); n != 1 {
		t.Fatalf("%d counters", n)
	}
}

func TestReserveErrors(t *testing.T) {
	m := NewMemory()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	cases := []struct {
		name string
		ctx  context.Context
		id   string
		ttl  time.Duration
		ls   []Limit
	}{
		{"canceled", ctx, "", time.Minute, nil},
		{"no counter name", context.Background(), "", time.Minute, []Limit{{Kind: Window}}},
		{"unknown kind", context.Background(), "", time.Minute, []Limit{{Counter: "c"}}},
		{"bucket without period", context.Background(), "", time.Minute, []Limit{bucket("c", 1, 0, 1)}},
		{"negative amount", context.Background(), "", time.Minute, []Limit{window("c", 1, t0, -1)}},
		{"negative tally", context.Background(), "", time.Minute, []Limit{{Counter: "c", Kind: Tally, End: t0, Amount: -1}}},
		{"id without ttl", context.Background(), "r", 0, []Limit{window("c", 1, t0.Add(time.Hour), 1)}},
	}
	for _, c := range cases {
		if _, err := m.Reserve(c.ctx, c.id, c.ls, c.ttl, t0); err == nil {
			t.Errorf("%s: no error", c.name)
		}
	}
	if err := m.Settle(ctx, "r", nil, t0); !errors.Is(err, context.Canceled) {
		t.Errorf("settle with a canceled context: %v", err)
	}
}

func TestSweepBoundsMemory(t *testing.T) {
	m := NewMemory()
	reserve(t, m, "", t0, rpm("a", 60, 10))                                   // refills in 1s
	reserve(t, m, "", t0, bucket("k/b/tpm", 100, time.Minute, 100))           // full in 1 min
	reserve(t, m, "", t0, window("k/c/budget/w", 10, t0.Add(time.Minute), 1)) // ends in 1 min
	reserve(t, m, "open", t0, window("k/d/budget/w", 10, t0.Add(time.Hour), 1))
	reserve(t, m, "", t0, Limit{Counter: "k/f/budget/w", Kind: Tally, End: t0.Add(time.Minute), Amount: 1}) // ends in 1 min
	if c, r := m.Len(); c != 5 || r != 1 {
		t.Fatalf("%d counters, %d reservations", c, r)
	}
	// The first sweep is one interval after the first call.
	reserve(t, m, "", t0.Add(SweepInterval), bucket("k/e/tpm", 1, time.Hour, 0))
	if c, _ := m.Len(); c != 5 { // a's bucket is full again and gone; e's is full too
		t.Fatalf("after 30s: %d counters, want 5 (b, c, d, e, f)", c)
	}
	reserve(t, m, "", t0.Add(2*SweepInterval), bucket("k/e/tpm", 1, time.Hour, 0))
	if c, r := m.Len(); c != 2 || r != 0 { // b full, c and f ended, e full; d stays; open's ttl passed
		t.Fatalf("after 60s: %d counters, %d reservations; want 2 (d and e), 0", c, r)
	}
	// A swept bucket is as good as a full one.
	if d := reserve(t, m, "", t0.Add(2*SweepInterval), bucket("k/b/tpm", 100, time.Minute, 100)); !d.Allowed {
		t.Fatal("a swept bucket did not start full")
	}
}

func TestSeed(t *testing.T) {
	end := t0.Add(time.Hour)
	tally := func(amount int64) Limit { return Limit{Counter: "k/a/budget/w", Kind: Tally, End: end, Amount: amount} }
	cases := []struct {
		name  string
		seeds []int64
		// before the seeds, a tally of this amount (0: none)
		tallied int64
		// then: a tally of 0 reports this use, and a window of 10 admits
		// exactly the rest
		used int64
	}{
		{"a seed raises an unused counter", []int64{7}, 0, 7},
		{"a seed never lowers", []int64{7, 5}, 0, 7},
		{"a seed raises a tally's counter", []int64{9}, 4, 9},
		{"a seed below what the tally counted changes nothing", []int64{3}, 4, 4},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := NewMemory()
			if c.tallied > 0 {
				reserve(t, m, "", t0, tally(c.tallied))
			}
			for _, s := range c.seeds {
				m.Seed("k/a/budget/w", s, end)
			}
			if d := reserve(t, m, "", t0, tally(0)); !d.Allowed || len(d.States) != 1 || d.States[0].Used != c.used {
				t.Fatalf("a tally sees %+v, want use %d", d, c.used)
			}
			w := window("k/a/budget/w", 10, end, 10-c.used+1)
			if d := reserve(t, m, "", t0, w); d.Allowed {
				t.Fatal("the window has more room than its seeded use leaves")
			}
			w.Amount--
			if d := reserve(t, m, "", t0, w); !d.Allowed {
				t.Fatalf("the window lacks the room its seeded use leaves: %+v", d)
			}
		})
	}
}

// Under contention the store is exact: capacity for 50 admits exactly 50
// of 200 parallel reservations, and a bucket of 10 exactly 10 of 100.
func TestConcurrentExact(t *testing.T) {
	m := NewMemory()
	end := t0.Add(time.Hour)
	var wg sync.WaitGroup
	var budgetOK, rpmOK atomic.Int64
	for i := 0; i < 200; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d, err := m.Reserve(context.Background(), fmt.Sprint("r", i), []Limit{
				bucket("g/t/tpm", 1000, time.Minute, 1), window("g/t/budget/w", 50*7, end, 7)}, time.Minute, t0)
			if err != nil {
				t.Error(err)
			}
			if d.Allowed {
				budgetOK.Add(1)
			}
			if i < 100 {
				if d, _ := m.Reserve(context.Background(), "", []Limit{rpm("a", 60, 10)}, 0, t0); d.Allowed {
					rpmOK.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	if budgetOK.Load() != 50 || rpmOK.Load() != 10 {
		t.Fatalf("admitted %d of 200 (want 50) and %d of 100 (want 10)", budgetOK.Load(), rpmOK.Load())
	}
	// Concurrent settles give every unit back exactly once.
	for i := 0; i < 200; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := m.Settle(context.Background(), fmt.Sprint("r", i), []int64{0, 0}, t0); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if d := reserve(t, m, "", t0, window("g/t/budget/w", 350, end, 350)); !d.Allowed {
		t.Fatal("settling with zeros did not release everything")
	}
}

// Sweeps racing with reservations lose nothing: every reservation lands on
// a live counter.
func TestSweepRacesReserve(t *testing.T) {
	m := NewMemory()
	var wg sync.WaitGroup
	var allowed atomic.Int64
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 2000; i++ {
				// Time moves past sweep intervals while a window of 1000
				// (that never ends) is drawn from.
				now := t0.Add(time.Duration(i) * SweepInterval / 100)
				d, _ := m.Reserve(context.Background(), "", []Limit{
					bucket(fmt.Sprint("k/", i%7, "/tpm"), 5, time.Second, 1),
					window("k/all/budget/w", 1000, t0.Add(1000*time.Hour), 1)}, 0, now)
				if d.Allowed {
					allowed.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	if d := reserve(t, m, "", t0, window("k/all/budget/w", 1000, t0.Add(1000*time.Hour), 1000-allowed.Load())); !d.Allowed {
		t.Fatalf("the window lost use: %d admitted", allowed.Load())
	}
	if d := reserve(t, m, "", t0, window("k/all/budget/w", 1000, t0.Add(1000*time.Hour), 1)); d.Allowed {
		t.Fatalf("the window counted less than the %d admitted", allowed.Load())
	}
}
