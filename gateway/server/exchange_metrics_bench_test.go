package server

import (
	"log/slog"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/llmgw/llmgw/api/snapshot"
)

// The per-request cost of the histograms: everything a request adds for
// them, clock reads included (monotonic only; JSON: two around the body
// read and one at the end; SSE: two around the body read and two at the
// commit point).
//
//	go test -run='^$' -bench=Observe -benchmem ./gateway/server/
//
// cpu-ns/op is the process's user+system CPU per iteration (getrusage), which
// a busy machine inflates far less than ns/op, the wall time.

func benchExchange(b *testing.B) *exchange {
	b.Helper()
	s := &Server{log: slog.New(slog.DiscardHandler), metrics: NewMetrics(prometheus.NewRegistry()), now: time.Now}
	// A realistic cache: many pairs, the measured one among them.
	for i := range 200 {
		s.metrics.routeSeries("chat", "alias-"+string(rune('a'+i%26))+string(rune('a'+i/26)), "provider")
	}
	x := &exchange{s: s, start: time.Now(), alias: &snapshot.Alias{Name: "chat-alpha"}, ing: &chatIngress,
		st: &state{protocols: map[string]string{"alpha": "openai"}}}
	x.rec.Provider, x.rec.Status, x.rec.InputTokens, x.rec.OutputTokens = "alpha", statusSuccess, 21, 240
	return x
}

// cpuTime is the process's user+system CPU so far.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// reportCPU adds cpu-ns/op from start (a cpuTime) to the benchmark's result.
func reportCPU(b *testing.B, start time.Duration) {
	b.ReportMetric(float64(cpuTime(b)-start)/float64(b.N), "cpu-ns/op")
}

func BenchmarkObserveJSON(b *testing.B) {
	x := benchExchange(b)
	b.ReportAllocs()
	defer reportCPU(b, cpuTime(b))
	for b.Loop() {
		x.times = exchangeTimes{upstream: 300 * time.Microsecond}
		t0 := x.elapsed()
		x.times.clientBody = x.elapsed() - t0
		x.observeEnd()
	}
}

func BenchmarkObserveSSE(b *testing.B) {
	x := benchExchange(b)
	x.rec.Stream = true
	rl := &sseRelay{x: x, sa: &streamAttempt{route: snapshot.Route{Provider: "alpha"}}}
	rl.sa.said = true
	b.ReportAllocs()
	defer reportCPU(b, cpuTime(b))
	for b.Loop() {
		x.times = exchangeTimes{attemptStart: x.start}
		t0 := x.elapsed()
		x.times.clientBody = x.elapsed() - t0
		rl.providerTime = x.elapsed() - x.times.attemptStart.Sub(x.start)
		x.observeCommit(rl)
		x.observeFirstWrite(rl)
		x.observeEnd()
	}
}

// BenchmarkObserveJSONParallel is the JSON path from every P at once: the
// cache read takes no lock; the histograms' atomics are what is shared.
func BenchmarkObserveJSONParallel(b *testing.B) {
	x := benchExchange(b)
	b.ReportAllocs()
	defer reportCPU(b, cpuTime(b))
	b.RunParallel(func(pb *testing.PB) {
		y := *x
		for pb.Next() {
			y.times = exchangeTimes{upstream: 300 * time.Microsecond}
			t0 := y.elapsed()
			y.times.clientBody = y.elapsed() - t0
			y.observeEnd()
		}
	})
}

// BenchmarkObserveJSONWithLabelValues is the same observations resolved with
// WithLabelValues each time, for comparison with the cached children.
func BenchmarkObserveJSONWithLabelValues(b *testing.B) {
	x := benchExchange(b)
	m := x.s.metrics
	b.ReportAllocs()
	defer reportCPU(b, cpuTime(b))
	for b.Loop() {
		t0 := x.elapsed()
		body := x.elapsed() - t0
		m.added.WithLabelValues(x.ing.endpoint, x.alias.Name, x.rec.Provider, "false").Observe((x.elapsed() - body).Seconds())
		m.tokens.WithLabelValues(x.ing.endpoint, x.alias.Name, x.rec.Provider, "input").Observe(float64(x.rec.InputTokens))
		m.tokens.WithLabelValues(x.ing.endpoint, x.alias.Name, x.rec.Provider, "output").Observe(float64(x.rec.OutputTokens))
	}
}

// Each pair is resolved once and keeps its children; pairs never share.
// (That observations through them reach the scrape is
// TestHistogramsPerAliasAndProvider's.)
func TestRouteSeriesResolvedOncePerPair(t *testing.T) {
	m := NewMetrics(prometheus.NewRegistry())
	a := m.routeSeries("chat", "chat", "alpha")
	if b := m.routeSeries("chat", "chat", "alpha"); a != b {
		t.Fatal("a pair resolved twice got two sets of children")
	}
	if m.routeSeries("chat", "chat", "beta") == a || m.routeSeries("chat", "other", "alpha") == a || m.routeSeries("chat", "chat", "alpha") != a {
		t.Fatal("different pairs share children, or a pair lost its own")
	}
}
