package usage

// Run with, for example:
//
//	go test -run='^$' -bench=BeginFinish -benchtime=4000x ./gateway/usage/
//
// cpu-µs/rec is this process's own user+system CPU per record (Begin and
// Finish), which a loaded shared machine inflates far less than wall time.

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
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
// it, conc requests at a time: Begin when the request is admitted, a
// request lasting dur (a model call), Finish before the answer's last
// byte. The rows of every record are committed inside the timing (a read
// syncs at the end). tx/rec shows the batching: transactions per record.
func BenchmarkBeginFinish(b *testing.B) {
	for _, conc := range []int{1, 8, 64} {
		for _, dur := range []time.Duration{0, 100 * time.Millisecond} {
			b.Run(fmt.Sprintf("conc=%d/dur=%v", conc, dur), func(b *testing.B) {
				benchBeginFinish(b, conc, dur, false)
			})
		}
	}
}

// BenchmarkBeginFinishSessions is BenchmarkBeginFinish with every request
// in an agent session, one session per concurrent caller (an agent sends
// its requests one after another): every row also enters the session
// index.
func BenchmarkBeginFinishSessions(b *testing.B) {
	for _, conc := range []int{1, 8, 64} {
		for _, dur := range []time.Duration{0, 100 * time.Millisecond} {
			b.Run(fmt.Sprintf("conc=%d/dur=%v", conc, dur), func(b *testing.B) {
				benchBeginFinish(b, conc, dur, true)
			})
		}
	}
}

func benchBeginFinish(b *testing.B, conc int, dur time.Duration, sessions bool) {
	l := benchLedger(b, Options{})
	ctx := context.Background()
	var n atomic.Int64
	var wg sync.WaitGroup
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := processCPU()
	for w := range conc {
		session := ""
		if sessions {
			session = fmt.Sprintf("0f9c2d1e-5a6b-4c3d-8e7f-%012d", w)
		}
		wg.Go(func() {
			for n.Add(1) <= int64(b.N) {
				id := NewRequestID()
				if err := l.Begin(Record{RequestID: id, ClientRequestID: "c", Endpoint: EndpointChat, Session: session, CreatedAt: time.Now()}); err != nil {
					b.Error(err)
				}
				if dur > 0 {
					time.Sleep(dur)
				}
				r := finalRecord(id, "key-a")
				r.Session = session
				r.CreatedAt = time.Now()
				if err := l.Finish(ctx, r); err != nil {
					b.Error(err)
				}
			}
		})
	}
	wg.Wait()
	if err := l.sync(ctx); err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	b.ReportMetric(float64((processCPU()-cpu0).Microseconds())/float64(b.N), "cpu-µs/rec")
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "rec/s")
	b.ReportMetric(float64(l.Stats().Batches)/float64(b.N), "tx/rec")
}

// BenchmarkFinishLatency is the time one request spends in the ledger,
// Begin and Finish, on an otherwise idle ledger.
func BenchmarkFinishLatency(b *testing.B) {
	l := benchLedger(b, Options{})
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		id := NewRequestID()
		if err := l.Begin(Record{RequestID: id}); err != nil {
			b.Fatal(err)
		}
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
