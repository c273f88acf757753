package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"
)

const mb = 1e6

// goroutineSlack is how many goroutines above idle still count as idle
// (timers, a scrape in progress, the runtime's own).
const goroutineSlack = 10

// heapSlackMB is how much the heap in use after the second wave of streams
// may exceed the heap after the first: 1 MB plus 1 KiB a stream, so a leak
// of a kilobyte per stream fails.
func heapSlackMB(streams int) float64 { return 1 + float64(streams)*1024/mb }

// streamsPhase opens many slow streams through one target, ramped at
// cfg.streamRamp a second, each lasting chunks × delay, and samples the
// target's RSS (and goroutines, where it has /metrics) against the number
// open. Once they have closed it checks the target returns to idle; where
// the target has /metrics a second, identical wave follows, and the heap
// after it must be where the first wave left it.
func (b *bench) streamsPhase(ctx context.Context, t *target) {
	cfg := b.cfg
	p := t.ownForStreams(b.env)
	w := Workload{Proto: cfg.streamProto, SSE: true}
	var ep *endpoint
	directive := slowDirective(cfg.streamChunks, cfg.streamDelayMs)
	switch t.spec.Kind {
	case kindGateway:
		ep = gatewayEndpoint(t.base, w, b.env.gatewayKey, directive)
	case kindRevproxy:
		ep = nativeEndpoint(t.base, w, b.env.upstreamKey(w.Proto), directive)
	default:
		ep = nativeEndpoint(b.env.mockURL(w.Proto), w, b.env.upstreamKey(w.Proto), directive)
	}
	row := StreamRow{Target: t.spec.Name, Streams: cfg.streams, IdleGor: -1, PeakGor: -1, AfterGor: -1, IdleHeap: -1, AfterHeap: -1, Wave2Heap: -1,
		IdleLive: -1, AfterLive: -1, Wave2Live: -1}
	row.StartRSS = b.startRSS[t.spec.Name]
	ports := []int{b.env.alphaPort, b.env.betaPort}
	// No forced GC at idle: its heap profile would put the profiler's code
	// and tables into the RSS that idle and wave 1's peak report (procState).
	idle, err := b.procState(ctx, t, p, ports, false, nil)
	if err != nil {
		b.fail(fmt.Errorf("streams %s: idle state: %w", t.spec.Name, err))
		return
	}
	row.IdleRSS, row.IdleGor, row.IdleHeap, row.IdlePooled = idle.rss, idle.gor, idle.heap, idle.pooled
	row.IdleLive = idle.live
	row.IdleFileRSS = idle.file

	refsCleared := p.clearRefs()
	if refsCleared != nil {
		fmt.Fprintf(os.Stderr, "gwbench: streams %s: file pages touched not measured: %v\n", t.spec.Name, refsCleared)
	}
	wave := b.wave(ctx, t, p, ep, w)
	if refsCleared == nil {
		if n, err := p.fileTouched(); err != nil {
			fmt.Fprintf(os.Stderr, "gwbench: streams %s: file pages touched not measured: %v\n", t.spec.Name, err)
		} else {
			row.WaveFileTouched, row.WaveFileHuge = float64(n.referenced)/mb, float64(n.huge)/mb
		}
	}
	row.Samples, row.MaxOpen = wave.samples, wave.maxOpen
	m, _ := p.mem()
	row.PeakRSS = max(float64(m.hwm)/mb, wave.peakRSS)
	row.PeakGor = wave.peakGor
	after1, ok := b.settle(ctx, t, p, ports, idle, 1)
	if !ok {
		return
	}
	row.AfterRSS, row.AfterGor, row.AfterHeap, row.AfterPooled = after1.rss, after1.gor, after1.heap, after1.pooled
	row.AfterLive = after1.live
	row.GCForced = after1.gc
	after2 := procState{gor: -1, heap: -1, live: -1}
	if t.mgmt != "" {
		wave2 := b.wave(ctx, t, p, ep, w)
		// Wave 1's peak is the one judged: wave 2 starts on memory the
		// runtime has not yet returned to the OS.
		m2, _ := p.mem()
		row.Wave2PeakRSS = max(float64(m2.hwm)/mb, wave2.peakRSS)
		if after2, ok = b.settle(ctx, t, p, ports, idle, 2); !ok {
			return
		}
		row.Wave2Heap, row.Wave2Gor, row.Wave2Live = after2.heap, after2.gor, after2.live
		row.GCForced = row.GCForced && after2.gc
		row.AfterRSS = after2.rss
	}
	row.Errors, row.ErrorSamples = b.errs("streams", w, t).count()
	row.BackToIdle, row.BackReason = backToIdle(idle, after1, after2, cfg.streams)
	b.cur.Streams = append(b.cur.Streams, row)
}

type waveResult struct {
	samples []StreamSample
	maxOpen int
	peakRSS float64 // MB, sampled
	peakGor int     // -1: no /metrics
}

// wave opens cfg.streams slow streams at cfg.streamRamp a second and waits
// for all of them to end.
func (b *bench) wave(ctx context.Context, t *target, p *proc, ep *endpoint, w Workload) waveResult {
	cfg := b.cfg
	// Keep-alive off: a stream's connection closes with it, so what stays
	// open afterwards is the target's doing.
	client := &http.Client{Transport: newTransport(0, false), Timeout: 5 * time.Minute}
	defer client.CloseIdleConnections()
	var open, maxOpen atomic.Int64
	var wg sync.WaitGroup
	el := b.errs("streams", w, t)
	var acc samples
	var accMu sync.Mutex
	sampCtx, stopSampling := context.WithCancel(ctx)
	sampled := make(chan []StreamSample, 1)
	start := time.Now()
	go func() { sampled <- b.sampleStreams(sampCtx, t, p, start, &open) }()

	interval := time.Duration(float64(time.Second) / cfg.streamRamp)
	for i := 0; i < cfg.streams && ctx.Err() == nil; i++ {
		if d := time.Until(start.Add(time.Duration(i) * interval)); d > 0 {
			time.Sleep(d)
		}
		t.sent.Add(1)
		wg.Go(func() {
			if v := open.Add(1); v > maxOpen.Load() {
				maxOpen.Store(v)
			}
			defer open.Add(-1)
			s, err := do(ctx, client, ep, time.Now())
			if err != nil {
				el.add(err)
				return
			}
			accMu.Lock()
			acc.add(s, true)
			accMu.Unlock()
		})
	}
	wg.Wait()
	stopSampling()
	res := waveResult{samples: <-sampled, maxOpen: int(maxOpen.Load()), peakGor: -1}
	for _, s := range res.samples {
		res.peakRSS = max(res.peakRSS, s.RSSMB)
		if t.mgmt != "" {
			res.peakGor = max(res.peakGor, s.Goroutines)
		}
	}
	b.addLatency("streams", w, t, &acc)
	return res
}

type procState struct {
	rss    float64 // MB
	file   float64 // MB of rss that maps files
	gor    int     // -1: no /metrics
	heap   float64 // MB in use; -1: no /metrics
	live   float64 // MB of heap objects (live after a forced GC); -1: not exposed
	pooled int
	gc     bool
}

// procState reads a target's memory, goroutines and pooled connections;
// with gc, the heap in use after a forced GC where the target serves
// /debug/pprof. RSS is read before that GC: the heap profile that forces
// it is symbolized in the target, which maps about 3 MB more of the
// binary's symbol tables and leaves the profile's garbage on the heap
// (docs/BENCHMARK.md, ninth round), an instrument's cost that no
// production gateway pays and the reverse proxy (no /debug/pprof) never
// did. The /metrics scrape before it stays: Prometheus does that to every
// gateway.
//
// With save (and gc), the heap profile of the second forced GC is written
// there: what was live after the wave, by allocation site.
func (b *bench) procState(ctx context.Context, t *target, p *proc, ports []int, gc bool, save io.Writer) (procState, error) {
	st := procState{gor: -1, heap: -1, live: -1}
	if t.mgmt != "" {
		rs, err := scrape(ctx, t.mgmt)
		if err != nil {
			return st, err
		}
		st.setHeap(rs)
	}
	m, err := p.mem()
	if err != nil {
		return st, err
	}
	st.rss, st.file = float64(m.rss)/mb, float64(m.file)/mb
	if gc && t.mgmt != "" {
		// Twice: sync.Pool contents (net/http's pooled bufio readers and
		// writers) survive one collection in the pool's victim cache.
		st.gc = forceGC(ctx, t.mgmt, nil) && forceGC(ctx, t.mgmt, save)
		rs, err := scrape(ctx, t.mgmt)
		if err != nil {
			return st, err
		}
		st.setHeap(rs)
	}
	if st.pooled, err = p.connsTo(ports...); err != nil {
		return st, err
	}
	return st, nil
}

func (st *procState) setHeap(rs runtimeStats) {
	st.gor, st.heap = rs.Goroutines, float64(rs.HeapInuse)/mb
	if rs.HeapAlloc > 0 {
		st.live = float64(rs.HeapAlloc) / mb
	}
}

// sampleStreams samples RSS every 50 ms and goroutines every 250 ms until
// ctx ends.
func (b *bench) sampleStreams(ctx context.Context, t *target, p *proc, start time.Time, open *atomic.Int64) []StreamSample {
	var out []StreamSample
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	gor, stack := -1, 0.0
	for i := 0; ; i++ {
		if t.mgmt != "" && i%5 == 0 {
			if rs, err := scrape(ctx, t.mgmt); err == nil {
				gor, stack = rs.Goroutines, float64(rs.StackInuse)/mb
			}
		}
		m, err := p.mem()
		if err == nil {
			s := StreamSample{T: time.Since(start).Seconds(), Open: int(open.Load()), RSSMB: float64(m.rss) / mb, FileMB: float64(m.file) / mb}
			if gor >= 0 {
				s.Goroutines, s.StackMB = gor, stack
			}
			out = append(out, s)
		}
		select {
		case <-ctx.Done():
			return out
		case <-tick.C:
		}
	}
}

// settle waits (up to cfg.settle) for the target's goroutines to come back
// to idle and returns its state then. With -heap-profiles, the heap
// profile of that state is kept, named by target, round and wave.
func (b *bench) settle(ctx context.Context, t *target, p *proc, ports []int, idle procState, wave int) (procState, bool) {
	deadline := time.Now().Add(b.cfg.settle)
	var prof *bytes.Buffer // the profile of the last look: the one kept
	if b.cfg.heapProfiles != "" && t.mgmt != "" {
		prof = new(bytes.Buffer)
	}
	for {
		var save io.Writer
		if prof != nil {
			prof.Reset()
			save = prof
		}
		now, err := b.procState(ctx, t, p, ports, true, save)
		if err != nil {
			b.fail(fmt.Errorf("streams %s: after: %w", t.spec.Name, err))
			return now, false
		}
		if t.mgmt == "" || goroutinesBack(idle, now) || time.Now().After(deadline) || ctx.Err() != nil {
			if prof != nil {
				name := filepath.Join(b.cfg.heapProfiles, fmt.Sprintf("heap-%s-round%d-wave%d.pb.gz", t.spec.Name, b.round, wave))
				if err := os.WriteFile(name, prof.Bytes(), 0o644); err != nil {
					b.fail(fmt.Errorf("streams %s: heap profile: %w", t.spec.Name, err))
					return now, false
				}
			}
			return now, true
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// goroutinesBack: goroutines, less two per pooled upstream connection (its
// read and write loops), at most the idle count plus goroutineSlack. The
// pool is the target's HTTP client keeping connections for reuse, bounded
// by its size: not a leak.
func goroutinesBack(idle, now procState) bool {
	return now.gor-2*now.pooled <= idle.gor-2*idle.pooled+goroutineSlack
}

// backToIdle judges a target after its streams closed: goroutines back to
// idle after each wave, and the heap after the second wave where the first
// left it (what the first wave leaves — pooled connections' buffers, the
// runtime's goroutine descriptors, tables grown to hold a thousand streams
// — is bounded, not per stream; a leak grows with every wave). The heap
// judged is the live one (the bytes of objects that survived two forced
// collections) where the target exposes it: heap in use also counts the
// free slots of every span that still holds a live object, which moved by
// −1.2 to +1.6 MB from wave to wave with the live heap within 0.5 MB
// (docs/BENCHMARK.md, fifteenth round), so it is reported, and judged only
// where nothing else is exposed. Without /metrics (the mock) there is
// nothing to judge but RSS, which Go returns to the OS lazily, so it is
// reported, not judged.
func backToIdle(idle, after1, after2 procState, streams int) (bool, string) {
	if idle.gor < 0 {
		return true, "not judged: no /metrics (RSS only)"
	}
	var why []string
	for i, now := range []procState{after1, after2} {
		if !goroutinesBack(idle, now) {
			why = append(why, fmt.Sprintf("after wave %d: goroutines %d (%d pooled connections) against %d idle (%d pooled)", i+1, now.gor, now.pooled, idle.gor, idle.pooled))
		}
	}
	what, from, to := "live heap", after1.live, after2.live
	if from < 0 || to < 0 {
		what, from, to = "heap in use", after1.heap, after2.heap
	}
	if grow := to - from; grow > heapSlackMB(streams) {
		why = append(why, fmt.Sprintf("%s grew by %.1f MB from wave 1 to wave 2 (%.1f → %.1f MB; allowed %.1f MB)", what, grow, from, to, heapSlackMB(streams)))
		if !after1.gc || !after2.gc {
			why = append(why, "no GC could be forced (no /debug/pprof on the management port), so that heap may be garbage")
		}
	}
	if len(why) > 0 {
		return false, joinReasons(why)
	}
	return true, ""
}

func joinReasons(s []string) string {
	out := s[0]
	for _, x := range s[1:] {
		out += "; " + x
	}
	return out
}
