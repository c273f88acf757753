package quota

import (
	"context"
	"fmt"
	"math"
	"math/bits"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Memory is the Store of one process: exact, all or nothing, and without a
// global lock. Counters are found through a sync.Map and each has its own
// mutex; a Reserve locks the counters it names in name order (so two
// requests over the same counters cannot deadlock), checks all of them and
// takes from all of them before unlocking. Key A's requests therefore never
// wait on key B's, and the requests of one key wait only on each other.
//
// Token buckets are kept in whole tokens plus the exact refill progress
// (integer arithmetic, no floats), so a bucket refilled at Capacity per
// Period never drifts. Memory is bounded: a bucket that has refilled to full
// is the same as no bucket and is dropped, a window past its End is dropped,
// and a reservation past its ttl is dropped (its amounts stay taken), all by
// a sweep that runs at most every SweepInterval inside the calls.
type Memory struct {
	counters     sync.Map // name → *counter
	reservations sync.Map // id → *reservation

	sweepMu   sync.Mutex
	nextSweep atomic.Int64 // unix nanoseconds; 0: at the first call
}

// SweepInterval is how often calls drop what no longer matters.
const SweepInterval = 30 * time.Second

// NewMemory returns an empty store.
func NewMemory() *Memory { return &Memory{} }

type counter struct {
	mu   sync.Mutex
	name string
	// dead is set, under mu, when the sweep removes the counter from the
	// map; a caller that locked a dead counter looks it up again.
	dead bool
	kind Kind

	// Bucket: tokens is whole tokens (negative when overdrawn); frac is the
	// refill progress beyond them, in tokens×Period units (< period).
	tokens   int64
	frac     uint64
	last     time.Time
	capacity int64
	period   time.Duration

	// Window: what is used of capacity until end.
	used int64
	end  time.Time
}

type reservation struct {
	limits  []Limit
	expires time.Time
}

// Reserve implements Store.
func (m *Memory) Reserve(ctx context.Context, id string, limits []Limit, ttl time.Duration, now time.Time) (Decision, error) {
	if err := ctx.Err(); err != nil {
		return Decision{}, fmt.Errorf("quota: reserve: %w", err)
	}
	if err := checkLimits(limits); err != nil {
		return Decision{}, err
	}
	if id != "" && ttl <= 0 {
		return Decision{}, fmt.Errorf("quota: reservation %s needs a positive ttl", id)
	}
	m.maybeSweep(now)
	if len(limits) == 1 && id == "" {
		return m.reserveOne(limits[0], now), nil
	}
	for {
		cs := m.lookup(limits)
		locked := lockAll(cs)
		if locked == nil {
			continue // a counter was swept meanwhile: look them up again
		}
		d := decide(cs, limits, now)
		if d.Allowed {
			for i, l := range limits {
				take(cs[i], l, l.Amount)
			}
			if id != "" {
				m.reservations.Store(id, &reservation{limits: slices.Clone(limits), expires: now.Add(ttl)})
			}
		}
		d.States = make([]State, len(limits))
		for i, l := range limits {
			d.States[i] = cs[i].state(l, now)
		}
		unlockAll(locked)
		return d, nil
	}
}

// reserveOne is Reserve of one limit with nothing to remember (the
// requests-per-minute check of every chat request): one allocation, the
// States.
func (m *Memory) reserveOne(l Limit, now time.Time) Decision {
	c := m.lockLive(l)
	defer c.mu.Unlock()
	cs := [1]*counter{c}
	d := decide(cs[:], []Limit{l}, now)
	if d.Allowed {
		take(c, l, l.Amount)
	}
	d.States = []State{c.state(l, now)}
	return d
}

// lockLive returns l's counter locked, never one the sweeper has dropped
// (a dead counter is left for the next get to replace).
func (m *Memory) lockLive(l Limit) *counter {
	for {
		c := m.get(l)
		c.mu.Lock()
		if !c.dead {
			return c
		}
		c.mu.Unlock()
	}
}

// Settle implements Store.
func (m *Memory) Settle(ctx context.Context, id string, actual []int64, now time.Time) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("quota: settle: %w", err)
	}
	m.maybeSweep(now)
	v, ok := m.reservations.LoadAndDelete(id)
	if !ok {
		return nil
	}
	r := v.(*reservation)
	if !now.Before(r.expires) {
		return nil // kept as used: see Store.Reserve
	}
	if actual == nil {
		actual = make([]int64, len(r.limits))
	}
	if len(actual) != len(r.limits) {
		return fmt.Errorf("quota: settle %d limits with %d values", len(r.limits), len(actual))
	}
	for i, l := range r.limits {
		if delta := actual[i] - l.Amount; delta != 0 {
			m.adjust(l, delta, now)
		}
	}
	return nil
}

// Seed raises a Window's (or Tally's: the same counter) use to at least
// used (what the ledger says was spent in the window before this process
// started). It is not part of Store: a shared store keeps its counters
// across gateway restarts.
func (m *Memory) Seed(name string, used int64, end time.Time) {
	c := m.lockLive(Limit{Counter: name, Kind: Window, End: end})
	c.used = max(c.used, used)
	c.mu.Unlock()
}

// adjust applies a settled difference to one counter.
func (m *Memory) adjust(l Limit, delta int64, now time.Time) {
	if l.Kind.windowed() && !now.Before(l.End) {
		return // the window is over; a new one is a new counter
	}
	c := m.lockLive(l)
	if c.kind == Bucket {
		c.refill(l, now)
	}
	take(c, l, delta)
	c.mu.Unlock()
}

func checkLimits(limits []Limit) error {
	for i, l := range limits {
		switch {
		case l.Counter == "":
			return fmt.Errorf("quota: limit %d has no counter name", i)
		case l.Kind != Bucket && !l.Kind.windowed():
			return fmt.Errorf("quota: limit %s has unknown kind %d", l.Counter, l.Kind)
		case l.Kind == Bucket && (l.Capacity <= 0 || l.Period <= 0):
			return fmt.Errorf("quota: bucket %s needs a positive capacity and period", l.Counter)
		case l.Amount < 0:
			return fmt.Errorf("quota: limit %s: negative amount %d", l.Counter, l.Amount)
		}
	}
	return nil
}

// get returns the counter l names, creating it (full or unused) if needed.
// A Tally's counter is a Window's: the kind a counter keeps is only Bucket
// or Window, and a limit's own Kind decides whether it checks room.
func (m *Memory) get(l Limit) *counter {
	if v, ok := m.counters.Load(l.Counter); ok {
		return v.(*counter)
	}
	kind := l.Kind
	if kind.windowed() {
		kind = Window
	}
	c := &counter{name: l.Counter, kind: kind, tokens: l.Capacity, capacity: l.Capacity, period: l.Period, end: l.End}
	v, _ := m.counters.LoadOrStore(l.Counter, c)
	return v.(*counter)
}

func (m *Memory) lookup(limits []Limit) []*counter {
	cs := make([]*counter, len(limits))
	for i, l := range limits {
		cs[i] = m.get(l)
	}
	return cs
}

// lockAll locks each distinct counter once, in name order, and returns them
// for unlockAll; nil (with nothing locked) when one of them is dead.
func lockAll(cs []*counter) []*counter {
	order := slices.Clone(cs)
	slices.SortFunc(order, func(a, b *counter) int { return strings.Compare(a.name, b.name) })
	order = slices.Compact(order)
	for i, c := range order {
		c.mu.Lock()
		if c.dead {
			unlockAll(order[:i+1])
			return nil
		}
	}
	return order
}

func unlockAll(cs []*counter) {
	for _, c := range cs {
		c.mu.Unlock()
	}
}

// decide checks every limit in order, with the counters locked; a counter
// named twice must have room for both amounts.
func decide(cs []*counter, limits []Limit, now time.Time) Decision {
	for i, l := range limits {
		c := cs[i]
		c.touch(l, now)
		// A request names a handful of limits: a scan beats a map.
		var prior int64
		for j := range i {
			if cs[j] == c {
				prior, _ = addSat(prior, limits[j].Amount)
			}
		}
		if !c.room(l, prior) {
			return Decision{Denied: i, RetryAfter: c.retryAfter(l, prior, now)}
		}
	}
	return Decision{Allowed: true}
}

// touch brings a locked counter up to now with l: a bucket refilled, a
// window's end the latest any limit named.
func (c *counter) touch(l Limit, now time.Time) {
	if c.kind == Bucket {
		c.refill(l, now)
	} else if l.End.After(c.end) {
		c.end = l.End
	}
}

// state is the locked counter as l sees it now (see State).
func (c *counter) state(l Limit, now time.Time) State {
	c.touch(l, now)
	if c.kind == Bucket {
		return State{Limit: c.capacity, Remaining: max(c.tokens, 0), Reset: c.until(c.capacity)}
	}
	s := State{Reset: max(c.end.Sub(now), 0), Used: c.used}
	if l.Kind == Window {
		s.Limit = l.Capacity
		s.Remaining = max(subSat(l.Capacity, c.used), 0)
	}
	return s
}

// refill brings a bucket up to now with l's capacity and period (a changed
// limit applies from now on; tokens above a lowered capacity are dropped).
func (c *counter) refill(l Limit, now time.Time) {
	if c.capacity != l.Capacity || c.period != l.Period {
		// The progress was measured in the old rate's units: drop it (less
		// than one token).
		c.capacity, c.period, c.frac = l.Capacity, l.Period, 0
	}
	if c.last.IsZero() {
		c.last = now
	}
	if elapsed := now.Sub(c.last); elapsed > 0 {
		c.last = now
		if c.tokens < c.capacity {
			need := uint64(c.capacity - c.tokens)
			hi, lo := bits.Mul64(uint64(elapsed), uint64(c.capacity))
			lo, carry := bits.Add64(lo, c.frac, 0)
			hi += carry
			p := uint64(c.period)
			if hi >= p {
				c.tokens, c.frac = c.capacity, 0 // more than 2^64 tokens' worth
			} else if q, r := bits.Div64(hi, lo, p); q >= need {
				c.tokens, c.frac = c.capacity, 0
			} else {
				c.tokens += int64(q)
				c.frac = r
			}
		}
	}
	if c.tokens >= c.capacity {
		c.tokens, c.frac = c.capacity, 0
	}
}

// room says whether l's amount fits after prior amounts of this Reserve.
func (c *counter) room(l Limit, prior int64) bool {
	if l.Kind == Tally {
		return true // it only counts
	}
	amount, ok := addSat(prior, l.Amount)
	if !ok {
		return false
	}
	if c.kind == Bucket {
		return c.tokens >= amount
	}
	used, ok := addSat(c.used, amount)
	return ok && used <= l.Capacity
}

// retryAfter is when the counter may have room for l (and prior) again.
func (c *counter) retryAfter(l Limit, prior int64, now time.Time) time.Duration {
	if c.kind == Window {
		return max(c.end.Sub(now), 0)
	}
	amount, _ := addSat(prior, l.Amount)
	return c.until(amount)
}

// until is how long a bucket takes to hold amount tokens (0: it does).
func (c *counter) until(amount int64) time.Duration {
	need := amount - c.tokens // > 0: the bucket lacks it
	if need <= 0 {
		return 0
	}
	// The first t with (t×capacity + frac) / period ≥ need:
	// t = ceil((need×period − frac) / capacity).
	hi, lo := bits.Mul64(uint64(need), uint64(c.period))
	lo, borrow := bits.Sub64(lo, c.frac, 0)
	hi -= borrow
	capacity := uint64(c.capacity)
	if hi >= capacity {
		return time.Duration(math.MaxInt64)
	}
	q, r := bits.Div64(hi, lo, capacity)
	if r > 0 {
		q++
	}
	if q > math.MaxInt64 {
		return time.Duration(math.MaxInt64)
	}
	return time.Duration(q)
}

// take draws amount (negative: gives back) from a locked counter.
func take(c *counter, l Limit, amount int64) {
	if c.kind == Bucket {
		c.tokens = subSat(c.tokens, amount)
		if c.tokens >= c.capacity {
			c.tokens, c.frac = c.capacity, 0
		}
		return
	}
	c.used, _ = addSat(c.used, amount)
}

// maybeSweep drops, at most every SweepInterval, expired reservations, full
// buckets and ended windows. One caller sweeps; the others go on.
func (m *Memory) maybeSweep(now time.Time) {
	n := now.UnixNano()
	next := m.nextSweep.Load()
	if next != 0 && n < next {
		return
	}
	if !m.sweepMu.TryLock() {
		return
	}
	defer m.sweepMu.Unlock()
	if next := m.nextSweep.Load(); next != 0 && n < next {
		return // another caller just swept
	}
	m.nextSweep.Store(n + int64(SweepInterval))
	if next == 0 {
		return // the first call: nothing to sweep yet
	}
	m.reservations.Range(func(k, v any) bool {
		if !now.Before(v.(*reservation).expires) {
			m.reservations.CompareAndDelete(k, v)
		}
		return true
	})
	m.counters.Range(func(k, v any) bool {
		c := v.(*counter)
		c.mu.Lock()
		drop := false
		if c.kind == Window {
			drop = !now.Before(c.end)
		} else {
			c.refill(Limit{Capacity: c.capacity, Period: c.period}, now)
			drop = c.tokens >= c.capacity
		}
		if drop {
			c.dead = true
			m.counters.CompareAndDelete(k, v)
		}
		c.mu.Unlock()
		return true
	})
}

// Len reports the counters and reservations held (for tests and metrics).
func (m *Memory) Len() (counters, reservations int) {
	m.counters.Range(func(any, any) bool { counters++; return true })
	m.reservations.Range(func(any, any) bool { reservations++; return true })
	return counters, reservations
}

func addSat(a, b int64) (int64, bool) {
	s := a + b
	if (a >= 0) == (b >= 0) && (s >= 0) != (a >= 0) {
		if a >= 0 {
			return math.MaxInt64, false
		}
		return math.MinInt64, false
	}
	return s, true
}

func subSat(a, b int64) int64 {
	if b == math.MinInt64 {
		s, _ := addSat(a, math.MaxInt64)
		return s
	}
	s, _ := addSat(a, -b)
	return s
}
