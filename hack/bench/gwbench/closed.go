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

// closedAcc adds up one target's measured slices of the c=N phase.
type closedAcc struct {
	all                     samples
	cpu, mock, side, client time.Duration
	elapsed                 time.Duration
}

// closedN runs conc workers against every target for dur each and reads
// the CPU each target's process (and the mock, and this client) used
// meanwhile. The time is cut into slices and the targets take turns, in an
// order that rotates every slice (sliceOrder): on a shared machine whose
// speed drifts by tens of percent within seconds, one long window per
// target let a slow stretch fall on one of them alone.
func (b *bench) closedN(ctx context.Context, w Workload, ts []*target, conc int, dur time.Duration, slices int) {
	slices = max(slices, 1)
	run := func(t *target, d time.Duration, keep bool) []samples {
		ep := t.eps[w]
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
	for _, t := range ts {
		run(t, b.cfg.concWarmup, false)
	}
	// Each slice starts with a short unmeasured lead-in: the target's
	// pooled connections and the scheduler settle after the switch.
	lead := min(b.cfg.concWarmup, dur/time.Duration(slices)/4)
	acc := make([]closedAcc, len(ts))
	for s := range slices {
		for _, i := range sliceOrder(len(ts), s) {
			t := ts[i]
			run(t, lead, false)
			own, mock := t.own(b.env, w), b.env.mock(w.Proto)
			cpu0, mock0, side0, self0 := cpuOf(own), cpuOf(mock), sidecarCPU(t), selfCPU()
			start := time.Now()
			per := run(t, dur/time.Duration(slices), true)
			a := &acc[i]
			a.elapsed += time.Since(start)
			a.cpu += cpuOf(own) - cpu0
			a.mock += cpuOf(mock) - mock0
			a.side += sidecarCPU(t) - side0
			a.client += selfCPU() - self0
			for _, p := range per {
				a.all.total = append(a.all.total, p.total...)
				a.all.first = append(a.all.first, p.first...)
			}
		}
	}
	phase := "c" + itoa(conc)
	for i, t := range ts {
		a := &acc[i]
		b.addLatency(phase, w, t, &a.all)
		nerr, errSamples := b.errs(phase, w, t).count()
		row := ClosedRow{Workload: w.String(), Target: t.spec.Name, Conc: conc, Requests: len(a.all.total) + nerr, Errors: nerr,
			Seconds: a.elapsed.Seconds(), ErrorSamples: errSamples}
		if n := len(a.all.total); n > 0 {
			perReq := func(d time.Duration) float64 { return us(d) / float64(n) }
			row.RPS = float64(n) / a.elapsed.Seconds()
			row.CPUPerReqUS = perReq(a.cpu)
			row.ClientCPUPerReqUS = perReq(a.client)
			if t.own(b.env, w) != b.env.mock(w.Proto) {
				row.MockCPUPerReqUS = perReq(a.mock)
			}
			row.SideCPUPerReqUS = perReq(a.side)
		}
		b.cur.Closed = append(b.cur.Closed, row)
	}
}

// sliceOrder is the order in which n targets take slice s: rotated by one
// each slice, so over n slices each target goes once in every position.
func sliceOrder(n, s int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = (i + s) % n
	}
	return out
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
