package quota

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// globalLock is the alternative the memory store avoids: the same store
// behind one mutex, for comparison in BenchmarkMemory.
type globalLock struct {
	mu sync.Mutex
	m  *Memory
}

func (g *globalLock) Reserve(ctx context.Context, id string, ls []Limit, ttl time.Duration, now time.Time) (Decision, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.m.Reserve(ctx, id, ls, ttl, now)
}

func (g *globalLock) Settle(ctx context.Context, id string, actual []int64, now time.Time) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.m.Settle(ctx, id, actual, now)
}

// BenchmarkMemory is one admission's store work per op: the key's rpm
// bucket, then a reservation of key and group tokens and budget, then its
// settlement. "keys" spreads the requests over 1,000 keys in 10 groups,
// "one-key" sends all of them through one key (worst contention).
func BenchmarkMemory(b *testing.B) {
	stores := map[string]func() Store{
		"sharded":    func() Store { return NewMemory() },
		"globallock": func() Store { return &globalLock{m: NewMemory()} },
	}
	for _, name := range []string{"sharded", "globallock"} {
		for _, spread := range []int{1000, 1} {
			label := "keys"
			if spread == 1 {
				label = "one-key"
			}
			b.Run(name+"/"+label, func(b *testing.B) {
				s := stores[name]()
				end := t0.Add(24 * time.Hour)
				var seq atomic.Int64
				b.ReportAllocs()
				b.RunParallel(func(pb *testing.PB) {
					ctx := context.Background()
					actual := []int64{50, 1000, 50, 1000}
					for pb.Next() {
						i := seq.Add(1)
						k := strconv.Itoa(int(i % int64(spread)))
						g := strconv.Itoa(int(i % int64(min(spread, 10))))
						now := t0.Add(time.Duration(i) * time.Microsecond)
						id := fmt.Sprint("r", i)
						if _, err := s.Reserve(ctx, "", []Limit{rpm(k, 1<<30, 1<<30)}, 0, now); err != nil {
							b.Fatal(err)
						}
						ls := []Limit{
							bucket("k/"+k+"/tpm", 1<<40, time.Minute, 100),
							window("k/"+k+"/budget/w", 1<<60, end, 2000),
							bucket("g/"+g+"/tpm", 1<<40, time.Minute, 100),
							window("g/"+g+"/budget/w", 1<<60, end, 2000),
						}
						d, err := s.Reserve(ctx, id, ls, time.Minute, now)
						if err != nil || !d.Allowed {
							b.Fatal(err, d)
						}
						if err := s.Settle(ctx, id, actual, now); err != nil {
							b.Fatal(err)
						}
					}
				})
			})
		}
	}
}

// BenchmarkMemoryRateLimit is the check every chat request makes: one
// request from the key's bucket, nothing remembered.
func BenchmarkMemoryRateLimit(b *testing.B) {
	m := NewMemory()
	l := rpm("k", 1<<30, 1<<30)
	ctx := context.Background()
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if _, err := m.Reserve(ctx, "", []Limit{l}, 0, t0.Add(time.Duration(i))); err != nil {
			b.Fatal(err)
		}
	}
}
