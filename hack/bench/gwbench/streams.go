package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

const mb = 1e6

// streams opens -streams slow streams through t, -stream-ramp a second,
// each lasting chunks × delay, and samples t's memory (every 50 ms) and
// goroutines (every 250 ms) against the number open; it waits for all of
// them to end.
func (b *bench) streams(ctx context.Context, e *env, t *target) {
	cfg, w := b.cfg, b.cfg.streamWorkload
	ep := t.endpoint(e, w, slowDirective(cfg.streamChunks, cfg.streamDelayMs))
	row := StreamRow{Target: t.name, Streams: cfg.streams}
	idle, err := t.proc.mem()
	if err != nil {
		b.fail(fmt.Errorf("streams %s: %w", t.name, err))
		return
	}
	row.IdleRSS, row.IdleAnon = float64(idle.rss)/mb, float64(idle.anon)/mb
	row.IdleGoroutines, _ = goroutines(ctx, t.mgmt)

	// Keep-alive off: a stream's connection closes with it, so what stays
	// open afterwards is the target's doing.
	client := &http.Client{Transport: newTransport(0, false), Timeout: 5 * time.Minute}
	defer client.CloseIdleConnections()
	var open atomic.Int64
	var wg sync.WaitGroup
	var acc samples
	var mu sync.Mutex
	el := b.errLog("streams", w, t)
	sampCtx, stopSampling := context.WithCancel(ctx)
	sampled := make(chan []StreamSample, 1)
	start := time.Now()
	go func() { sampled <- sampleStreams(sampCtx, t, start, &open) }()
	interval := time.Duration(float64(time.Second) / cfg.streamRamp)
	for i := 0; i < cfg.streams && ctx.Err() == nil; i++ {
		if d := time.Until(start.Add(time.Duration(i) * interval)); d > 0 {
			time.Sleep(d)
		}
		t.sent.Add(1)
		wg.Go(func() {
			open.Add(1)
			defer open.Add(-1)
			s, err := do(ctx, client, ep, time.Now())
			if err != nil {
				el.add(err)
				return
			}
			mu.Lock()
			acc.add(s, true)
			mu.Unlock()
		})
	}
	wg.Wait()
	stopSampling()
	row.Samples = <-sampled
	for _, s := range row.Samples {
		row.PeakAnon, row.PeakRSS = max(row.PeakAnon, s.AnonMB), max(row.PeakRSS, s.RSSMB)
		row.PeakGoroutines = max(row.PeakGoroutines, s.Goroutines)
	}
	if m, err := t.proc.mem(); err == nil {
		row.PeakRSS = max(row.PeakRSS, float64(m.hwm)/mb)
	}
	// Closed streams' goroutines take a moment to return.
	time.Sleep(time.Second)
	row.AfterGoroutines, _ = goroutines(ctx, t.mgmt)
	row.Errors, _ = el.count()
	b.addLatency("streams", w, t, &acc)
	b.cur.Streams = append(b.cur.Streams, row)
}

// sampleStreams samples t's memory every 50 ms and its goroutines every
// 250 ms until ctx ends.
func sampleStreams(ctx context.Context, t *target, start time.Time, open *atomic.Int64) []StreamSample {
	var out []StreamSample
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	gor := 0
	for i := 0; ; i++ {
		if i%5 == 0 {
			if n, err := goroutines(ctx, t.mgmt); err == nil {
				gor = n
			}
		}
		if m, err := t.proc.mem(); err == nil {
			out = append(out, StreamSample{T: time.Since(start).Seconds(), Open: int(open.Load()),
				RSSMB: float64(m.rss) / mb, AnonMB: float64(m.anon) / mb, Goroutines: gor})
		}
		select {
		case <-ctx.Done():
			return out
		case <-tick.C:
		}
	}
}

var mgmtClient = &http.Client{Timeout: 5 * time.Second}

// goroutines reads go_goroutines from base+"/metrics".
func goroutines(ctx context.Context, base string) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/metrics", nil)
	if err != nil {
		return 0, err
	}
	resp, err := mgmtClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("%s/metrics: HTTP %d", base, resp.StatusCode)
	}
	return parseGoroutines(resp.Body)
}

// parseGoroutines picks the unlabelled gauge go_goroutines out of a
// Prometheus text exposition.
func parseGoroutines(r io.Reader) (int, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "go_goroutines "); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil {
				return 0, fmt.Errorf("go_goroutines %q: %w", v, err)
			}
			return int(f), nil
		}
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	return 0, fmt.Errorf("no go_goroutines in /metrics")
}
