package main

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Report is everything one run produced: report.json is this, report.md is
// rendered from it.
type Report struct {
	Name     string       `json:"name"`
	Started  string       `json:"started"`
	Seconds  float64      `json:"seconds"`
	Machine  Machine      `json:"machine"`
	Settings Settings     `json:"settings"`
	Targets  []TargetInfo `json:"targets"`
	Rounds   []Round      `json:"rounds"`
	Summary  Summary      `json:"summary"`
	Goals    []Goal       `json:"goals"`
	Checks   []Check      `json:"checks"`
	Plots    []string     `json:"plots"`
}

// TargetInfo says what one target is and how it was started (temp paths as
// {dir}; no key is on a command line).
type TargetInfo struct {
	Name    string `json:"name"`
	Kind    string `json:"kind"`
	Command string `json:"command"`
}

// Round is one repetition of every measure, on fresh processes.
type Round struct {
	Index   int          `json:"index"`
	Latency []LatencyRow `json:"latency"`
	Closed  []ClosedRow  `json:"closed"`
	Open    []OpenRow    `json:"open"`
	Streams []StreamRow  `json:"streams"`
	Records []RecordRow  `json:"records"`
}

// LatencyRow is one latency distribution of one round.
type LatencyRow struct {
	Phase    string `json:"phase"` // c1, c8, open1000, streams
	Workload string `json:"workload"`
	Target   string `json:"target"`
	Metric   string `json:"metric"` // total (to the end) or first (to the first content event)
	Dist     Dist   `json:"dist"`
}

// ClosedRow is the closed loop at -conc of one target and workload in one
// round. CPU is user+system time of the target's own process (for direct,
// the mock's) over the requests it completed; the mock's and this client's
// are context.
type ClosedRow struct {
	Workload          string  `json:"workload"`
	Target            string  `json:"target"`
	Conc              int     `json:"concurrency"`
	Requests          int     `json:"requests"`
	Errors            int     `json:"errors"`
	Seconds           float64 `json:"seconds"`
	RPS               float64 `json:"rps"`
	CPUPerReqUS       float64 `json:"cpu_per_req_us"`
	MockCPUPerReqUS   float64 `json:"mock_cpu_per_req_us,omitempty"`
	ClientCPUPerReqUS float64 `json:"client_cpu_per_req_us"`
}

// OpenRow is one open-loop measure of one round. SendLag is how late this
// client sent against the schedule: its own share of every latency.
type OpenRow struct {
	Workload     string  `json:"workload"`
	Target       string  `json:"target"`
	Rate         float64 `json:"rate"`
	Sent         int     `json:"sent"`
	Errors       int     `json:"errors"`
	MaxInflight  int     `json:"max_inflight"`
	SendLagP99US float64 `json:"send_lag_p99_us"`
}

// StreamSample is one sample of the streams phase (MB = 10^6 bytes).
type StreamSample struct {
	T          float64 `json:"t_s"`
	Open       int     `json:"open"`
	RSSMB      float64 `json:"rss_mb"`
	AnonMB     float64 `json:"anon_mb"`
	Goroutines int     `json:"goroutines"`
}

// StreamRow is the streams phase of one target in one round. Anon is
// RssAnon (/proc/PID/status): the process's own memory, without the pages
// of its binary that VmRSS also counts.
type StreamRow struct {
	Target          string         `json:"target"`
	Streams         int            `json:"streams"`
	Errors          int            `json:"errors"`
	IdleRSS         float64        `json:"idle_rss_mb"`
	IdleAnon        float64        `json:"idle_anon_mb"`
	PeakRSS         float64        `json:"peak_rss_mb"` // max of the samples and VmHWM
	PeakAnon        float64        `json:"peak_anon_mb"`
	IdleGoroutines  int            `json:"idle_goroutines"`
	PeakGoroutines  int            `json:"peak_goroutines"`
	AfterGoroutines int            `json:"after_goroutines"` // a second after the last stream ended
	Samples         []StreamSample `json:"samples"`
}

// Check is a correctness check; a failed one fails the run.
type Check struct {
	Name   string `json:"name"`
	OK     bool   `json:"ok"`
	Detail string `json:"detail"`
}

// Goal is one of issue 42's limits for one gateway target, from the medians
// of the rounds. Goals are reported, not asserted: a run on a noisy machine
// must still write its report.
type Goal struct {
	Target   string `json:"target"`
	Name     string `json:"name"`
	Workload string `json:"workload,omitempty"`
	Measured Num    `json:"measured"`
	Limit    Num    `json:"limit"`
	Met      bool   `json:"met"`
	Detail   string `json:"detail"`
}

// Summary is the medians of the rounds, and ratios against revproxy.
type Summary struct {
	C1      []C1Summary     `json:"c1"`
	Closed  []ClosedSummary `json:"closed"`
	Open    []OpenSummary   `json:"open"`
	Streams []StreamSummary `json:"streams"`
}

// C1Summary is one target's latency at c=1; Added is over direct in the
// same round.
type C1Summary struct {
	Workload      string `json:"workload"`
	Metric        string `json:"metric"`
	Target        string `json:"target"`
	P50           Num    `json:"p50_us"`
	P99           Num    `json:"p99_us"`
	AddedP50      Num    `json:"added_p50_us"`
	AddedP99      Num    `json:"added_p99_us"`
	RatioAddedP50 Num    `json:"added_p50_vs_revproxy"`
}

// ClosedSummary is one target's closed loop at -conc.
type ClosedSummary struct {
	Workload  string `json:"workload"`
	Target    string `json:"target"`
	Errors    int    `json:"errors"`
	RPS       Num    `json:"rps"`
	CPUPerReq Num    `json:"cpu_per_req_us"`
	MockCPU   Num    `json:"mock_cpu_per_req_us"`
	ClientCPU Num    `json:"client_cpu_per_req_us"`
	P50       Num    `json:"p50_us"`
	P99       Num    `json:"p99_us"`
	RatioCPU  Num    `json:"cpu_vs_revproxy"`
}

// OpenSummary is one target's open loop at one rate (sent and errors
// summed over the rounds).
type OpenSummary struct {
	Workload   string  `json:"workload"`
	Target     string  `json:"target"`
	Rate       float64 `json:"rate"`
	Sent       int     `json:"sent"`
	Errors     int     `json:"errors"`
	P50        Num     `json:"p50_us"`
	P99        Num     `json:"p99_us"`
	P999       Num     `json:"p99_9_us"`
	Max        Num     `json:"max_us"`
	SendLagP99 Num     `json:"send_lag_p99_us"`
	RatioP99   Num     `json:"p99_vs_revproxy"`
}

// StreamSummary is one target's streams phase.
type StreamSummary struct {
	Target          string `json:"target"`
	Streams         int    `json:"streams"`
	Errors          int    `json:"errors"`
	IdleAnon        Num    `json:"idle_anon_mb"`
	PeakAnon        Num    `json:"peak_anon_mb"`
	IdleRSS         Num    `json:"idle_rss_mb"`
	PeakRSS         Num    `json:"peak_rss_mb"`
	IdleGoroutines  Num    `json:"idle_goroutines"`
	PeakGoroutines  Num    `json:"peak_goroutines"`
	AfterGoroutines Num    `json:"after_goroutines"`
}

// collect gathers f of every round's rows that match, in round order.
func collect[R any](rounds []Round, rows func(Round) []R, match func(R) bool, f func(R) float64) []float64 {
	var out []float64
	for _, r := range rounds {
		for _, x := range rows(r) {
			if match(x) {
				out = append(out, f(x))
			}
		}
	}
	return out
}

func med[R any](rounds []Round, rows func(Round) []R, match func(R) bool, f func(R) float64) Num {
	return Num(median(collect(rounds, rows, match, f)))
}

func latency(r Round) []LatencyRow { return r.Latency }
func closed(r Round) []ClosedRow   { return r.Closed }
func open(r Round) []OpenRow       { return r.Open }
func streams(r Round) []StreamRow  { return r.Streams }

// summarize reduces the rounds to medians and ratios. Ratios are taken
// between medians, so one round's outlier moves neither side.
func summarize(rounds []Round, cfg *config) Summary {
	var s Summary
	lat := func(phase string, w Workload, metric, target string) func(LatencyRow) bool {
		return func(l LatencyRow) bool {
			return l.Phase == phase && l.Workload == w.String() && l.Metric == metric && l.Target == target && l.Dist.N > 0
		}
	}
	// added is, per round, target's percentile less direct's.
	added := func(w Workload, metric, target string, p func(Dist) float64) Num {
		var xs []float64
		for _, r := range rounds {
			var d, x []float64
			for _, l := range r.Latency {
				if lat("c1", w, metric, "direct")(l) {
					d = append(d, p(l.Dist))
				}
				if lat("c1", w, metric, target)(l) {
					x = append(x, p(l.Dist))
				}
			}
			if len(d) == 1 && len(x) == 1 {
				xs = append(xs, x[0]-d[0])
			}
		}
		return Num(median(xs))
	}
	p50 := func(l LatencyRow) float64 { return l.Dist.P50 }
	p99 := func(l LatencyRow) float64 { return l.Dist.P99 }
	for _, w := range cfg.workloads {
		metrics := []string{"total"}
		if w.SSE {
			metrics = append(metrics, "first")
		}
		for _, m := range metrics {
			var rp Num
			for _, t := range cfg.targetNames {
				c := C1Summary{Workload: w.String(), Metric: m, Target: t, P50: med(rounds, latency, lat("c1", w, m, t), p50),
					P99: med(rounds, latency, lat("c1", w, m, t), p99), AddedP50: Num(math.NaN()), AddedP99: Num(math.NaN())}
				if t != "direct" {
					c.AddedP50 = added(w, m, t, func(d Dist) float64 { return d.P50 })
					c.AddedP99 = added(w, m, t, func(d Dist) float64 { return d.P99 })
				}
				if t == "revproxy" {
					rp = c.AddedP50
				}
				c.RatioAddedP50 = Num(ratio(float64(c.AddedP50), float64(rp)))
				s.C1 = append(s.C1, c)
			}
		}
	}
	phaseN := "c" + strconv.Itoa(cfg.conc)
	for _, w := range cfg.workloads {
		var rp Num
		for _, t := range cfg.targetNames {
			match := func(c ClosedRow) bool { return c.Workload == w.String() && c.Target == t }
			c := ClosedSummary{Workload: w.String(), Target: t,
				RPS:       med(rounds, closed, match, func(c ClosedRow) float64 { return c.RPS }),
				CPUPerReq: med(rounds, closed, match, func(c ClosedRow) float64 { return c.CPUPerReqUS }),
				MockCPU:   med(rounds, closed, match, func(c ClosedRow) float64 { return orNaN(c.MockCPUPerReqUS) }),
				ClientCPU: med(rounds, closed, match, func(c ClosedRow) float64 { return c.ClientCPUPerReqUS }),
				P50:       med(rounds, latency, lat(phaseN, w, "total", t), p50),
				P99:       med(rounds, latency, lat(phaseN, w, "total", t), p99)}
			for _, e := range collect(rounds, closed, match, func(c ClosedRow) float64 { return float64(c.Errors) }) {
				c.Errors += int(e)
			}
			if t == "revproxy" {
				rp = c.CPUPerReq
			}
			c.RatioCPU = Num(ratio(float64(c.CPUPerReq), float64(rp)))
			s.Closed = append(s.Closed, c)
		}
	}
	for _, rate := range cfg.rates {
		phase := "open" + strconv.Itoa(int(rate))
		for _, w := range cfg.openWorkloads {
			var rp Num
			for _, t := range cfg.targetNames {
				match := func(o OpenRow) bool { return o.Workload == w.String() && o.Target == t && o.Rate == rate }
				l := lat(phase, w, "total", t)
				o := OpenSummary{Workload: w.String(), Target: t, Rate: rate,
					P50: med(rounds, latency, l, p50), P99: med(rounds, latency, l, p99),
					P999:       med(rounds, latency, l, func(l LatencyRow) float64 { return l.Dist.P999 }),
					Max:        med(rounds, latency, l, func(l LatencyRow) float64 { return l.Dist.Max }),
					SendLagP99: med(rounds, open, match, func(o OpenRow) float64 { return o.SendLagP99US })}
				for _, r := range rounds {
					for _, x := range r.Open {
						if match(x) {
							o.Sent += x.Sent
							o.Errors += x.Errors
						}
					}
				}
				if t == "revproxy" {
					rp = o.P99
				}
				o.RatioP99 = Num(ratio(float64(o.P99), float64(rp)))
				s.Open = append(s.Open, o)
			}
		}
	}
	for _, t := range cfg.targetNames[1:] { // direct has no streams phase
		match := func(r StreamRow) bool { return r.Target == t }
		f := func(get func(StreamRow) float64) Num { return med(rounds, streams, match, get) }
		ss := StreamSummary{Target: t, Streams: cfg.streams,
			IdleAnon: f(func(r StreamRow) float64 { return r.IdleAnon }), PeakAnon: f(func(r StreamRow) float64 { return r.PeakAnon }),
			IdleRSS: f(func(r StreamRow) float64 { return r.IdleRSS }), PeakRSS: f(func(r StreamRow) float64 { return r.PeakRSS }),
			IdleGoroutines:  f(func(r StreamRow) float64 { return float64(r.IdleGoroutines) }),
			PeakGoroutines:  f(func(r StreamRow) float64 { return float64(r.PeakGoroutines) }),
			AfterGoroutines: f(func(r StreamRow) float64 { return float64(r.AfterGoroutines) })}
		for _, e := range collect(rounds, streams, match, func(r StreamRow) float64 { return float64(r.Errors) }) {
			ss.Errors += int(e)
		}
		s.Streams = append(s.Streams, ss)
	}
	return s
}

func orNaN(v float64) float64 {
	if v == 0 {
		return math.NaN()
	}
	return v
}

// Issue 42's limits. They are compared with measurements, never adjusted.
const (
	goalCPU      = 1.5 // CPU a request at c=8 ≤ 1.5 × revproxy's
	goalAddedP50 = 1.5 // c=1 added p50 ≤ 1.5 × revproxy's added p50
	goalOpenP99  = 2.0 // open loop p99 ≤ 2 × revproxy's, and zero errors
	goalRSSAnon  = 1.2 // peak RssAnon with the streams open ≤ 1.2 × the baseline gateway's
	goalTracing  = 1.1 // issue 47: CPU a request at c=8 with every request traced ≤ 1.1 × untraced
)

// evaluateGoals states each limit for every gateway target.
func evaluateGoals(s Summary, cfg *config) []Goal {
	var out []Goal
	goal := func(g Goal, measured float64) {
		g.Measured = Num(measured)
		g.Met = measured <= float64(g.Limit) // false for NaN: not measured is not met
		out = append(out, g)
	}
	for _, gw := range cfg.gateways {
		t := gw.name
		for _, c := range s.C1 {
			if c.Target == t && (c.Metric == "first" || !strings.HasSuffix(c.Workload, "/sse")) {
				goal(Goal{Target: t, Name: fmt.Sprintf("c=1 added p50 (%s) ≤ %g× revproxy's", c.Metric, goalAddedP50), Workload: c.Workload,
					Limit: goalAddedP50, Detail: "added p50 " + fmtUS(c.AddedP50)}, float64(c.RatioAddedP50))
			}
		}
		for _, c := range s.Closed {
			if c.Target == t {
				goal(Goal{Target: t, Name: fmt.Sprintf("CPU a request at c=%d ≤ %g× revproxy's", cfg.conc, goalCPU), Workload: c.Workload,
					Limit: goalCPU, Detail: fmt.Sprintf("%s a request", fmtUS(c.CPUPerReq))}, float64(c.RatioCPU))
			}
		}
		for _, o := range s.Open {
			if o.Target == t {
				m := float64(o.RatioP99)
				if o.Errors > 0 {
					m = math.NaN()
				}
				goal(Goal{Target: t, Name: fmt.Sprintf("open loop %g/s: p99 ≤ %g× revproxy's, no error", o.Rate, goalOpenP99), Workload: o.Workload,
					Limit: goalOpenP99, Detail: fmt.Sprintf("p99 %s, %d errors of %d", fmtUS(o.P99), o.Errors, o.Sent)}, m)
			}
		}
		if cfg.traced[t] {
			out = append(out, tracingGoals(s, cfg, t)...)
		}
		if cfg.rssBaseline == "" || t == cfg.rssBaseline {
			continue
		}
		var base, own StreamSummary
		for _, ss := range s.Streams {
			switch ss.Target {
			case cfg.rssBaseline:
				base = ss
			case t:
				own = ss
			}
		}
		goal(Goal{Target: t, Name: fmt.Sprintf("peak RssAnon, %d streams open, ≤ %g× %s's", cfg.streams, goalRSSAnon, cfg.rssBaseline), Limit: goalRSSAnon,
			Detail: fmt.Sprintf("%s against %s", fmtMB(own.PeakAnon), fmtMB(base.PeakAnon))}, ratio(float64(own.PeakAnon), float64(base.PeakAnon)))
	}
	return out
}

// tracingGoals compare a traced gateway's CPU a request at c=8 with the
// first untraced gateway's, workload by workload.
func tracingGoals(s Summary, cfg *config, traced string) []Goal {
	base := ""
	for _, g := range cfg.gateways {
		if !cfg.traced[g.name] {
			base = g.name
			break
		}
	}
	if base == "" {
		return nil
	}
	var out []Goal
	for _, c := range s.Closed {
		if c.Target != traced {
			continue
		}
		for _, b := range s.Closed {
			if b.Target == base && b.Workload == c.Workload {
				m := ratio(float64(c.CPUPerReq), float64(b.CPUPerReq))
				out = append(out, Goal{Target: traced, Workload: c.Workload, Limit: goalTracing, Measured: Num(m), Met: m <= goalTracing,
					Name:   fmt.Sprintf("CPU a request at c=%d, every request traced, ≤ %g× %s's", cfg.conc, goalTracing, base),
					Detail: fmt.Sprintf("%s against %s a request", fmtUS(c.CPUPerReq), fmtUS(b.CPUPerReq))})
			}
		}
	}
	return out
}
