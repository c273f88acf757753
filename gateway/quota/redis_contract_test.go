package quota_test

import (
	"context"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/llmgw/llmgw/gateway/quota"
)

// The Store contract (store.go's room rules, States, tallies) as a table of
// cases every implementation must pass: the Redis store runs them against a
// real redis-server (TestRedisContract), the memory store and a degraded
// Failover in process (TestMemoryContract, TestFailoverDegradedContract).

// t0 is near the real time: Redis expires window counters by its own clock
// (at End plus a grace), so their ends must not be in the real past.
var t0 = time.Now().UTC().Truncate(time.Second)

func bucket(counter string, capacity int64, period time.Duration, amount int64) quota.Limit {
	return quota.Limit{Counter: counter, Kind: quota.Bucket, Capacity: capacity, Period: period, Amount: amount}
}

func window(counter string, capacity int64, end time.Time, amount int64) quota.Limit {
	return quota.Limit{Counter: counter, Kind: quota.Window, Capacity: capacity, End: end, Amount: amount}
}

func tally(counter string, end time.Time, amount int64) quota.Limit {
	return quota.Limit{Counter: counter, Kind: quota.Tally, End: end, Amount: amount}
}

// with is limits with each Amount replaced.
func with(limits []quota.Limit, amounts ...int64) []quota.Limit {
	out := append([]quota.Limit(nil), limits...)
	for i := range out {
		out[i].Amount = amounts[i]
	}
	return out
}

type contractCase struct {
	name string
	run  func(t *testing.T, s quota.Store)
}

func mustReserve(t *testing.T, s quota.Store, id string, limits []quota.Limit, now time.Time) quota.Decision {
	t.Helper()
	d, err := s.Reserve(context.Background(), id, limits, time.Hour, now)
	if err != nil {
		t.Fatalf("Reserve(%q): %v", id, err)
	}
	return d
}

func wantAllowed(t *testing.T, s quota.Store, id string, limits []quota.Limit, now time.Time) {
	t.Helper()
	if d := mustReserve(t, s, id, limits, now); !d.Allowed {
		t.Fatalf("Reserve(%q) at %v refused (limit %d, retry after %v), want allowed", id, now.Sub(t0), d.Denied, d.RetryAfter)
	}
}

func wantDenied(t *testing.T, s quota.Store, id string, limits []quota.Limit, now time.Time, index int, retry time.Duration) {
	t.Helper()
	d := mustReserve(t, s, id, limits, now)
	if d.Allowed {
		t.Fatalf("Reserve(%q) at %v allowed, want refused by limit %d", id, now.Sub(t0), index)
	}
	if d.Denied != index || d.RetryAfter != retry {
		t.Fatalf("Reserve(%q) refused by limit %d, retry after %v; want limit %d, retry after %v", id, d.Denied, d.RetryAfter, index, retry)
	}
}

// wantStates checks a decision's counter states, one per limit.
func wantStates(t *testing.T, d quota.Decision, want ...quota.State) {
	t.Helper()
	if !slices.Equal(d.States, want) {
		t.Fatalf("states\n%+v\nwant\n%+v", d.States, want)
	}
}

func mustSettle(t *testing.T, s quota.Store, id string, now time.Time, actual ...int64) {
	t.Helper()
	if err := s.Settle(context.Background(), id, actual, now); err != nil {
		t.Fatalf("Settle(%q): %v", id, err)
	}
}

var contractCases = []contractCase{
	{"a bucket starts full, refuses past its capacity, and says when one unit is back", func(t *testing.T, s quota.Store) {
		rpm := []quota.Limit{bucket("k/a/rpm", 3, time.Minute, 1)}
		for range 3 {
			wantAllowed(t, s, "", rpm, t0)
		}
		// 3 per minute: one unit every 20 s.
		wantDenied(t, s, "", rpm, t0, 0, 20*time.Second)
		wantDenied(t, s, "", rpm, t0.Add(15*time.Second), 0, 5*time.Second)
		wantAllowed(t, s, "", rpm, t0.Add(20*time.Second))
		wantDenied(t, s, "", rpm, t0.Add(20*time.Second), 0, 20*time.Second)
		// A long pause refills to the capacity, not beyond.
		for range 3 {
			wantAllowed(t, s, "", rpm, t0.Add(time.Hour))
		}
		wantDenied(t, s, "", rpm, t0.Add(time.Hour), 0, 20*time.Second)
	}},
	{"all or nothing: a refusal by the second limit takes nothing from the first", func(t *testing.T, s quota.Store) {
		end := t0.Add(24 * time.Hour)
		limits := []quota.Limit{bucket("k/b/tpm", 1000, time.Minute, 400), window("k/b/budget/d", 100, end, 60)}
		wantAllowed(t, s, "r1", limits, t0)
		wantDenied(t, s, "r2", limits, t0, 1, 24*time.Hour)
		// r2 took no tokens: 600 are left, exactly.
		wantAllowed(t, s, "r3", with(limits, 600, 0), t0)
		wantDenied(t, s, "r4", with(limits, 1, 0), t0, 0, 60*time.Millisecond)
		wantAllowed(t, s, "r5", with(limits, 0, 40), t0)
		wantDenied(t, s, "r6", with(limits, 0, 1), t0, 1, 24*time.Hour)
	}},
	{"the first limit without room is the one named", func(t *testing.T, s quota.Store) {
		end := t0.Add(time.Hour)
		limits := []quota.Limit{window("k/c/budget/d", 10, end, 5), bucket("k/c/tpm", 10, time.Minute, 20), window("g/c/budget/d", 10, end, 20)}
		wantDenied(t, s, "r1", limits, t0, 1, time.Minute)
	}},
	{"a window refuses what would pass its allowance until its end", func(t *testing.T, s quota.Store) {
		end := t0.Add(90 * time.Minute)
		budget := []quota.Limit{window("k/d/budget/2026-11-05", 100, end, 60)}
		wantAllowed(t, s, "r1", budget, t0)
		wantDenied(t, s, "r2", with(budget, 41), t0.Add(30*time.Minute), 0, time.Hour)
		wantAllowed(t, s, "r3", with(budget, 40), t0.Add(30*time.Minute))
		wantDenied(t, s, "r4", with(budget, 1), t0, 0, 90*time.Minute)
	}},
	{"settle gives back what was reserved but not used", func(t *testing.T, s quota.Store) {
		end := t0.Add(time.Hour)
		limits := []quota.Limit{bucket("k/e/tpm", 1000, time.Hour, 800), window("k/e/budget/d", 100, end, 90)}
		wantAllowed(t, s, "r1", limits, t0)
		wantDenied(t, s, "r2", with(limits, 201, 0), t0, 0, 3600*time.Millisecond) // 1 token every 3.6 s
		mustSettle(t, s, "r1", t0, 100, 10)
		wantAllowed(t, s, "r3", with(limits, 900, 90), t0)
		wantDenied(t, s, "r4", with(limits, 1, 0), t0, 0, 3600*time.Millisecond)
		wantDenied(t, s, "r5", with(limits, 0, 1), t0, 1, time.Hour)
	}},
	{"settle takes use above the reservation, and an overdrawn counter refuses even zero", func(t *testing.T, s quota.Store) {
		end := t0.Add(time.Hour)
		limits := []quota.Limit{bucket("k/f/tpm", 60, time.Minute, 10), window("k/f/budget/d", 100, end, 10)}
		wantAllowed(t, s, "r1", limits, t0)
		mustSettle(t, s, "r1", t0, 70, 150)
		// Bucket at -10: 10 s until 0 tokens, then room for 0.
		wantDenied(t, s, "r2", with(limits, 0, 0), t0, 0, 10*time.Second)
		wantDenied(t, s, "r3", with(limits, 0, 0), t0.Add(10*time.Second), 1, 59*time.Minute+50*time.Second)
	}},
	{"settling twice, settling an unknown id and settling the empty id do nothing", func(t *testing.T, s quota.Store) {
		end := t0.Add(time.Hour)
		budget := []quota.Limit{window("k/g/budget/d", 100, end, 50)}
		wantAllowed(t, s, "r1", budget, t0)
		mustSettle(t, s, "r1", t0, 20)
		mustSettle(t, s, "r1", t0, 0) // would give back 20 more if it counted
		mustSettle(t, s, "never-reserved", t0, 0)
		mustSettle(t, s, "", t0, 0)
		wantAllowed(t, s, "r2", with(budget, 80), t0)
		wantDenied(t, s, "r3", with(budget, 1), t0, 0, time.Hour)
	}},
	{"settling with nil releases the whole reservation", func(t *testing.T, s quota.Store) {
		end := t0.Add(time.Hour)
		limits := []quota.Limit{bucket("k/n/tpm", 100, time.Hour, 100), window("k/n/budget/d", 100, end, 100)}
		wantAllowed(t, s, "r1", limits, t0)
		wantDenied(t, s, "r2", with(limits, 1, 0), t0, 0, 36*time.Second)
		mustSettle(t, s, "r1", t0)
		wantAllowed(t, s, "r3", limits, t0)
	}},
	{"the empty id takes for good and remembers nothing", func(t *testing.T, s quota.Store) {
		rpm := []quota.Limit{bucket("k/h/rpm", 2, time.Hour, 1)}
		wantAllowed(t, s, "", rpm, t0)
		mustSettle(t, s, "", t0, 0)
		wantAllowed(t, s, "", rpm, t0)
		wantDenied(t, s, "", rpm, t0, 0, 30*time.Minute)
	}},
	{"a lowered capacity drops the tokens above it at once; a raised one fills by refill", func(t *testing.T, s quota.Store) {
		wantAllowed(t, s, "", []quota.Limit{bucket("k/j/rpm", 10, time.Minute, 1)}, t0) // 9 left
		low := []quota.Limit{bucket("k/j/rpm", 2, time.Minute, 1)}
		wantAllowed(t, s, "", low, t0)
		wantAllowed(t, s, "", low, t0)
		wantDenied(t, s, "", low, t0, 0, 30*time.Second)
		high := []quota.Limit{bucket("k/j/rpm", 60, time.Minute, 1)}
		wantDenied(t, s, "", high, t0, 0, time.Second)
		wantAllowed(t, s, "", high, t0.Add(time.Second))
	}},
	{"budgets beyond 2^53 pico-units are counted exactly", func(t *testing.T, s quota.Store) {
		const big = int64(1)<<62 + 1 // not a float64
		end := t0.Add(time.Hour)
		budget := []quota.Limit{window("k/k/budget/d", big, end, big-1)}
		wantAllowed(t, s, "r1", budget, t0)
		wantAllowed(t, s, "r2", with(budget, 1), t0)
		wantDenied(t, s, "r3", with(budget, 1), t0, 0, time.Hour)
		mustSettle(t, s, "r2", t0, 0)
		wantAllowed(t, s, "r4", with(budget, 1), t0)
	}},
	{"states: a bucket reports its capacity, its whole tokens and the time until it is full", func(t *testing.T, s quota.Store) {
		rpm := []quota.Limit{bucket("k/sa/rpm", 3, time.Minute, 1)}
		// 3 per minute: 20 s a token.
		wantStates(t, mustReserve(t, s, "", rpm, t0), quota.State{Limit: 3, Remaining: 2, Reset: 20 * time.Second})
		mustReserve(t, s, "", rpm, t0)
		wantStates(t, mustReserve(t, s, "", rpm, t0), quota.State{Limit: 3, Remaining: 0, Reset: time.Minute})
		// Refused: the bucket as it is, refilled by 0.75 tokens.
		d := mustReserve(t, s, "", rpm, t0.Add(15*time.Second))
		if d.Allowed {
			t.Fatal("an empty bucket admitted")
		}
		wantStates(t, d, quota.State{Limit: 3, Remaining: 0, Reset: 45 * time.Second})
		wantStates(t, mustReserve(t, s, "", rpm, t0.Add(20*time.Second)), quota.State{Limit: 3, Remaining: 0, Reset: time.Minute})
		// An amount of 0 on a full bucket: full, nothing to wait for.
		wantStates(t, mustReserve(t, s, "", with(rpm, 0), t0.Add(time.Hour)), quota.State{Limit: 3, Remaining: 3})
	}},
	{"states: a window reports its capacity, its room, its use and the time to its end", func(t *testing.T, s quota.Store) {
		end := t0.Add(90 * time.Minute)
		budget := []quota.Limit{window("k/sb/budget/d", 100, end, 60)}
		wantStates(t, mustReserve(t, s, "r1", budget, t0), quota.State{Limit: 100, Remaining: 40, Reset: 90 * time.Minute, Used: 60})
		d := mustReserve(t, s, "r2", with(budget, 41), t0.Add(30*time.Minute))
		if d.Allowed {
			t.Fatal("41 fit in 40")
		}
		wantStates(t, d, quota.State{Limit: 100, Remaining: 40, Reset: time.Hour, Used: 60})
		mustSettle(t, s, "r1", t0, 130)
		// Overdrawn: nothing left, the use above the capacity.
		wantStates(t, mustReserve(t, s, "r3", with(budget, 0), t0.Add(time.Hour)), quota.State{Limit: 100, Reset: 30 * time.Minute, Used: 130})
	}},
	{"states of a refusal are every counter as it is, those after the refusing one too", func(t *testing.T, s quota.Store) {
		end := t0.Add(time.Hour)
		limits := []quota.Limit{
			bucket("k/sc/tpm", 10, time.Minute, 4), window("k/sc/budget/d", 10, end, 4), tally("k/sc/budget/m", end, 4),
			bucket("g/sc/tpm", 10, time.Minute, 1),
		}
		wantAllowed(t, s, "r1", limits, t0)
		d := mustReserve(t, s, "r2", with(limits, 0, 7, 1, 1), t0)
		if d.Allowed || d.Denied != 1 {
			t.Fatalf("%+v, want refused by the window", d)
		}
		wantStates(t, d,
			quota.State{Limit: 10, Remaining: 6, Reset: 24 * time.Second},
			quota.State{Limit: 10, Remaining: 6, Reset: time.Hour, Used: 4},
			quota.State{Reset: time.Hour, Used: 4},
			quota.State{Limit: 10, Remaining: 9, Reset: 6 * time.Second})
	}},
	{"a tally never refuses and settles like a window", func(t *testing.T, s quota.Store) {
		end := t0.Add(time.Hour)
		spend := []quota.Limit{tally("k/ta/budget/d", end, 1<<40)}
		for i := range 3 {
			wantStates(t, mustReserve(t, s, "r"+strconv.Itoa(i), spend, t0), quota.State{Reset: time.Hour, Used: int64(i+1) << 40})
		}
		mustSettle(t, s, "r0", t0, 5)
		mustSettle(t, s, "r1", t0)
		wantStates(t, mustReserve(t, s, "", with(spend, 0), t0.Add(time.Minute)), quota.State{Reset: 59 * time.Minute, Used: 5 + 1<<40})
	}},
	{"a window sees what a tally of the same name counted, and a tally what the window did", func(t *testing.T, s quota.Store) {
		end := t0.Add(time.Hour)
		const name = "k/tb/budget/2026-11"
		wantAllowed(t, s, "r1", []quota.Limit{tally(name, end, 70)}, t0)
		mustSettle(t, s, "r1", t0, 80)
		// A budget of 100 configured now has 20 left, not 100.
		budget := []quota.Limit{window(name, 100, end, 21)}
		wantDenied(t, s, "r2", budget, t0, 0, time.Hour)
		d := mustReserve(t, s, "r3", with(budget, 20), t0)
		if !d.Allowed {
			t.Fatal("the window lacks the 20 the tally left")
		}
		wantStates(t, d, quota.State{Limit: 100, Remaining: 0, Reset: time.Hour, Used: 100})
		// The budget is removed again: the tally goes on from its use.
		wantStates(t, mustReserve(t, s, "r4", []quota.Limit{tally(name, end, 5)}, t0), quota.State{Reset: time.Hour, Used: 105})
	}},
	{"settle charges the real cost above the reservation: the window refuses for the rest of its period, the tally beside it counts it", func(t *testing.T, s quota.Store) {
		dayEnd, monthEnd := t0.Add(time.Hour), t0.Add(48*time.Hour)
		limits := []quota.Limit{window("k/tc/budget/day", 100, dayEnd, 50), tally("k/tc/budget/month", monthEnd, 50)}
		wantAllowed(t, s, "r1", limits, t0)
		// The provider reported more output than max_tokens: 150 spent.
		mustSettle(t, s, "r1", t0, 150, 150)
		for _, at := range []time.Duration{0, 30 * time.Minute, time.Hour - time.Second} {
			d := mustReserve(t, s, "r2", with(limits, 0, 0), t0.Add(at))
			if d.Allowed || d.Denied != 0 || d.RetryAfter != time.Hour-at {
				t.Fatalf("at %v: %+v, want refused by the day's window until its end", at, d)
			}
			wantStates(t, d, quota.State{Limit: 100, Reset: time.Hour - at, Used: 150}, quota.State{Reset: 48*time.Hour - at, Used: 150})
		}
		// The tally alone (another request's month, without a budget) still
		// admits.
		wantAllowed(t, s, "r3", limits[1:], t0)
	}},
	{"200 parallel reservations against room for 50 admit exactly 50", func(t *testing.T, s quota.Store) {
		end := t0.Add(time.Hour)
		var allowed atomic.Int64
		var wg sync.WaitGroup
		errs := make(chan error, 200)
		for i := range 200 {
			wg.Go(func() {
				d, err := s.Reserve(context.Background(), "p"+strconv.Itoa(i),
					[]quota.Limit{window("k/m/budget/d", 50_000, end, 1000), bucket("k/m/rpm", 1000, time.Minute, 1)}, time.Hour, t0)
				if err != nil {
					errs <- err
					return
				}
				if d.Allowed {
					allowed.Add(1)
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		if got := allowed.Load(); got != 50 {
			t.Fatalf("%d of 200 admitted, want exactly 50", got)
		}
	}},
}

// storeContract runs every contract case on a fresh store from newStore.
func storeContract(t *testing.T, newStore func(t *testing.T) quota.Store) {
	for _, c := range contractCases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			c.run(t, newStore(t))
		})
	}
}
