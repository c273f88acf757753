package main

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// openLoop sends requests to one target on a fixed schedule, rate a second
// for dur, whatever the target's answers do: request i is due at
// start + i/rate and its latency counts from then, not from when it was
// sent. A target that stalls therefore pays for every request that queues
// behind the stall (no coordinated omission), as it would with real
// independent callers.
func (b *bench) openLoop(ctx context.Context, w Workload, t *target, rate float64, dur time.Duration) {
	if b.cfg.openWarmup > 0 {
		b.schedule(ctx, w, t, rate, b.cfg.openWarmup, false)
	}
	b.schedule(ctx, w, t, rate, dur, true)
}

func (b *bench) schedule(ctx context.Context, w Workload, t *target, rate float64, dur time.Duration, keep bool) {
	n := int(rate * dur.Seconds())
	interval := time.Duration(float64(time.Second) / rate)
	res := make([]sample, n)
	lag := make([]time.Duration, n)
	ok := make([]bool, n)
	var inflight, maxInflight atomic.Int64
	var wg sync.WaitGroup
	phase := "open" + itoa(int(rate))
	el := b.errs(phase, w, t)
	if !keep {
		el = b.errs("warmup", w, t)
	}
	ep := t.eps[w]
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
			s, err := do(ctx, t.client, ep, due)
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
	nerr, errSamples := el.count()
	row := OpenRow{Workload: w.String(), Target: t.spec.Name, Rate: rate, Seconds: dur.Seconds(), Sent: n,
		Errors: nerr, MaxInflight: int(maxInflight.Load()), ErrorSamples: errSamples}
	if n > 0 {
		row.SendLagP99US, row.SendLagMaxUS = us(percentile(lag, 99)), us(lag[n-1])
	}
	b.cur.Open = append(b.cur.Open, row)
}
