package quota

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/bits"
	"sync"
	"sync/atomic"
	"time"
)

// ErrStoreUnavailable is what a fail-closed Failover returns while the
// shared store is unreachable: the gateway answers 503
// quota_store_unavailable rather than admit requests it cannot count.
var ErrStoreUnavailable = errors.New("quota: the shared quota store is unreachable")

// Shared is a store all replicas share (Redis): a Store that can be pinged.
type Shared interface {
	Store
	Ping(ctx context.Context) error
}

// usedReporter is a shared store that remembers windows' use as last seen
// (Redis.Used): a degraded replica subtracts it from a budget's room.
type usedReporter interface {
	Used(counter string) (int64, bool)
}

// FailoverOptions configures a Failover.
type FailoverOptions struct {
	Shared Shared
	// NewLocal makes the store used while Shared is unreachable (default
	// NewMemory); a new one for every outage.
	NewLocal func() Store
	// ReadyReplicas counts the gateway replicas that are ready, this one
	// included (0: not known yet, the divisor stays); nil: Replicas is the
	// divisor. It is asked while degraded (and at the start of an outage),
	// never on the request path.
	ReadyReplicas func(ctx context.Context) int
	// Replicas is the divisor until ReadyReplicas has answered (dividing
	// by more is the safe guess).
	Replicas int
	// FailClosed refuses requests that have limits while Shared is
	// unreachable (ErrStoreUnavailable) instead of counting locally.
	FailClosed bool
	Logger     *slog.Logger
	// Probe is how often Shared is pinged (default 1s), and ProbeTimeout
	// how long a ping may take (default 1s); CountEvery how often ready
	// replicas are counted while degraded (default 5s).
	Probe, ProbeTimeout, CountEvery time.Duration
}

// Failover is the Store of a replica configured with a shared store. While
// the shared store answers, every call goes to it. When a call or the
// background ping fails it turns degraded: it logs that once, and counts
// in a local store where every limit is divided by the number of ready
// replicas, so that N replicas together still admit about the configured
// limit; or, with FailClosed, refuses. It turns back by itself at the first
// ping that succeeds (and logs that once).
//
// Reservations taken on the shared store before an outage are not settled
// while it lasts: their entries expire after their ttl and keep what they
// took (an outage errs on the side of refusing).
type Failover struct {
	o   FailoverOptions
	log *slog.Logger

	degraded atomic.Bool
	divisor  atomic.Int64
	local    atomic.Pointer[localStore]
	// localIDs: reservations taken on a local store → that store.
	localIDs sync.Map

	mu          sync.Mutex // transitions
	since       time.Time
	lastErr     string
	transitions atomic.Int64
	kick        chan struct{} // a transition to degraded: count replicas now
}

type localStore struct{ Store }

// NewFailover returns a Failover; Run must run for it to ever recover.
func NewFailover(o FailoverOptions) *Failover {
	if o.NewLocal == nil {
		o.NewLocal = func() Store { return NewMemory() }
	}
	if o.Probe <= 0 {
		o.Probe = time.Second
	}
	if o.ProbeTimeout <= 0 {
		o.ProbeTimeout = time.Second
	}
	if o.CountEvery <= 0 {
		o.CountEvery = 5 * time.Second
	}
	if o.Replicas < 1 {
		o.Replicas = 1
	}
	f := &Failover{o: o, log: o.Logger, kick: make(chan struct{}, 1)}
	if f.log == nil {
		f.log = slog.Default()
	}
	f.divisor.Store(int64(o.Replicas))
	f.since = time.Now()
	return f
}

// Health is what /health and /metrics say of the store.
type Health struct {
	// Degraded: the shared store is unreachable.
	Degraded bool
	// FailClosed: requests with limits are refused while degraded.
	FailClosed bool
	// Divisor is what each limit is divided by while degraded.
	Divisor int
	// Since is when the current state began; LastError is the error that
	// began the outage (an address and an errno, never a credential).
	Since     time.Time
	LastError string
	// Transitions counts changes of state since the process started.
	Transitions int64
}

// Health reports the current state.
func (f *Failover) Health() Health {
	f.mu.Lock()
	defer f.mu.Unlock()
	h := Health{Degraded: f.degraded.Load(), FailClosed: f.o.FailClosed, Divisor: int(f.divisor.Load()),
		Since: f.since, Transitions: f.transitions.Load()}
	if h.Degraded {
		h.LastError = f.lastErr
	}
	return h
}

// Reserve implements Store.
func (f *Failover) Reserve(ctx context.Context, id string, limits []Limit, ttl time.Duration, now time.Time) (Decision, error) {
	if len(limits) == 0 {
		return Decision{Allowed: true}, nil
	}
	if !f.degraded.Load() {
		d, err := f.o.Shared.Reserve(ctx, id, limits, ttl, now)
		if err == nil || errors.Is(err, errInvalidLimit) || ctx.Err() != nil {
			return d, err
		}
		f.markDegraded(err)
	}
	if f.o.FailClosed {
		return Decision{}, ErrStoreUnavailable
	}
	local := f.localStore()
	d, err := local.Reserve(ctx, id, f.share(limits), ttl, now)
	if err == nil && d.Allowed && id != "" {
		f.localIDs.Store(id, local)
	}
	return d, err
}

// Settle implements Store.
func (f *Failover) Settle(ctx context.Context, id string, actual []int64, now time.Time) error {
	if id == "" {
		return nil
	}
	if v, ok := f.localIDs.LoadAndDelete(id); ok {
		return v.(*localStore).Settle(ctx, id, actual, now)
	}
	if f.degraded.Load() {
		return nil // a shared reservation: it expires after its ttl, keeping what it took
	}
	err := f.o.Shared.Settle(ctx, id, actual, now)
	if err != nil && ctx.Err() == nil {
		f.markDegraded(err)
		return nil
	}
	return err
}

func (f *Failover) localStore() *localStore {
	if l := f.local.Load(); l != nil {
		return l
	}
	l := &localStore{f.o.NewLocal()}
	if f.local.CompareAndSwap(nil, l) {
		return l
	}
	return f.local.Load()
}

// share is limits as one of divisor replicas enforces them: each capacity
// divided (a bucket keeps capacity/period ÷ divisor as its rate, even when
// its capacity had to be rounded up to 1), a window's room less the use
// this replica last saw on the shared store; a tally as it is (it only
// counts, locally). The Decision's States are then the local counters':
// what this replica may still admit on its own.
func (f *Failover) share(limits []Limit) []Limit {
	d := f.divisor.Load()
	used, _ := f.o.Shared.(usedReporter)
	out := make([]Limit, len(limits))
	for i, l := range limits {
		out[i] = l
		switch l.Kind {
		case Bucket:
			if d <= 1 || l.Capacity <= 0 {
				continue
			}
			c := max(l.Capacity/d, 1)
			// Period × c × d / Capacity, in 128 bits.
			hi, lo := bits.Mul64(uint64(l.Period), uint64(c*d))
			if hi < uint64(l.Capacity) {
				if q, _ := bits.Div64(hi, lo, uint64(l.Capacity)); q > 0 && q <= 1<<62 {
					out[i].Period = time.Duration(q)
				}
			}
			out[i].Capacity = c
		case Window:
			room := l.Capacity
			if used != nil {
				if u, ok := used.Used(l.Counter); ok {
					room = max(room-max(u, 0), 0)
				}
			}
			out[i].Capacity = room / max(d, 1)
		}
	}
	return out
}

func (f *Failover) markDegraded(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.degraded.Load() {
		return
	}
	f.local.Store(&localStore{f.o.NewLocal()})
	f.degraded.Store(true)
	f.since = time.Now()
	f.lastErr = err.Error()
	f.transitions.Add(1)
	mode := "counting locally, each limit divided by the ready replicas"
	if f.o.FailClosed {
		mode = "refusing requests with limits (fail closed)"
	}
	f.log.Error("quota store unreachable: degraded, "+mode, "error", f.lastErr, "divisor", f.divisor.Load())
	select {
	case f.kick <- struct{}{}:
	default:
	}
}

func (f *Failover) markHealthy() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.degraded.Load() {
		return
	}
	outage := time.Since(f.since)
	f.degraded.Store(false)
	f.since = time.Now()
	f.lastErr = ""
	f.transitions.Add(1)
	f.log.Info("quota store reachable again: limits shared across replicas", "outage", outage.Round(time.Millisecond).String())
}

// Run pings the shared store every Probe until ctx ends, turning degraded
// or back, and counts ready replicas while degraded.
func (f *Failover) Run(ctx context.Context) {
	probe := time.NewTicker(f.o.Probe)
	defer probe.Stop()
	count := time.NewTicker(f.o.CountEvery)
	defer count.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-probe.C:
			pctx, cancel := context.WithTimeout(ctx, f.o.ProbeTimeout)
			err := f.o.Shared.Ping(pctx)
			cancel()
			switch {
			case ctx.Err() != nil:
				return
			case err != nil:
				f.markDegraded(err)
			default:
				f.markHealthy()
			}
		case <-f.kick:
			f.countReplicas(ctx)
		case <-count.C:
			if f.degraded.Load() {
				f.countReplicas(ctx)
			}
		}
	}
}

func (f *Failover) countReplicas(ctx context.Context) {
	if f.o.ReadyReplicas == nil {
		return // no way to count: the configured replicas stay the divisor
	}
	n := f.o.ReadyReplicas(ctx)
	if ctx.Err() != nil || n < 1 {
		return // not counted (yet): the divisor stays
	}
	if old := f.divisor.Swap(int64(n)); old != int64(n) {
		f.log.Info("quota store degraded: ready replicas counted, limits divided by them", "divisor", n, "was", old)
	}
}

// String is for logs.
func (h Health) String() string {
	if !h.Degraded {
		return "ok"
	}
	return fmt.Sprintf("degraded (÷%d) since %s: %s", h.Divisor, h.Since.Format(time.RFC3339), h.LastError)
}
