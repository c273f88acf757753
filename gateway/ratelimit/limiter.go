// Package ratelimit holds the token buckets that stay with one gateway
// replica: the per-client-address limit before authentication and the
// per-key bucket of the read endpoints. A key's chat limits (requests and
// tokens per minute, budgets) are in gateway/quota, which can share them
// between replicas.
//
// Buckets are found through a sync.Map and each has its own mutex, so key A's
// requests never wait on key B's (no global lock on the hot path).
package ratelimit

import (
	"math"
	"sync"
	"time"
)

// Limiter is a set of token buckets, one per key id.
type Limiter struct {
	buckets sync.Map // key id → *bucket
}

type bucket struct {
	mu     sync.Mutex
	tokens float64
	last   time.Time
	rpm    int
	burst  int
}

// Decision is the outcome of one Allow call.
type Decision struct {
	Allowed bool
	// RetryAfter is how long until one token is available (zero when allowed).
	RetryAfter time.Duration
	// Remaining is the number of whole tokens left after this decision.
	Remaining int
}

// Allow takes one token from key's bucket, refilled at rpm per minute up to
// burst. A changed rpm/burst (hot-loaded config) applies from this call on,
// keeping the tokens already earned but never more than the new burst.
func (l *Limiter) Allow(key string, rpm, burst int, now time.Time) Decision {
	if rpm <= 0 || burst <= 0 {
		return Decision{Allowed: false, RetryAfter: time.Minute}
	}
	v, ok := l.buckets.Load(key)
	if !ok {
		v, _ = l.buckets.LoadOrStore(key, &bucket{tokens: float64(burst), last: now, rpm: rpm, burst: burst})
	}
	b := v.(*bucket)
	b.mu.Lock()
	defer b.mu.Unlock()
	b.rpm, b.burst = rpm, burst
	rate := float64(rpm) / 60 // tokens per second
	if elapsed := now.Sub(b.last).Seconds(); elapsed > 0 {
		b.tokens = math.Min(float64(burst), b.tokens+elapsed*rate)
		b.last = now
	}
	if b.tokens > float64(burst) {
		b.tokens = float64(burst)
	}
	if b.tokens >= 1 {
		b.tokens--
		return Decision{Allowed: true, Remaining: int(b.tokens)}
	}
	wait := time.Duration((1 - b.tokens) / rate * float64(time.Second))
	return Decision{RetryAfter: wait}
}

// Forget drops buckets of keys that are no longer configured, so a removed
// and later re-added key starts with a full bucket and memory stays bounded.
func (l *Limiter) Forget(keep func(key string) bool) {
	l.buckets.Range(func(k, _ any) bool {
		if !keep(k.(string)) {
			l.buckets.Delete(k)
		}
		return true
	})
}
