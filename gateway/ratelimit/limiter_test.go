package ratelimit

import (
	"sync"
	"testing"
	"time"
)

func TestAllowBurstThenRefill(t *testing.T) {
	var l Limiter
	t0 := time.Unix(1000, 0)
	for i := 0; i < 3; i++ {
		if d := l.Allow("a", 60, 3, t0); !d.Allowed {
			t.Fatalf("request %d denied within burst", i)
		}
	}
	d := l.Allow("a", 60, 3, t0)
	if d.Allowed {
		t.Fatal("4th request allowed beyond burst")
	}
	if d.RetryAfter <= 0 || d.RetryAfter > time.Second {
		t.Fatalf("retry after %v, want (0,1s] at 60 rpm", d.RetryAfter)
	}
	if d := l.Allow("a", 60, 3, t0.Add(time.Second)); !d.Allowed {
		t.Fatal("token not refilled after 1s at 60 rpm")
	}
	if d := l.Allow("a", 60, 3, t0.Add(time.Second)); d.Allowed {
		t.Fatal("refilled more than one token in 1s at 60 rpm")
	}
}

func TestKeysAreIndependent(t *testing.T) {
	var l Limiter
	now := time.Unix(1000, 0)
	for i := 0; i < 5; i++ {
		l.Allow("a", 60, 2, now)
	}
	if d := l.Allow("b", 60, 2, now); !d.Allowed {
		t.Fatal("key b denied after key a exhausted its bucket")
	}
}

func TestConfigChangeApplies(t *testing.T) {
	var l Limiter
	now := time.Unix(1000, 0)
	l.Allow("a", 60, 10, now)
	// burst lowered to 1: at most one more request now
	if d := l.Allow("a", 60, 1, now); !d.Allowed {
		t.Fatal("first request after lowering burst denied")
	}
	if d := l.Allow("a", 60, 1, now); d.Allowed {
		t.Fatal("lowered burst not enforced")
	}
}

func TestInvalidConfigDenies(t *testing.T) {
	var l Limiter
	if d := l.Allow("a", 0, 0, time.Now()); d.Allowed {
		t.Fatal("zero rate allowed a request")
	}
}

func TestForget(t *testing.T) {
	var l Limiter
	now := time.Unix(1000, 0)
	l.Allow("a", 60, 1, now)
	l.Forget(func(string) bool { return false })
	if d := l.Allow("a", 60, 1, now); !d.Allowed {
		t.Fatal("forgotten key did not start with a full bucket")
	}
}

func TestConcurrentExactBudget(t *testing.T) {
	var l Limiter
	now := time.Unix(1000, 0)
	var wg sync.WaitGroup
	var mu sync.Mutex
	allowed := 0
	for i := 0; i < 100; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if l.Allow("a", 1, 25, now).Allowed {
				mu.Lock()
				allowed++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if allowed != 25 {
		t.Fatalf("allowed %d of 100 concurrent requests, want exactly the burst 25", allowed)
	}
}

func BenchmarkAllowParallel(b *testing.B) {
	var l Limiter
	now := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			l.Allow("a", 1<<30, 1<<30, now)
		}
	})
}
