package main

import (
	"context"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// samples collects one measure's latencies in one round; first only for
// streams.
type samples struct{ total, first []time.Duration }

func (s *samples) add(x sample, stream bool) {
	s.total = append(s.total, x.total)
	if stream {
		s.first = append(s.first, x.first)
	}
}

// addLatency records a round's distributions and, for the plotted phases,
// pools the samples with the other rounds'.
func (b *bench) addLatency(phase string, w Workload, t *target, s *samples) {
	add := func(metric string, d []time.Duration) {
		b.cur.Latency = append(b.cur.Latency, LatencyRow{Phase: phase, Workload: w.String(), Target: t.name, Metric: metric, Dist: distOf(d)})
		if phase == "c1" || strings.HasPrefix(phase, "open") {
			k := curveKey{phase, w.String(), t.name, metric}
			for _, x := range d {
				b.samples[k] = append(b.samples[k], us(x))
			}
		}
	}
	add("total", s.total)
	if w.SSE {
		add("first", s.first)
	}
}

// warmUp sends -warmup sequential requests of every workload to every
// target, so connections exist and code paths are warm before anything is
// measured.
func (b *bench) warmUp(ctx context.Context, e *env) {
	for _, w := range b.cfg.workloads {
		for _, t := range e.targets {
			for range b.cfg.warmup {
				t.sent.Add(1)
				if _, err := do(ctx, t.client, t.eps[w], time.Now()); err != nil {
					b.errLog("warmup", w, t).add(err)
				}
			}
		}
	}
}

// closedC1 sends turns of one request per target, one at a time, each turn
// in a fresh random order: every target sees the same moments of the
// machine's noise, so the difference to direct is the target's own cost.
func (b *bench) closedC1(ctx context.Context, e *env, w Workload) {
	ts := e.targets
	acc := make([]samples, len(ts))
	rng := rand.New(rand.NewPCG(b.cfg.seed, uint64(b.round)))
	order := make([]int, len(ts))
	for i := range order {
		order[i] = i
	}
	for i := 0; i < b.cfg.c1N+b.cfg.c1Warmup && ctx.Err() == nil; i++ {
		rng.Shuffle(len(order), func(a, c int) { order[a], order[c] = order[c], order[a] })
		for _, ti := range order {
			t := ts[ti]
			t.sent.Add(1)
			s, err := do(ctx, t.client, t.eps[w], time.Now())
			if err != nil {
				b.errLog("c1", w, t).add(err)
				continue
			}
			if i >= b.cfg.c1Warmup {
				acc[ti].add(s, w.SSE)
			}
		}
	}
	for i, t := range ts {
		b.addLatency("c1", w, t, &acc[i])
	}
}

// closedN runs -conc workers against each target in turn and reads the CPU
// its process (and the mock, and this client) used meanwhile. The time is
// cut into slices and the targets take turns in an order that rotates every
// slice: on a shared machine whose speed drifts within seconds, one long
// window per target would let a slow stretch fall on one of them alone.
func (b *bench) closedN(ctx context.Context, e *env, w Workload, ts []*target) {
	cfg := b.cfg
	phase := "c" + strconv.Itoa(cfg.conc)
	run := func(t *target, d time.Duration, keep bool) samples {
		per := make([]samples, cfg.conc)
		stop := time.Now().Add(d)
		el := b.errLog("warmup", w, t)
		if keep {
			el = b.errLog(phase, w, t)
		}
		var wg sync.WaitGroup
		for i := range cfg.conc {
			wg.Go(func() {
				for time.Now().Before(stop) && ctx.Err() == nil {
					t.sent.Add(1)
					s, err := do(ctx, t.client, t.eps[w], time.Now())
					if err != nil {
						el.add(err)
						continue
					}
					per[i].add(s, w.SSE)
				}
			})
		}
		wg.Wait()
		var all samples
		for _, p := range per {
			all.total = append(all.total, p.total...)
			all.first = append(all.first, p.first...)
		}
		return all
	}
	for _, t := range ts {
		run(t, cfg.concWarmup, false)
	}
	type acc struct {
		all                     samples
		own, mock, client, wall time.Duration
	}
	accs := make([]acc, len(ts))
	slice := cfg.concDur / time.Duration(cfg.concSlices)
	// Each slice starts with a short unmeasured lead-in: the target's
	// pooled connections and the scheduler settle after the switch.
	lead := min(cfg.concWarmup, slice/4)
	for s := range cfg.concSlices {
		for k := range ts {
			i := (k + s) % len(ts)
			t, a := ts[i], &accs[i]
			run(t, lead, false)
			own, m := t.own(e, w), e.mock(w.Proto).proc
			own0, mock0, self0, start := own.cpu(), m.cpu(), selfCPU(), time.Now()
			got := run(t, slice, true)
			a.wall += time.Since(start)
			a.own += own.cpu() - own0
			a.mock += m.cpu() - mock0
			a.client += selfCPU() - self0
			a.all.total = append(a.all.total, got.total...)
			a.all.first = append(a.all.first, got.first...)
		}
	}
	for i, t := range ts {
		a := &accs[i]
		b.addLatency(phase, w, t, &a.all)
		nerr, _ := b.errLog(phase, w, t).count()
		row := ClosedRow{Workload: w.String(), Target: t.name, Conc: cfg.conc, Requests: len(a.all.total), Errors: nerr, Seconds: a.wall.Seconds()}
		if n := float64(len(a.all.total)); n > 0 {
			row.RPS = n / a.wall.Seconds()
			row.CPUPerReqUS = us(a.own) / n
			row.ClientCPUPerReqUS = us(a.client) / n
			if t.kind != kindDirect {
				row.MockCPUPerReqUS = us(a.mock) / n
			}
		}
		b.cur.Closed = append(b.cur.Closed, row)
	}
}

// openLoop sends requests to one target on a fixed schedule, rate a second,
// whatever its answers do: request i is due at start + i/rate and its
// latency counts from then, not from when it was sent. A target that
// stalls pays for every request queued behind the stall (no coordinated
// omission), as it would with real independent callers.
func (b *bench) openLoop(ctx context.Context, w Workload, t *target, rate float64) {
	if b.cfg.openWarmup > 0 {
		b.schedule(ctx, w, t, rate, b.cfg.openWarmup, false)
	}
	b.schedule(ctx, w, t, rate, b.cfg.openDur, true)
}

func (b *bench) schedule(ctx context.Context, w Workload, t *target, rate float64, dur time.Duration, keep bool) {
	n := int(rate * dur.Seconds())
	interval := time.Duration(float64(time.Second) / rate)
	res := make([]sample, n)
	ok := make([]bool, n)
	lag := make([]time.Duration, n)
	phase := "open" + strconv.Itoa(int(rate))
	el := b.errLog("warmup", w, t)
	if keep {
		el = b.errLog(phase, w, t)
	}
	var inflight, maxInflight atomic.Int64
	var wg sync.WaitGroup
	start := time.Now().Add(20 * time.Millisecond)
	for i := 0; i < n && ctx.Err() == nil; i++ {
		due := start.Add(time.Duration(i) * interval)
		if d := time.Until(due); d > 0 {
			time.Sleep(d)
		}
		t.sent.Add(1)
		wg.Go(func() {
			lag[i] = time.Since(due)
			if v := inflight.Add(1); v > maxInflight.Load() {
				maxInflight.Store(v) // racy max; a close lower bound is enough
			}
			defer inflight.Add(-1)
			s, err := do(ctx, t.client, t.eps[w], due)
			if err != nil {
				el.add(err)
				return
			}
			res[i], ok[i] = s, true
		})
	}
	wg.Wait()
	if !keep {
		return
	}
	var all samples
	for i := range n {
		if ok[i] {
			all.add(res[i], w.SSE)
		}
	}
	b.addLatency(phase, w, t, &all)
	slices.Sort(lag)
	nerr, _ := el.count()
	row := OpenRow{Workload: w.String(), Target: t.name, Rate: rate, Sent: n, Errors: nerr, MaxInflight: int(maxInflight.Load())}
	if n > 0 {
		row.SendLagP99US = us(percentile(lag, 99))
	}
	b.cur.Open = append(b.cur.Open, row)
}
