package main

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

type bench struct {
	cfg     *config
	st      *stack
	client  *http.Client
	ctx     context.Context
	summary []string // one line per paired phase, printed at the end
}

func levelOf(s string) slog.Level {
	if s == "info" {
		return slog.LevelInfo
	}
	return slog.LevelWarn
}

func (b *bench) targets() (direct, gateway *target) {
	return &target{name: "direct", url: b.st.mockURL + "/v1/chat/completions", auth: "Bearer " + b.st.upstreamKey},
		&target{name: "gateway", url: b.st.gwURL + "/v1/chat/completions", auth: "Bearer " + b.st.gatewayKey}
}

func modeName(stream bool) string {
	if stream {
		return "SSE"
	}
	return "JSON"
}

// processCPU is this process's user+system CPU time.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// errs keeps the error count and the first error of a phase.
type errs struct {
	mu    sync.Mutex
	n     int
	first error
}

func (e *errs) add(err error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.n++
	if e.first == nil {
		e.first = err
	}
}

func (e *errs) check(total int) error {
	if e.n == 0 {
		return nil
	}
	// A failed request has no latency worth reporting; a few (a connection
	// reset under extreme load) are tolerable, more mean the numbers lie.
	if e.n*1000 > total {
		return fmt.Errorf("%d of %d requests failed; first: %v", e.n, total, e.first)
	}
	fmt.Printf("\n(%d of %d requests failed and are excluded; first: %v)\n", e.n, total, e.first)
	return nil
}

// paired runs the interleaved latency phase: each worker sends a direct and
// a gateway request back to back, in random order, n pairs in all.
func (b *bench) paired(stream bool, c int, lvl string) error {
	direct, gateway := b.targets()
	body := jsonBody(stream)
	total := int64(b.cfg.warmup + b.cfg.n)
	var next atomic.Int64
	var fails errs
	type result struct{ d, g []sample }
	results := make([]result, c)
	load0 := loadavg()
	start := time.Now()
	deadline := start.Add(b.cfg.maxPhase)
	cpu0 := processCPU()
	var wg sync.WaitGroup
	for w := range c {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cl := newCaller(b.client, body, stream)
			rng := rand.New(rand.NewPCG(b.cfg.seed, uint64(w)))
			res := &results[w]
			for b.ctx.Err() == nil && time.Now().Before(deadline) {
				i := next.Add(1)
				if i > total {
					return
				}
				order := [2]*target{direct, gateway}
				if rng.IntN(2) == 1 {
					order = [2]*target{gateway, direct}
				}
				if b.cfg.gatewayOnly {
					order[0], order[1] = gateway, nil
				}
				var ds, gs sample
				ok := true
				for _, t := range order {
					if t == nil {
						continue
					}
					s, err := cl.do(t)
					if err != nil {
						fails.add(err)
						ok = false
						continue
					}
					if t == direct {
						ds = s
					} else {
						gs = s
					}
				}
				if ok && i > int64(b.cfg.warmup) {
					res.d = append(res.d, ds)
					res.g = append(res.g, gs)
				}
			}
		}()
	}
	wg.Wait()
	wall := time.Since(start)
	cpu := processCPU() - cpu0
	var d, g []sample
	for _, r := range results {
		d = append(d, r.d...)
		g = append(g, r.g...)
	}
	sent := int(min(next.Load(), total))
	fmt.Printf("\n## %s, concurrency %d, gateway log level %s\n\n", modeName(stream), c, lvl)
	fmt.Printf("%d measured pairs in %.1fs (%d sent incl. warm-up); load average %s → %s; process CPU %.0f µs per pair\n",
		len(d), wall.Seconds(), sent, load0, loadavg(), us(cpu)/float64(max(sent, 1)))
	if len(d) < b.cfg.n {
		fmt.Printf("(stopped early: -max-phase %s reached or interrupted)\n", b.cfg.maxPhase)
	}
	if err := fails.check(2 * sent); err != nil {
		return err
	}
	if b.cfg.gatewayOnly || len(d) == 0 {
		return nil
	}
	var p50, p99 time.Duration
	if stream {
		p50, p99 = printPaired("time to first content byte", d, g, func(s sample) time.Duration { return s.first })
		printPaired("time to end of stream", d, g, func(s sample) time.Duration { return s.total })
	} else {
		p50, p99 = printPaired("time to complete response", d, g, func(s sample) time.Duration { return s.total })
	}
	verdict := "meets"
	if p99 >= time.Millisecond {
		verdict = "misses"
	}
	b.summary = append(b.summary, fmt.Sprintf("| %s | %d | %s | %.0f | %.0f | %s |", modeName(stream), c, lvl, us(p50), us(p99), verdict))
	return nil
}

var pcts = []float64{0.50, 0.95, 0.99}

// printPaired prints one table and returns the added p50 and p99.
func printPaired(what string, d, g []sample, f func(sample) time.Duration) (added50, added99 time.Duration) {
	dv, gv, diff := make([]time.Duration, len(d)), make([]time.Duration, len(g)), make([]time.Duration, len(d))
	for i := range d {
		dv[i], gv[i] = f(d[i]), f(g[i])
		diff[i] = gv[i] - dv[i]
	}
	slices.Sort(dv)
	slices.Sort(gv)
	slices.Sort(diff)
	fmt.Printf("\n%s (µs):\n\n", what)
	fmt.Printf("| path | p50 | p95 | p99 | max | mean |\n|---|---:|---:|---:|---:|---:|\n")
	row := func(name string, v []time.Duration) {
		fmt.Printf("| %s |", name)
		for _, p := range pcts {
			fmt.Printf(" %.0f |", us(pct(v, p)))
		}
		fmt.Printf(" %.0f | %.0f |\n", us(v[len(v)-1]), us(mean(v)))
	}
	row("direct", dv)
	row("gateway", gv)
	fmt.Printf("| **added** (gateway − direct) |")
	for _, p := range pcts {
		fmt.Printf(" **%.0f** |", us(pct(gv, p)-pct(dv, p)))
	}
	fmt.Printf(" %.0f | %.0f |\n", us(gv[len(gv)-1]-dv[len(dv)-1]), us(mean(gv)-mean(dv)))
	fmt.Printf("| paired Δ per pair |")
	for _, p := range pcts {
		fmt.Printf(" %.0f |", us(pct(diff, p)))
	}
	fmt.Printf(" %.0f | %.0f |\n", us(diff[len(diff)-1]), us(mean(diff)))
	return pct(gv, 0.50) - pct(dv, 0.50), pct(gv, 0.99) - pct(dv, 0.99)
}

// cpuPerRequest measures this process's CPU per request for each path alone,
// sequentially, in ABBA blocks so that drift (GC, ledger growth, neighbours)
// falls evenly on both. The gateway path's CPU includes the mock's and the
// client's, so the difference is what the gateway itself burns.
func (b *bench) cpuPerRequest(stream bool, lvl string) error {
	direct, gateway := b.targets()
	cl := newCaller(b.client, jsonBody(stream), stream)
	const blocks = 8
	per := max(b.cfg.cpuN/blocks, 1)
	var cpu, wall [2]time.Duration
	var count [2]int
	var fails errs
	load0 := loadavg()
	deadline := time.Now().Add(b.cfg.maxPhase)
	for blk := 0; blk < 2*blocks && time.Now().Before(deadline) && b.ctx.Err() == nil; blk++ {
		which := blk % 2 // ABBA: 0 1 1 0 0 1 1 0 ...
		if (blk/2)%2 == 1 {
			which = 1 - which
		}
		t := []*target{direct, gateway}[which]
		c0, w0 := processCPU(), time.Now()
		for range per {
			if _, err := cl.do(t); err != nil {
				fails.add(err)
				continue
			}
			count[which]++
		}
		cpu[which] += processCPU() - c0
		wall[which] += time.Since(w0)
	}
	if err := fails.check(count[0] + count[1] + fails.n); err != nil {
		return err
	}
	if count[0] == 0 || count[1] == 0 {
		return nil
	}
	dc, gc := us(cpu[0])/float64(count[0]), us(cpu[1])/float64(count[1])
	fmt.Printf("\n## %s, CPU per request (concurrency 1, %d requests per path in ABBA blocks), log level %s\n\n", modeName(stream), count[0], lvl)
	fmt.Printf("load average %s → %s\n\n", load0, loadavg())
	fmt.Printf("| path | process CPU µs/request | wall µs/request |\n|---|---:|---:|\n")
	fmt.Printf("| direct | %.0f | %.0f |\n", dc, us(wall[0])/float64(count[0]))
	fmt.Printf("| gateway | %.0f | %.0f |\n", gc, us(wall[1])/float64(count[1]))
	fmt.Printf("| **added** | **%.0f** | %.0f |\n", gc-dc, us(wall[1])/float64(count[1])-us(wall[0])/float64(count[0]))
	return nil
}

// throughput hammers each path alone with tputC workers, alternating time
// blocks (ABBA) between the paths.
func (b *bench) throughput(stream bool, lvl string) error {
	direct, gateway := b.targets()
	body := jsonBody(stream)
	const blocks = 4
	blockDur := b.cfg.tputDur / blocks
	var lat [2][]time.Duration
	var cpu, wall [2]time.Duration
	var count [2]int
	var fails errs
	load0 := loadavg()
	for blk := 0; blk < 2*blocks && b.ctx.Err() == nil; blk++ {
		which := blk % 2
		if (blk/2)%2 == 1 {
			which = 1 - which
		}
		t := []*target{direct, gateway}[which]
		var mu sync.Mutex
		var wg sync.WaitGroup
		c0, w0 := processCPU(), time.Now()
		end := w0.Add(blockDur)
		for range b.cfg.tputC {
			wg.Add(1)
			go func() {
				defer wg.Done()
				cl := newCaller(b.client, body, stream)
				var mine []time.Duration
				for time.Now().Before(end) && b.ctx.Err() == nil {
					s, err := cl.do(t)
					if err != nil {
						fails.add(err)
						continue
					}
					mine = append(mine, s.total)
				}
				mu.Lock()
				lat[which] = append(lat[which], mine...)
				mu.Unlock()
			}()
		}
		wg.Wait()
		cpu[which] += processCPU() - c0
		wall[which] += time.Since(w0)
	}
	count[0], count[1] = len(lat[0]), len(lat[1])
	if err := fails.check(count[0] + count[1] + fails.n); err != nil {
		return err
	}
	if count[0] == 0 || count[1] == 0 {
		return nil
	}
	fmt.Printf("\n## %s, throughput at concurrency %d (%s per path in ABBA blocks), log level %s\n\n", modeName(stream), b.cfg.tputC, b.cfg.tputDur, lvl)
	fmt.Printf("load average %s → %s\n\n", load0, loadavg())
	fmt.Printf("| path | requests/s | process CPU µs/request | p50 µs | p99 µs |\n|---|---:|---:|---:|---:|\n")
	for i, name := range []string{"direct", "gateway"} {
		slices.Sort(lat[i])
		fmt.Printf("| %s | %.0f | %.0f | %.0f | %.0f |\n", name, float64(count[i])/wall[i].Seconds(),
			us(cpu[i])/float64(count[i]), us(pct(lat[i], 0.50)), us(pct(lat[i], 0.99)))
	}
	return nil
}

// pct is the nearest-rank percentile of sorted v.
func pct(v []time.Duration, p float64) time.Duration {
	if len(v) == 0 {
		return 0
	}
	i := int(float64(len(v))*p+0.999999) - 1
	return v[min(max(i, 0), len(v)-1)]
}

func mean(v []time.Duration) time.Duration {
	var s time.Duration
	for _, x := range v {
		s += x
	}
	return s / time.Duration(max(len(v), 1))
}

func us(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }
