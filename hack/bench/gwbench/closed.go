package main

import (
	"context"
	"math/rand/v2"
	"sync"
	"time"
)

// samples collects one measure's latencies of one round; first only for
// streams.
type samples struct {
	total, first []time.Duration
}

func (s *samples) add(x sample, stream bool) {
	s.total = append(s.total, x.total)
	if stream {
		s.first = append(s.first, x.first)
	}
}

// warmUp sends n sequential requests of every workload to every target, so
// connections exist and code paths are warm before anything is measured.
func (b *bench) warmUp(ctx context.Context, n int) {
	for _, w := range b.cfg.workloads {
		for _, t := range b.env.targets {
			for range n {
				t.sent.Add(1)
				if _, err := do(ctx, t.client, t.eps[w], time.Now()); err != nil {
					b.errs("warmup", w, t).add(err)
				}
			}
		}
	}
}

// closedC1 sends n rounds of one request per target, one at a time, each
// round in a fresh random order: every target sees the same moments of the
// machine's noise, so the difference to direct is the target's own cost.
func (b *bench) closedC1(ctx context.Context, w Workload, n int) {
	ts := b.env.targets
	acc := make([]samples, len(ts))
	rng := rand.New(rand.NewPCG(b.cfg.seed, uint64(b.round)))
	order := make([]int, len(ts))
	for i := range order {
		order[i] = i
	}
	for i := 0; i < n+b.cfg.c1Warmup && ctx.Err() == nil; i++ {
		rng.Shuffle(len(order), func(a, c int) { order[a], order[c] = order[c], order[a] })
		for _, ti := range order {
			t := ts[ti]
			t.sent.Add(1)
			s, err := do(ctx, t.client, t.eps[w], time.Now())
			if err != nil {
				b.errs("c1", w, t).add(err)
				continue
			}
			if i >= b.cfg.c1Warmup {
				acc[ti].add(s, w.SSE)
			}
		}
	}
	for i, t := range ts {
		b.addLatency("c1", w, t, &acc[i])
		n, samples := b.errs("c1", w, t).count()
		b.cur.Closed = append(b.cur.Closed, ClosedRow{Workload: w.String(), Target: t.spec.Name, Conc: 1,
			Requests: len(acc[i].total) + n, Errors: n, ErrorSamples: samples})
	}
}

// closedN runs conc workers against one target for dur and reads the CPU
// its process (and the mock, and this client) used meanwhile.
func (b *bench) closedN(ctx context.Context, w Workload, t *target, conc int, dur time.Duration) {
	ep := t.eps[w]
	run := func(d time.Duration, keep bool) []samples {
		out := make([]samples, conc)
		stop := time.Now().Add(d)
		var wg sync.WaitGroup
		for i := range conc {
			wg.Go(func() {
				for time.Now().Before(stop) && ctx.Err() == nil {
					t.sent.Add(1)
					s, err := do(ctx, t.client, ep, time.Now())
					if err != nil {
						if keep {
							b.errs("c"+itoa(conc), w, t).add(err)
						} else {
							b.errs("warmup", w, t).add(err)
						}
						continue
					}
					if keep {
						out[i].add(s, w.SSE)
					}
				}
			})
		}
		wg.Wait()
		return out
	}
	run(b.cfg.concWarmup, false)
	own, mock := t.own(b.env, w), b.env.mock(w.Proto)
	cpu0, mock0, side0, self0 := cpuOf(own), cpuOf(mock), sidecarCPU(t), selfCPU()
	start := time.Now()
	per := run(dur, true)
	elapsed := time.Since(start)
	cpu1, mock1, side1, self1 := cpuOf(own), cpuOf(mock), sidecarCPU(t), selfCPU()

	var all samples
	for _, p := range per {
		all.total = append(all.total, p.total...)
		all.first = append(all.first, p.first...)
	}
	phase := "c" + itoa(conc)
	b.addLatency(phase, w, t, &all)
	nerr, errSamples := b.errs(phase, w, t).count()
	row := ClosedRow{Workload: w.String(), Target: t.spec.Name, Conc: conc, Requests: len(all.total) + nerr, Errors: nerr,
		Seconds: elapsed.Seconds(), ErrorSamples: errSamples}
	if n := len(all.total); n > 0 {
		perReq := func(d time.Duration) float64 { return us(d) / float64(n) }
		row.RPS = float64(n) / elapsed.Seconds()
		row.CPUPerReqUS = perReq(cpu1 - cpu0)
		row.ClientCPUPerReqUS = perReq(self1 - self0)
		if own != mock {
			row.MockCPUPerReqUS = perReq(mock1 - mock0)
		}
		row.SideCPUPerReqUS = perReq(side1 - side0)
	}
	b.cur.Closed = append(b.cur.Closed, row)
}

func cpuOf(p *proc) time.Duration {
	d, _ := p.cpu()
	return d
}

func sidecarCPU(t *target) time.Duration {
	var sum time.Duration
	for _, s := range t.sidecars {
		sum += cpuOf(s)
	}
	return sum
}
