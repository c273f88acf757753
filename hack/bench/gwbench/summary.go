package main

import (
	"fmt"
	"math"
	"slices"
	"strings"
)

// Summary is the medians of the rounds, and ratios against revproxy.
type Summary struct {
	Latency []LatSummary    `json:"latency"`
	Closed  []ClosedSummary `json:"closed"`
	Open    []OpenSummary   `json:"open"`
	Streams []StreamSummary `json:"streams"`
}

// LatSummary is one latency measure, medians of the rounds' percentiles.
type LatSummary struct {
	Phase    string `json:"phase"`
	Workload string `json:"workload"`
	Target   string `json:"target"`
	Metric   string `json:"metric"`
	Rounds   int    `json:"rounds"`
	P50      Num    `json:"p50_us"`
	P90      Num    `json:"p90_us"`
	P99      Num    `json:"p99_us"`
	P999     Num    `json:"p99_9_us"`
	Max      Num    `json:"max_us"`
	// Added is over direct in the same round (then the median of rounds).
	AddedP50 Num `json:"added_p50_us"`
	AddedP99 Num `json:"added_p99_us"`
	// Ratios against revproxy's medians in the same phase and workload.
	RatioP99      Num `json:"p99_vs_revproxy"`
	RatioP999     Num `json:"p99_9_vs_revproxy"`
	RatioAddedP50 Num `json:"added_p50_vs_revproxy"`
}

// ClosedSummary is one closed-loop measure at concurrency > 1.
type ClosedSummary struct {
	Workload  string `json:"workload"`
	Target    string `json:"target"`
	Conc      int    `json:"concurrency"`
	Errors    int    `json:"errors"`
	RPS       Num    `json:"rps"`
	CPUPerReq Num    `json:"cpu_per_req_us"`
	MockCPU   Num    `json:"mock_cpu_per_req_us"`
	SideCPU   Num    `json:"sidecar_cpu_per_req_us"`
	ClientCPU Num    `json:"client_cpu_per_req_us"`
	RatioRPS  Num    `json:"rps_vs_revproxy"`
	RatioCPU  Num    `json:"cpu_vs_revproxy"`
}

// OpenSummary is one open-loop measure (errors summed over rounds).
type OpenSummary struct {
	Workload   string  `json:"workload"`
	Target     string  `json:"target"`
	Rate       float64 `json:"rate"`
	Sent       int     `json:"sent"`
	Errors     int     `json:"errors"`
	SendLagP99 Num     `json:"send_lag_p99_us"`
}

// measured turns f's value into NaN where its file-backed figure (the
// first result) is 0: a round whose report predates the split.
func measured(f func(StreamRow) (file, v float64)) func(StreamRow) float64 {
	return func(r StreamRow) float64 {
		if file, v := f(r); file > 0 {
			return v
		}
		return math.NaN()
	}
}

// positive is f where it is above 0, NaN where it is 0 (not measured:
// older reports) or -1 (not exposed).
func positive(f func(StreamRow) float64) func(StreamRow) float64 {
	return func(r StreamRow) float64 {
		if v := f(r); v > 0 {
			return v
		}
		return math.NaN()
	}
}

// peakStack is the most wave 1's samples saw in goroutine stacks, NaN
// where none was scraped.
func peakStack(r StreamRow) float64 {
	var top float64
	for _, s := range r.Samples {
		top = max(top, s.StackMB)
	}
	if top == 0 {
		return math.NaN()
	}
	return top
}

// peakSample is wave 1's sample with the highest RSS (zero without
// samples).
func peakSample(r StreamRow) StreamSample {
	var top StreamSample
	for _, s := range r.Samples {
		if s.RSSMB > top.RSSMB {
			top = s
		}
	}
	return top
}

// StreamSummary is the streams phase of one target.
type StreamSummary struct {
	Target    string `json:"target"`
	Streams   int    `json:"streams"`
	Errors    int    `json:"errors"`
	StartRSS  Num    `json:"start_rss_mb"`
	IdleRSS   Num    `json:"idle_rss_mb"`
	PeakRSS   Num    `json:"peak_rss_mb"`
	Wave2Peak Num    `json:"wave2_peak_rss_mb"`
	// Idle and peak RSS split into anonymous memory (the process's own:
	// heap, stacks) and file-backed pages (its binary's); NaN: not measured.
	IdleAnon Num `json:"idle_anon_rss_mb"`
	IdleFile Num `json:"idle_file_rss_mb"`
	PeakAnon Num `json:"peak_anon_rss_mb"`
	PeakFile Num `json:"peak_file_rss_mb"`
	// FileTouched: of the file-backed pages, those wave 1 accessed.
	FileTouched Num      `json:"wave_file_touched_mb"`
	FileHuge    Num      `json:"wave_file_huge_mb"` // of the file-backed: mapped huge after wave 1 (FilePmdMapped)
	PeakStack   Num      `json:"peak_stack_mb"`     // of the anonymous: goroutine stacks, most through wave 1
	AfterRSS    Num      `json:"after_rss_mb"`
	IdleGor     Num      `json:"idle_goroutines"`
	PeakGor     Num      `json:"peak_goroutines"`
	AfterGor    Num      `json:"after_goroutines"`
	IdleHeap    Num      `json:"idle_heap_inuse_mb"`
	AfterHeap   Num      `json:"after_heap_inuse_mb"`
	Wave2Heap   Num      `json:"after_wave2_heap_inuse_mb"`
	IdleLive    Num      `json:"idle_heap_live_mb"` // NaN where not measured
	AfterLive   Num      `json:"after_heap_live_mb"`
	Wave2Live   Num      `json:"after_wave2_heap_live_mb"`
	BackRounds  int      `json:"back_to_idle_rounds"`
	Rounds      int      `json:"rounds"`
	Reasons     []string `json:"not_back_reasons,omitempty"`
}

// group collects per-round values under a key, keeping first-seen order.
type group[T any] struct {
	keys []string
	m    map[string][]T
}

func (g *group[T]) add(k string, v T) {
	if g.m == nil {
		g.m = map[string][]T{}
	}
	if _, ok := g.m[k]; !ok {
		g.keys = append(g.keys, k)
	}
	g.m[k] = append(g.m[k], v)
}

func medianOf[T any](xs []T, f func(T) float64) Num {
	v := make([]float64, 0, len(xs))
	for _, x := range xs {
		if y := f(x); !math.IsNaN(y) {
			v = append(v, y)
		}
	}
	return Num(median(v))
}

func key(parts ...any) string { return fmt.Sprint(parts...) }

// summarizeRounds reduces the rounds to medians and ratios. Ratios are
// taken between medians, so one round's outlier moves neither side.
func summarizeRounds(rounds []Round) Summary {
	var s Summary
	type latIn struct {
		row          LatencyRow
		added50, a99 float64
	}
	var lat group[latIn]
	for _, r := range rounds {
		direct := map[string]Dist{}
		for _, l := range r.Latency {
			if l.Target == "direct" {
				direct[key(l.Phase, l.Workload, l.Metric)] = l.Dist
			}
		}
		for _, l := range r.Latency {
			in := latIn{row: l, added50: math.NaN(), a99: math.NaN()}
			if d, ok := direct[key(l.Phase, l.Workload, l.Metric)]; ok && l.Phase == "c1" && l.Target != "direct" && d.N > 0 && l.Dist.N > 0 {
				in.added50, in.a99 = l.Dist.P50-d.P50, l.Dist.P99-d.P99
			}
			lat.add(key(l.Phase, "|", l.Workload, "|", l.Metric, "|", l.Target), in)
		}
	}
	nonEmpty := func(f func(Dist) float64) func(latIn) float64 {
		return func(x latIn) float64 {
			if x.row.Dist.N == 0 {
				return math.NaN()
			}
			return f(x.row.Dist)
		}
	}
	for _, k := range lat.keys {
		xs := lat.m[k]
		r := xs[0].row
		ls := LatSummary{Phase: r.Phase, Workload: r.Workload, Target: r.Target, Metric: r.Metric, Rounds: len(xs),
			P50:      medianOf(xs, nonEmpty(func(d Dist) float64 { return d.P50 })),
			P90:      medianOf(xs, nonEmpty(func(d Dist) float64 { return d.P90 })),
			P99:      medianOf(xs, nonEmpty(func(d Dist) float64 { return d.P99 })),
			P999:     medianOf(xs, nonEmpty(func(d Dist) float64 { return d.P999 })),
			Max:      medianOf(xs, nonEmpty(func(d Dist) float64 { return d.Max })),
			AddedP50: medianOf(xs, func(x latIn) float64 { return x.added50 }),
			AddedP99: medianOf(xs, func(x latIn) float64 { return x.a99 }),
		}
		s.Latency = append(s.Latency, ls)
	}
	for i := range s.Latency {
		l := &s.Latency[i]
		rp, ok := findLat(s.Latency, l.Phase, l.Workload, l.Metric, "revproxy")
		if !ok {
			l.RatioP99, l.RatioP999, l.RatioAddedP50 = Num(math.NaN()), Num(math.NaN()), Num(math.NaN())
			continue
		}
		l.RatioP99 = Num(ratio(float64(l.P99), float64(rp.P99)))
		l.RatioP999 = Num(ratio(float64(l.P999), float64(rp.P999)))
		l.RatioAddedP50 = Num(ratio(float64(l.AddedP50), float64(rp.AddedP50)))
	}

	var closed group[ClosedRow]
	for _, r := range rounds {
		for _, c := range r.Closed {
			if c.Conc > 1 {
				closed.add(key(c.Workload, "|", c.Target, "|", c.Conc), c)
			}
		}
	}
	for _, k := range closed.keys {
		xs := closed.m[k]
		cs := ClosedSummary{Workload: xs[0].Workload, Target: xs[0].Target, Conc: xs[0].Conc,
			RPS:       medianOf(xs, func(c ClosedRow) float64 { return c.RPS }),
			CPUPerReq: medianOf(xs, func(c ClosedRow) float64 { return c.CPUPerReqUS }),
			MockCPU:   medianOf(xs, func(c ClosedRow) float64 { return c.MockCPUPerReqUS }),
			SideCPU:   medianOf(xs, func(c ClosedRow) float64 { return c.SideCPUPerReqUS }),
			ClientCPU: medianOf(xs, func(c ClosedRow) float64 { return c.ClientCPUPerReqUS }),
		}
		for _, c := range xs {
			cs.Errors += c.Errors
		}
		s.Closed = append(s.Closed, cs)
	}
	for i := range s.Closed {
		c := &s.Closed[i]
		c.RatioRPS, c.RatioCPU = Num(math.NaN()), Num(math.NaN())
		for _, rp := range s.Closed {
			if rp.Target == "revproxy" && rp.Workload == c.Workload && rp.Conc == c.Conc {
				c.RatioRPS, c.RatioCPU = Num(ratio(float64(c.RPS), float64(rp.RPS))), Num(ratio(float64(c.CPUPerReq), float64(rp.CPUPerReq)))
			}
		}
	}

	var open group[OpenRow]
	for _, r := range rounds {
		for _, o := range r.Open {
			open.add(key(o.Rate, "|", o.Workload, "|", o.Target), o)
		}
	}
	for _, k := range open.keys {
		xs := open.m[k]
		os := OpenSummary{Workload: xs[0].Workload, Target: xs[0].Target, Rate: xs[0].Rate,
			SendLagP99: medianOf(xs, func(o OpenRow) float64 { return o.SendLagP99US })}
		for _, o := range xs {
			os.Sent += o.Sent
			os.Errors += o.Errors
		}
		s.Open = append(s.Open, os)
	}

	var streams group[StreamRow]
	for _, r := range rounds {
		for _, st := range r.Streams {
			streams.add(st.Target, st)
		}
	}
	for _, k := range streams.keys {
		xs := streams.m[k]
		orNaN := func(f func(StreamRow) float64) func(StreamRow) float64 {
			return func(r StreamRow) float64 {
				if v := f(r); v >= 0 {
					return v
				}
				return math.NaN()
			}
		}
		ss := StreamSummary{Target: k, Rounds: len(xs), Streams: xs[0].Streams,
			StartRSS: medianOf(xs, func(r StreamRow) float64 { return r.StartRSS }),
			IdleRSS:  medianOf(xs, func(r StreamRow) float64 { return r.IdleRSS }),
			PeakRSS:  medianOf(xs, func(r StreamRow) float64 { return r.PeakRSS }),
			Wave2Peak: medianOf(xs, func(r StreamRow) float64 {
				if r.Wave2PeakRSS > 0 {
					return r.Wave2PeakRSS
				}
				return math.NaN()
			}),
			AfterRSS:    medianOf(xs, func(r StreamRow) float64 { return r.AfterRSS }),
			IdleGor:     medianOf(xs, orNaN(func(r StreamRow) float64 { return float64(r.IdleGor) })),
			PeakGor:     medianOf(xs, orNaN(func(r StreamRow) float64 { return float64(r.PeakGor) })),
			AfterGor:    medianOf(xs, orNaN(func(r StreamRow) float64 { return float64(r.AfterGor) })),
			IdleHeap:    medianOf(xs, orNaN(func(r StreamRow) float64 { return r.IdleHeap })),
			AfterHeap:   medianOf(xs, orNaN(func(r StreamRow) float64 { return r.AfterHeap })),
			Wave2Heap:   medianOf(xs, orNaN(func(r StreamRow) float64 { return r.Wave2Heap })),
			IdleLive:    medianOf(xs, positive(func(r StreamRow) float64 { return r.IdleLive })),
			AfterLive:   medianOf(xs, positive(func(r StreamRow) float64 { return r.AfterLive })),
			Wave2Live:   medianOf(xs, positive(func(r StreamRow) float64 { return r.Wave2Live })),
			IdleAnon:    medianOf(xs, measured(func(r StreamRow) (float64, float64) { return r.IdleFileRSS, r.IdleRSS - r.IdleFileRSS })),
			IdleFile:    medianOf(xs, measured(func(r StreamRow) (float64, float64) { return r.IdleFileRSS, r.IdleFileRSS })),
			PeakAnon:    medianOf(xs, measured(func(r StreamRow) (float64, float64) { s := peakSample(r); return s.FileMB, s.RSSMB - s.FileMB })),
			PeakFile:    medianOf(xs, measured(func(r StreamRow) (float64, float64) { s := peakSample(r); return s.FileMB, s.FileMB })),
			PeakStack:   medianOf(xs, peakStack),
			FileTouched: medianOf(xs, measured(func(r StreamRow) (float64, float64) { return r.WaveFileTouched, r.WaveFileTouched })),
			FileHuge:    medianOf(xs, measured(func(r StreamRow) (float64, float64) { return r.WaveFileTouched, r.WaveFileHuge })),
		}
		for _, r := range xs {
			ss.Errors += r.Errors
			if r.BackToIdle {
				ss.BackRounds++
			} else {
				ss.Reasons = append(ss.Reasons, r.BackReason)
			}
		}
		s.Streams = append(s.Streams, ss)
	}
	return s
}

func findLat(ls []LatSummary, phase, workload, metric, target string) (LatSummary, bool) {
	for _, l := range ls {
		if l.Phase == phase && l.Workload == workload && l.Metric == metric && l.Target == target {
			return l, true
		}
	}
	return LatSummary{}, false
}

// Issue 12's targets. They are compared with measurements, never adjusted.
const (
	goalOpenP99   = 2.0  // open loop: p99 ≤ 2 × revproxy's
	goalOpenP999  = 3.0  // open loop: p99.9 ≤ 3 × revproxy's
	goalCPU       = 1.3  // CPU per request at c=8 ≤ 1.3 × revproxy's
	goalAddedP50  = 1.3  // c=1 added p50 ≤ 1.3 × revproxy's added p50
	goalPeakRSSMB = 90.0 // 1,000 concurrent streams: peak RSS
	goalIdleRSSMB = 30.0 // idle RSS
	goalRate      = 1000 // the open-loop rate the targets are stated at
	goalStreams   = 1000
)

// evaluateGoals states each of issue 12's targets for every gateway target.
func evaluateGoals(s Summary, targets []targetSpec) []Goal {
	var out []Goal
	for _, t := range targets {
		if t.Kind != kindGateway {
			continue
		}
		for _, l := range s.Latency {
			if l.Target != t.Name {
				continue
			}
			switch {
			case strings.HasPrefix(l.Phase, "open") && l.Metric == "total":
				note := ""
				if l.Phase != "open"+itoa(goalRate) {
					note = fmt.Sprintf("; not the issue's %d/s: not comparable", goalRate)
				}
				if lag := maxSendLag(s.Open, l.Phase, l.Workload, t.Name, "revproxy"); lag > sendLagLimitUS {
					note += fmt.Sprintf("; the client sent up to %s late (p99): the machine could not keep the schedule, so the ratio says little", fmtUS(Num(lag)))
				}
				out = append(out,
					Goal{Target: t.Name, Name: fmt.Sprintf("open loop %s/s p99 ≤ 2× revproxy", strings.TrimPrefix(l.Phase, "open")), Workload: l.Workload,
						Verdict: verdict(float64(l.RatioP99), goalOpenP99), Unit: "×", Detail: fmt.Sprintf("p99 %s", fmtUS(l.P99)) + note},
					Goal{Target: t.Name, Name: fmt.Sprintf("open loop %s/s p99.9 ≤ 3× revproxy", strings.TrimPrefix(l.Phase, "open")), Workload: l.Workload,
						Verdict: verdict(float64(l.RatioP999), goalOpenP999), Unit: "×", Detail: fmt.Sprintf("p99.9 %s", fmtUS(l.P999)) + note})
			case l.Phase == "c1" && (l.Metric == "first" || !strings.HasSuffix(l.Workload, "/sse")):
				what := "JSON"
				if l.Metric == "first" {
					what = "SSE to first content"
				}
				out = append(out, Goal{Target: t.Name, Name: "c=1 added p50 ≤ 1.3× revproxy's (" + what + ")", Workload: l.Workload,
					Verdict: verdict(float64(l.RatioAddedP50), goalAddedP50), Unit: "×", Detail: fmt.Sprintf("added p50 %s", fmtUS(l.AddedP50))})
			}
		}
		for _, c := range s.Closed {
			if c.Target == t.Name {
				out = append(out, Goal{Target: t.Name, Name: fmt.Sprintf("CPU per request at c=%d ≤ 1.3× revproxy", c.Conc), Workload: c.Workload,
					Verdict: verdict(float64(c.RatioCPU), goalCPU), Unit: "×", Detail: fmt.Sprintf("%.0f µs per request", float64(c.CPUPerReq))})
			}
		}
		for _, st := range s.Streams {
			if st.Target != t.Name {
				continue
			}
			back := Verdict{Measured: Num(st.BackRounds), Limit: Num(st.Rounds), Met: st.BackRounds == st.Rounds}
			if !back.Met {
				back.Over = Num(math.NaN())
			}
			note := ""
			if st.Streams != goalStreams {
				note = fmt.Sprintf("%d streams, not the issue's %d: not comparable", st.Streams, goalStreams)
			}
			out = append(out,
				Goal{Target: t.Name, Name: fmt.Sprintf("%d streams: peak RSS ≤ 90 MB", st.Streams), Verdict: verdict(float64(st.PeakRSS), goalPeakRSSMB), Unit: "MB", Detail: note},
				Goal{Target: t.Name, Name: "idle RSS ≤ 30 MB", Verdict: verdict(float64(st.IdleRSS), goalIdleRSSMB), Unit: "MB"},
				Goal{Target: t.Name, Name: fmt.Sprintf("%d streams: goroutines and heap back to idle", st.Streams), Verdict: back, Unit: "rounds",
					Detail: strings.Join(st.Reasons, " | ")})
		}
	}
	return out
}

// sendLagLimitUS is the client's send lag (p99) past which an open-loop
// comparison is flagged: the schedule itself was not kept.
const sendLagLimitUS = 5000

// maxSendLag is the largest median send lag p99 among targets in one
// open-loop phase and workload.
func maxSendLag(open []OpenSummary, phase, workload string, targets ...string) float64 {
	lag := 0.0
	for _, o := range open {
		if "open"+itoa(int(o.Rate)) == phase && o.Workload == workload && slices.Contains(targets, o.Target) && !math.IsNaN(float64(o.SendLagP99)) {
			lag = max(lag, float64(o.SendLagP99))
		}
	}
	return lag
}

func fmtUS(v Num) string {
	f := float64(v)
	switch {
	case math.IsNaN(f):
		return "n/a"
	case math.Abs(f) >= 10_000:
		return fmt.Sprintf("%.1f ms", f/1000)
	case math.Abs(f) >= 1000:
		return fmt.Sprintf("%.2f ms", f/1000)
	}
	return fmt.Sprintf("%.0f µs", f)
}
