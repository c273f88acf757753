package usage

// Measured 2026-11-29 on the shared dev VM: 2 vCPUs (AMD EPYC), database in
// the test's temp dir on ext4 (virtio disk), Go 1.26.8, modernc.org/sqlite
// v1.62.0, while other builds kept the load average at ~20 (so wall-clock
// ns/op is inflated several times; cpu-ns/op is this process's own
// user+system CPU per op, the cost that matters on a dedicated node):
//
//	go test -run='^$' -bench=. -benchtime=3s ./gateway/usage/
//
//	BeginFinish/goroutines=1xGOMAXPROCS    817 µs/op  187 µs cpu   2.0 ops/batch   1 224 rec/s
//	BeginFinish/goroutines=8xGOMAXPROCS    202 µs/op   85 µs cpu   7.6 ops/batch   4 948 rec/s
//	BeginFinish/goroutines=64xGOMAXPROCS   104 µs/op   48 µs cpu  27.4 ops/batch   9 594 rec/s
//	FinishLatency (sequential, idle)       372 µs/op
//	List (50 of 2 500 rows)                2.1 ms/op
//	NewRequestID                           239 ns/op  163 ns cpu  (time.Now alone: ~190 ns here)
//	NewRequestIDParallel (16xGOMAXPROCS)   416 ns/op  182 ns cpu
//
// Reading: under load the group commit amortises each transaction over ~27
// operations, so one writer sustains ~10k records/s on a starved VM, about
// 20k/s per CPU core of headroom (48 µs CPU per record = Begin + Finish);
// a commit's cost is mostly the WAL pwrite of ~4 pages. The ledger is not
// the gateway's bottleneck at thousands of requests per second.

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"
)

func benchLedger(b *testing.B, opts Options) *Ledger {
	b.Helper()
	opts.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	l, err := Open(context.Background(), b.TempDir()+"/usage.db", opts)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = l.Close() })
	return l
}

// BenchmarkBeginFinish is one request's full ledger cost as the server pays
// it: Begin (queued, not awaited) then Finish (awaited until committed), from
// many goroutines at once. ns/op is the ledger's throughput limit per
// request; rec/s is its reciprocal; ops/batch shows the group commit.
//
// finish-journal runs with Options.FinishJournal and the gateway's batch
// delay: Finish returns once its line is written, the rows follow in
// batches. Its CPU includes committing every row (a read syncs before it is
// taken), and lag-µs-p50/p99/max is how long a record was a journal line
// only: the window an OS crash could lose it in (Options.JournalLag).
func BenchmarkBeginFinish(b *testing.B) {
	const hold, delay = 20 * time.Millisecond, 5 * time.Millisecond
	for _, c := range []struct {
		par     int
		hold    time.Duration
		journal bool
		stream  bool // Persist before Finish, as a stream's first byte does
		finish  bool // the finish journal
	}{
		{1, 0, false, false, false}, {8, 0, false, false, false}, {64, 0, false, false, false},
		{1, hold, false, false, false}, {8, hold, false, false, false}, {64, hold, false, false, false},
		{1, hold, true, false, false}, {8, hold, true, false, false},
		{1, hold, false, true, false}, {8, hold, false, true, false}, {1, hold, true, true, false}, {8, hold, true, true, false},
		{1, hold, true, false, true}, {8, hold, true, false, true}, {1, hold, true, true, true}, {8, hold, true, true, true},
	} {
		par := c.par
		name := fmt.Sprintf("goroutines=%dxGOMAXPROCS/hold=%v", par, c.hold)
		if c.journal {
			name += "/journal"
		}
		if c.finish {
			name += "/finish-journal"
		}
		if c.stream {
			name += "/stream"
		}
		b.Run(name, func(b *testing.B) {
			var lags lagSamples
			opts := Options{BeginHold: c.hold, BeginJournal: c.journal}
			if c.finish {
				opts.FinishJournal, opts.BatchDelay, opts.JournalLag = true, delay, lags.add
			}
			l := benchLedger(b, opts)
			ctx := context.Background()
			b.SetParallelism(par)
			b.ReportAllocs()
			b.ResetTimer()
			cpu0 := processCPU()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					id := NewRequestID()
					p := l.Begin(Record{RequestID: id, ClientRequestID: "c", Stream: true, CreatedAt: time.Now()})
					if c.stream {
						if err := l.Persist(ctx, p); err != nil {
							b.Error(err)
							return
						}
						if err := p.Wait(ctx); err != nil {
							b.Error(err)
							return
						}
					}
					r := finalRecord(id, "key-a")
					r.CreatedAt = time.Now()
					if err := l.Finish(ctx, r); err != nil {
						b.Error(err)
						return
					}
				}
			})
			if err := l.sync(ctx); err != nil { // every row committed, inside the timing
				b.Fatal(err)
			}
			b.StopTimer()
			b.ReportMetric(float64(processCPU()-cpu0)/float64(b.N), "cpu-ns/op")
			s := l.Stats()
			if s.Batches > 0 {
				b.ReportMetric(float64(s.Ops)/float64(s.Batches), "ops/batch")
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "rec/s")
			lags.report(b)
		})
	}
}

// lagSamples collects Options.JournalLag's calls (from the writer
// goroutine; read once the benchmark is over).
type lagSamples struct {
	mu sync.Mutex
	d  []time.Duration
}

func (s *lagSamples) add(d time.Duration) {
	s.mu.Lock()
	s.d = append(s.d, d)
	s.mu.Unlock()
}

func (s *lagSamples) report(b *testing.B) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.d) == 0 {
		return
	}
	slices.Sort(s.d)
	at := func(q float64) float64 { return float64(s.d[int(q*float64(len(s.d)-1))].Microseconds()) }
	b.ReportMetric(at(0.5), "lag-µs-p50")
	b.ReportMetric(at(0.99), "lag-µs-p99")
	b.ReportMetric(at(1), "lag-µs-max")
}

// BenchmarkFinishLatency is the latency a single request sees for its
// Finish on an otherwise idle ledger (no group commit to share).
func BenchmarkFinishLatency(b *testing.B) {
	for _, hold := range []time.Duration{0, 20 * time.Millisecond} {
		b.Run(fmt.Sprintf("hold=%v", hold), func(b *testing.B) { benchFinishLatency(b, hold) })
	}
}

func benchFinishLatency(b *testing.B, hold time.Duration) {
	l := benchLedger(b, Options{BeginHold: hold})
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		id := NewRequestID()
		l.Begin(Record{RequestID: id})
		if err := l.Finish(ctx, finalRecord(id, "key-a")); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkList(b *testing.B) {
	l := benchLedger(b, Options{})
	ctx := context.Background()
	for i := range 5000 {
		id := NewRequestID()
		l.Begin(Record{RequestID: id})
		if err := l.Finish(ctx, finalRecord(id, []string{"key-a", "key-b"}[i%2])); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if _, _, _, err := l.List(ctx, "key-a", 50, ""); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkNewRequestID(b *testing.B) {
	b.ReportAllocs()
	cpu0 := processCPU()
	for b.Loop() {
		_ = NewRequestID()
	}
	b.ReportMetric(float64(processCPU()-cpu0)/float64(b.N), "cpu-ns/op")
}

func BenchmarkNewRequestIDParallel(b *testing.B) {
	b.ReportAllocs()
	b.SetParallelism(16)
	cpu0 := processCPU()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			_ = NewRequestID()
		}
	})
	b.ReportMetric(float64(processCPU()-cpu0)/float64(b.N), "cpu-ns/op")
}
