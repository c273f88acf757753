package ratelimit

import (
	"hash/maphash"
	"net/netip"
	"testing"
	"time"
)

func TestClientLimiterBurstRefillAndIndependence(t *testing.T) {
	l := NewClientLimiter(60, 3, 0)
	a, b := netip.MustParseAddr("192.0.2.1"), netip.MustParseAddr("192.0.2.2")
	t0 := time.Unix(1000, 0)
	for i := 0; i < 3; i++ {
		if !l.Allow(a, t0).Allowed {
			t.Fatalf("request %d denied within burst", i)
		}
	}
	d := l.Allow(a, t0)
	if d.Allowed || d.RetryAfter <= 0 || d.RetryAfter > time.Second {
		t.Fatalf("beyond burst: %+v, want denied with retry in (0,1s]", d)
	}
	if !l.Allow(b, t0).Allowed {
		t.Fatal("another address denied")
	}
	if !l.Allow(a, t0.Add(time.Second)).Allowed {
		t.Fatal("no token refilled after 1s at 60 rpm")
	}
}

func TestClientLimiterDisabled(t *testing.T) {
	if l := NewClientLimiter(0, 10, 0); l != nil {
		t.Fatal("rpm 0 built a limiter")
	}
	var l *ClientLimiter
	if !l.Allow(netip.MustParseAddr("192.0.2.1"), time.Now()).Allowed {
		t.Fatal("a nil limiter denied")
	}
}

func TestClientLimiterIPv6PerSlash64(t *testing.T) {
	l := NewClientLimiter(1, 2, 0)
	now := time.Unix(1000, 0)
	l.Allow(netip.MustParseAddr("2001:db8:1:2::1"), now)
	l.Allow(netip.MustParseAddr("2001:db8:1:2::ffff"), now)
	if l.Allow(netip.MustParseAddr("2001:db8:1:2:abcd::9"), now).Allowed {
		t.Fatal("a third address of the same /64 got its own bucket")
	}
	if !l.Allow(netip.MustParseAddr("2001:db8:1:3::1"), now).Allowed {
		t.Fatal("another /64 denied")
	}
}

func TestClientLimiterMemoryIsBounded(t *testing.T) {
	const max = 2 * clientShards
	l := NewClientLimiter(60, 5, max)
	now := time.Unix(1000, 0)
	addr := func(i int) netip.Addr { return netip.AddrFrom4([4]byte{10, byte(i >> 16), byte(i >> 8), byte(i)}) }
	for i := 0; i < 20*max; i++ {
		l.Allow(addr(i), now)
		if n := l.Len(); n > max {
			t.Fatalf("%d buckets after %d addresses, cap %d", n, i+1, max)
		}
	}
	// Idle buckets are full again after burst/rate = 5 s: the next request
	// to a shard sweeps them away.
	later := now.Add(6 * time.Second)
	touched := map[uint64]bool{}
	for i := 0; len(touched) < clientShards; i++ {
		a := netip.AddrFrom4([4]byte{192, 168, byte(i >> 8), byte(i)})
		if sh := maphash.Comparable(l.seed, a) % clientShards; !touched[sh] {
			touched[sh] = true
			l.Allow(a, later)
		}
	}
	if n := l.Len(); n > clientShards {
		t.Fatalf("%d buckets left after every one went idle, want ≤ one per shard", n)
	}
	// A busy client keeps its (empty) bucket while it is recent.
	c := netip.MustParseAddr("192.0.2.9")
	for i := 0; i < 5; i++ {
		l.Allow(c, later)
	}
	if l.Allow(c, later).Allowed {
		t.Fatal("exhausted client allowed")
	}
}

// Peek never takes a token nor creates a bucket; it sees what Allow took.
func TestClientLimiterPeek(t *testing.T) {
	l := NewClientLimiter(60, 2, 0)
	a := netip.MustParseAddr("192.0.2.9")
	t0 := time.Unix(1000, 0)
	for i := range 5 {
		if d := l.Peek(a, t0); !d.Allowed || d.Remaining != 2 {
			t.Fatalf("peek %d on an unused address: %+v", i, d)
		}
	}
	if l.Len() != 0 {
		t.Fatalf("peek created %d buckets", l.Len())
	}
	l.Allow(a, t0)
	l.Allow(a, t0)
	if d := l.Peek(a, t0); d.Allowed || d.RetryAfter <= 0 || d.RetryAfter > time.Second {
		t.Fatalf("peek on an empty bucket: %+v", d)
	}
	if d := l.Peek(a, t0.Add(time.Second)); !d.Allowed || d.Remaining != 1 {
		t.Fatalf("peek after a second's refill: %+v", d)
	}
	var none *ClientLimiter
	if !none.Peek(a, t0).Allowed {
		t.Fatal("a nil limiter's peek denied")
	}
}
