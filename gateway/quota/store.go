// Package quota holds the counters a request must reserve room in before any
// provider is called: a key's (and its group's) requests per minute, tokens
// per minute and money per budget period, and the tallies of their spend
// per day and month that exist whether or not a budget does.
//
// The counters live behind Store so that one implementation can keep them in
// the process (standalone, or degraded when the shared store is down) and
// another can share them between gateway replicas (Redis/Valkey). Every
// Reserve is all or nothing across the limits it names, so two limits can
// never be half-taken by a request that is then refused.
package quota

import (
	"context"
	"time"
)

// Kind says how a counter regains room.
type Kind int

const (
	// Bucket is a token bucket: Capacity units, refilled continuously at
	// Capacity per Period (requests or tokens per minute).
	Bucket Kind = iota + 1
	// Window is a fixed allowance that resets at End (a budget for a UTC
	// day or month). Counter names carry the window (for example
	// "k/<key>/budget/2026-11") so a new window is a new counter.
	Window
	// Tally is a Window that only counts: it takes Amount like a Window
	// and is settled like one, but never refuses (Capacity is ignored).
	// A Tally and a Window of the same Counter are the same counter (the
	// use so far, until End), so a budget configured later in a period
	// sees what was spent in it before: every priced request tallies its
	// key's and group's spend of the day and of the month whether or not
	// a budget exists (limits.go).
	Tally
)

// windowed says whether the kind is kept as a use until End (Window,
// Tally) rather than as a bucket.
func (k Kind) windowed() bool { return k == Window || k == Tally }

// Limit is one counter a request draws from, and how much it draws.
type Limit struct {
	// Counter names the counter; it is unique across keys, groups and
	// windows. It never contains a secret (key ids and group names only).
	Counter string
	Kind    Kind
	// Capacity is the bucket size or the window's allowance, in the
	// counter's unit (requests, tokens, or pico-units of the currency).
	// A Tally has none: its Capacity is ignored.
	Capacity int64
	// Period is the bucket's refill period (Capacity per Period).
	Period time.Duration
	// End is when a Window or Tally resets; counters may be dropped after
	// it.
	End time.Time
	// Amount is what this request reserves.
	Amount int64
}

// Decision is the outcome of Reserve.
type Decision struct {
	Allowed bool
	// Denied is the index in the limits of the first one without room
	// (meaningless when Allowed). It is a Window or a Bucket: a Tally
	// never refuses.
	Denied int
	// RetryAfter is when the denied counter may have room again.
	RetryAfter time.Duration
	// States is each limit's counter after this Reserve, in the limits'
	// order: after the take when Allowed, the counters as they are (none
	// changed) when refused. It is what rate-limit headers report; with a
	// shared store it is the shared counters' state (the script answers
	// with it), with a degraded Failover the local, divided counters'.
	// Empty when Reserve was given no limits.
	States []State
}

// State is one counter as a Reserve left it.
type State struct {
	// Limit is the counter's capacity as this call saw it (a Bucket's or a
	// Window's Capacity; 0 for a Tally, which has none).
	Limit int64
	// Remaining is what is left: a Bucket's whole tokens, a Window's
	// Capacity less its use; never below 0 (an overdrawn counter has 0
	// left); 0 for a Tally.
	Remaining int64
	// Reset is how long until the counter is whole again: for a Bucket
	// until it has refilled to its capacity (0 when full), for a Window or
	// Tally until its End (never below 0).
	Reset time.Duration
	// Used is a Window's or Tally's use so far (above Limit when a Settle
	// overdrew it); 0 for a Bucket.
	Used int64
}

// Store keeps the counters. Implementations are safe for concurrent use.
type Store interface {
	// Reserve takes every limit's Amount or nothing, and remembers the
	// reservation under id (a request id) until Settle, or until ttl has
	// passed, after which the reservation is kept as used (a replica that
	// died without settling must not hand its room back twice). An empty
	// id remembers nothing: the amounts are taken for good and ttl is
	// ignored (a request-per-minute token is never given back, so it needs
	// no Settle and no second round trip).
	//
	// Room: a Bucket has room when its tokens, refilled up to now, are at
	// least Amount; a Window when its use plus Amount is at most Capacity;
	// a Tally always. A counter overdrawn by Settle therefore refuses even
	// an Amount of 0. A counter seen for the first time starts full
	// (Bucket) or unused (Window, Tally). Capacity and Period are taken
	// from every call, so a changed limit applies from that call on
	// (tokens above a lowered Capacity are dropped).
	Reserve(ctx context.Context, id string, limits []Limit, ttl time.Duration, now time.Time) (Decision, error)
	// Settle replaces reservation id's amounts with actual use, one value
	// per limit in Reserve's order: room reserved but not used is given
	// back, use above the reservation is taken (a counter may go below
	// zero and then refuses until it has refilled; a Window may go above
	// its Capacity and then refuses for the rest of its period: the real
	// cost is always charged, even when a provider reported more output
	// than the request's max_tokens). Zeros release the
	// reservation; a nil actual means zeros for every limit (crash recovery
	// knows the ids, not how many limits each reserved). Settling an
	// unknown or already settled id does nothing, so recovery may settle
	// ids that were never reserved.
	Settle(ctx context.Context, id string, actual []int64, now time.Time) error
}
