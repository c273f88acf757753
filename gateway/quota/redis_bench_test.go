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
	"github.com/llmgw/llmgw/test/testutil"
)

// BenchmarkAdmission measures what quota admission adds to one chat
// request, with the in-process store and with Redis on loopback: the
// requests-per-minute bucket (an id-less Reserve), the token and budget
// reservation, and its Settle — three calls, three round trips on Redis.
// It reports the latency percentiles of the three together (p50-ns,
// p99-ns) and of the reservation and its settlement alone (rs-p50-ns,
// rs-p99-ns) besides ns/op:
//
//	go test ./gateway/quota/ -run '^$' -bench Admission -benchtime 20000x
//
// "parallel" runs 8 requests at a time over 50 keys (contention on the
// store and the connection pool).
func BenchmarkAdmission(b *testing.B) {
	stores := []struct {
		name string
		new  func(b *testing.B) quota.Store
	}{
		{"memory", func(*testing.B) quota.Store { return quota.NewMemory() }},
		{"redis", func(b *testing.B) quota.Store {
			srv := testutil.StartRedis(b, "bench-password")
			s, err := quota.NewRedis(quota.RedisOptions{URL: srv.URL(), Password: srv.Password})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { _ = s.Close() })
			return s
		}},
	}
	for _, st := range stores {
		for _, par := range []int{1, 8} {
			name := st.name + "/sequential"
			if par > 1 {
				name = st.name + "/parallel"
			}
			b.Run(name, func(b *testing.B) { benchAdmission(b, st.new(b), par) })
		}
	}
}

func benchAdmission(b *testing.B, s quota.Store, par int) {
	ctx := context.Background()
	end := time.Now().Add(24 * time.Hour)
	var seq atomic.Int64
	type sample struct{ all, rs time.Duration }
	one := func(lat []sample) []sample {
		n := seq.Add(1)
		key := "k/bench" + strconv.FormatInt(n%50, 10)
		id := "req_" + strconv.FormatInt(n, 10)
		start := time.Now()
		d, err := s.Reserve(ctx, "", []quota.Limit{bucket(key+"/rpm", 1<<40, time.Minute, 1)}, 0, start)
		if err != nil || !d.Allowed {
			b.Errorf("rpm: %+v %v", d, err)
			return lat
		}
		limits := []quota.Limit{bucket(key+"/tpm", 1<<40, time.Minute, 4096), window(key+"/budget/d", 1<<60, end, 5_000_000_000)}
		rs := time.Now()
		if d, err = s.Reserve(ctx, id, limits, 10*time.Minute, rs); err != nil || !d.Allowed {
			b.Errorf("reserve: %+v %v", d, err)
			return lat
		}
		if err := s.Settle(ctx, id, []int64{700, 900_000_000}, time.Now()); err != nil {
			b.Error(err)
			return lat
		}
		now := time.Now()
		return append(lat, sample{now.Sub(start), now.Sub(rs)})
	}
	for range 100 { // warm the connection pool and the script cache
		one(nil)
	}
	b.ResetTimer()
	var mu sync.Mutex
	var all []sample
	if par == 1 {
		all = make([]sample, 0, b.N)
		for range b.N {
			all = one(all)
		}
	} else {
		var wg sync.WaitGroup
		var left atomic.Int64
		left.Store(int64(b.N))
		for range par {
			wg.Go(func() {
				var lat []sample
				for left.Add(-1) >= 0 {
					lat = one(lat)
				}
				mu.Lock()
				all = append(all, lat...)
				mu.Unlock()
			})
		}
		wg.Wait()
	}
	b.StopTimer()
	if len(all) == 0 {
		return
	}
	for _, m := range []struct {
		name string
		of   func(sample) time.Duration
	}{{"", func(s sample) time.Duration { return s.all }}, {"rs-", func(s sample) time.Duration { return s.rs }}} {
		d := make([]time.Duration, len(all))
		for i, s := range all {
			d[i] = m.of(s)
		}
		slices.Sort(d)
		b.ReportMetric(float64(d[len(d)*50/100]), m.name+"p50-ns")
		b.ReportMetric(float64(d[min(len(d)-1, len(d)*99/100)]), m.name+"p99-ns")
	}
}
