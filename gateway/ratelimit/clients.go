package ratelimit

import (
	"hash/maphash"
	"math"
	"net/netip"
	"sync"
	"time"
)

// DefaultMaxClients bounds a ClientLimiter that was given no cap.
const DefaultMaxClients = 100_000

const clientShards = 64

// ClientLimiter is a set of token buckets, one per client address, all with
// the same rate. Unlike Limiter its keys come from the network, not from the
// configuration, so its memory is bounded: a bucket idle long enough to be
// full again is dropped (a new one would be identical), and when the table
// is at its cap the least recently used bucket of the shard makes room.
//
// IPv6 clients are counted per /64, the block one host usually controls.
type ClientLimiter struct {
	rpm, burst int
	rate       float64       // tokens per second
	full       time.Duration // an empty bucket is full again after this
	perShard   int
	seed       maphash.Seed
	shards     [clientShards]clientShard
}

type clientShard struct {
	mu        sync.Mutex
	m         map[netip.Addr]clientBucket
	lastSweep int64 // unix nanoseconds
}

type clientBucket struct {
	tokens float64
	last   int64 // unix nanoseconds
}

// NewClientLimiter returns a limiter refilling rpm tokens per minute up to
// burst per client; it holds at most maxClients buckets (DefaultMaxClients
// when maxClients ≤ 0). It returns nil when rpm or burst is ≤ 0: no limit.
func NewClientLimiter(rpm, burst, maxClients int) *ClientLimiter {
	if rpm <= 0 || burst <= 0 {
		return nil
	}
	if maxClients <= 0 {
		maxClients = DefaultMaxClients
	}
	l := &ClientLimiter{rpm: rpm, burst: burst, rate: float64(rpm) / 60, seed: maphash.MakeSeed()}
	l.full = time.Duration(float64(burst) / l.rate * float64(time.Second))
	l.perShard = (maxClients + clientShards - 1) / clientShards
	for i := range l.shards {
		l.shards[i].m = make(map[netip.Addr]clientBucket)
	}
	return l
}

// ClientKey is the bucket key of an address: IPv4 (and IPv4-mapped IPv6)
// addresses as themselves, other IPv6 addresses as their /64.
func ClientKey(a netip.Addr) netip.Addr {
	a = a.Unmap().WithZone("")
	if a.Is6() {
		if p, err := a.Prefix(64); err == nil {
			return p.Addr()
		}
	}
	return a
}

// Allow takes one token from the client's bucket. A nil limiter allows
// everything.
func (l *ClientLimiter) Allow(client netip.Addr, now time.Time) Decision {
	if l == nil {
		return Decision{Allowed: true}
	}
	key := ClientKey(client)
	sh := &l.shards[maphash.Comparable(l.seed, key)%clientShards]
	t := now.UnixNano()
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if time.Duration(t-sh.lastSweep) > l.full {
		sh.sweep(t, l.full)
	}
	b, ok := sh.m[key]
	if !ok {
		if len(sh.m) >= l.perShard {
			sh.sweep(t, l.full)
			if len(sh.m) >= l.perShard {
				sh.evictOldest()
			}
		}
		b = clientBucket{tokens: float64(l.burst), last: t}
	}
	if elapsed := time.Duration(t - b.last).Seconds(); elapsed > 0 {
		b.tokens = math.Min(float64(l.burst), b.tokens+elapsed*l.rate)
		b.last = t
	}
	d := Decision{}
	if b.tokens >= 1 {
		b.tokens--
		d = Decision{Allowed: true, Remaining: int(b.tokens)}
	} else {
		d.RetryAfter = time.Duration((1 - b.tokens) / l.rate * float64(time.Second))
	}
	sh.m[key] = b
	return d
}

// Peek says whether the client's bucket has a token now, without taking
// it or creating a bucket: a client without one has a full bucket.
func (l *ClientLimiter) Peek(client netip.Addr, now time.Time) Decision {
	if l == nil {
		return Decision{Allowed: true}
	}
	key := ClientKey(client)
	sh := &l.shards[maphash.Comparable(l.seed, key)%clientShards]
	sh.mu.Lock()
	b, ok := sh.m[key]
	sh.mu.Unlock()
	if !ok {
		return Decision{Allowed: true, Remaining: l.burst}
	}
	tokens := b.tokens
	if elapsed := time.Duration(now.UnixNano() - b.last).Seconds(); elapsed > 0 {
		tokens = math.Min(float64(l.burst), tokens+elapsed*l.rate)
	}
	if tokens >= 1 {
		return Decision{Allowed: true, Remaining: int(tokens)}
	}
	return Decision{RetryAfter: time.Duration((1 - tokens) / l.rate * float64(time.Second))}
}

// Len is the number of buckets held.
func (l *ClientLimiter) Len() int {
	if l == nil {
		return 0
	}
	n := 0
	for i := range l.shards {
		l.shards[i].mu.Lock()
		n += len(l.shards[i].m)
		l.shards[i].mu.Unlock()
	}
	return n
}

// sweep drops the buckets that have refilled completely: forgetting them
// changes no decision. It runs at most about once per refill period per
// shard, and when the shard is full.
func (sh *clientShard) sweep(now int64, full time.Duration) {
	sh.lastSweep = now
	for k, b := range sh.m {
		if time.Duration(now-b.last) >= full {
			delete(sh.m, k)
		}
	}
}

// evictOldest drops the least recently used bucket. That client starts
// again with a full bucket: the price of bounded memory under a flood from
// more addresses than the cap.
func (sh *clientShard) evictOldest() {
	var (
		oldest netip.Addr
		at     int64 = math.MaxInt64
	)
	for k, b := range sh.m {
		if b.last < at {
			oldest, at = k, b.last
		}
	}
	delete(sh.m, oldest)
}
