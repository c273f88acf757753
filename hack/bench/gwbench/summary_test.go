package main

import (
	"math"
	"strings"
	"testing"
)

func lat(phase, workload, target, metric string, p50, p99, p999 float64) LatencyRow {
	return LatencyRow{Phase: phase, Workload: workload, Target: target, Metric: metric,
		Dist: Dist{N: 1000, P50: p50, P90: p50, P99: p99, P999: p999, Max: p999}}
}

// Three rounds: added latency is taken per round, then the median; ratios
// are between medians.
func TestSummarizeRoundsAddedAndRatios(t *testing.T) {
	rounds := []Round{
		{Index: 1, Latency: []LatencyRow{
			lat("c1", "alpha/json", "direct", "total", 100, 500, 900),
			lat("c1", "alpha/json", "revproxy", "total", 300, 900, 2000),
			lat("c1", "alpha/json", "llmgw", "total", 400, 1500, 3000),
			lat("open1000", "alpha/json", "revproxy", "total", 500, 1000, 2000),
			lat("open1000", "alpha/json", "llmgw", "total", 600, 5000, 9000),
		}},
		{Index: 2, Latency: []LatencyRow{
			lat("c1", "alpha/json", "direct", "total", 200, 600, 900),
			lat("c1", "alpha/json", "revproxy", "total", 400, 900, 2000),
			lat("c1", "alpha/json", "llmgw", "total", 500, 1500, 3000),
			lat("open1000", "alpha/json", "revproxy", "total", 500, 2000, 4000),
			lat("open1000", "alpha/json", "llmgw", "total", 600, 3000, 6000),
		}},
		{Index: 3, Latency: []LatencyRow{
			lat("c1", "alpha/json", "direct", "total", 100, 500, 900),
			lat("c1", "alpha/json", "revproxy", "total", 400, 900, 2000), // added 300
			lat("c1", "alpha/json", "llmgw", "total", 2100, 1500, 3000),  // added 2000: an outlier round
			lat("open1000", "alpha/json", "revproxy", "total", 500, 3000, 6000),
			lat("open1000", "alpha/json", "llmgw", "total", 600, 4000, 12000),
		}},
	}
	s := summarizeRounds(rounds)
	for _, tc := range []struct {
		phase, target string
		check         func(LatSummary) bool
		want          string
	}{
		{"c1", "revproxy", func(l LatSummary) bool { return l.AddedP50 == 200 }, "added p50 = median(200, 200, 300) = 200"},
		{"c1", "llmgw", func(l LatSummary) bool { return l.AddedP50 == 300 }, "added p50 = median(300, 300, 2000) = 300"},
		{"c1", "llmgw", func(l LatSummary) bool { return l.RatioAddedP50 == 1.5 }, "added p50 ratio 300/200"},
		{"c1", "direct", func(l LatSummary) bool { return math.IsNaN(float64(l.AddedP50)) }, "direct has no added latency"},
		{"open1000", "llmgw", func(l LatSummary) bool { return l.P99 == 4000 && l.RatioP99 == 2 }, "p99 median 4000 / revproxy 2000"},
		{"open1000", "llmgw", func(l LatSummary) bool { return l.P999 == 9000 && l.RatioP999 == 2.25 }, "p99.9 median 9000 / 4000"},
		{"open1000", "llmgw", func(l LatSummary) bool { return math.IsNaN(float64(l.AddedP50)) }, "added only at c=1"},
	} {
		l, ok := findLat(s.Latency, tc.phase, "alpha/json", "total", tc.target)
		if !ok {
			t.Fatalf("%s %s missing", tc.phase, tc.target)
		}
		if !tc.check(l) {
			t.Errorf("%s %s: want %s, got %+v", tc.phase, tc.target, tc.want, l)
		}
	}
}

func TestSummarizeRoundsClosedAndStreams(t *testing.T) {
	rounds := []Round{
		{Closed: []ClosedRow{
			{Workload: "alpha/json", Target: "revproxy", Conc: 1, Requests: 10}, // c=1 rows are counts only
			{Workload: "alpha/json", Target: "revproxy", Conc: 8, RPS: 1000, CPUPerReqUS: 100},
			{Workload: "alpha/json", Target: "llmgw", Conc: 8, RPS: 500, CPUPerReqUS: 250, Errors: 1},
		}, Streams: []StreamRow{
			{Target: "llmgw", Streams: 1000, IdleRSS: 40, PeakRSS: 100, IdleGor: 20, BackToIdle: true,
				IdleFileRSS: 28, Samples: []StreamSample{{RSSMB: 60, FileMB: 29, StackMB: 12}, {RSSMB: 98, FileMB: 30, StackMB: 20}, {RSSMB: 90, FileMB: 31, StackMB: 21}}},
			{Target: "direct", Streams: 1000, IdleRSS: 30, PeakRSS: 50, IdleGor: -1, IdleHeap: -1},
		}},
		{Closed: []ClosedRow{
			{Workload: "alpha/json", Target: "revproxy", Conc: 8, RPS: 1200, CPUPerReqUS: 120},
			{Workload: "alpha/json", Target: "llmgw", Conc: 8, RPS: 700, CPUPerReqUS: 270},
		}, Streams: []StreamRow{
			{Target: "llmgw", Streams: 1000, IdleRSS: 42, PeakRSS: 80, IdleGor: 22, BackReason: "goroutines 900",
				IdleFileRSS: 30, Samples: []StreamSample{{RSSMB: 80, FileMB: 32, StackMB: 17}}},
			{Target: "direct", Streams: 1000, IdleRSS: 30, PeakRSS: 52, IdleGor: -1, IdleHeap: -1},
		}},
	}
	s := summarizeRounds(rounds)
	if len(s.Closed) != 2 {
		t.Fatalf("closed summaries: %+v (c=1 rows must not be summarized here)", s.Closed)
	}
	gw := s.Closed[1]
	if gw.Target != "llmgw" || gw.CPUPerReq != 260 || gw.RatioCPU != Num(260.0/110) || gw.Errors != 1 {
		t.Errorf("llmgw closed summary %+v", gw)
	}
	var g, d StreamSummary
	for _, x := range s.Streams {
		if x.Target == "llmgw" {
			g = x
		} else {
			d = x
		}
	}
	if g.PeakRSS != 90 || g.IdleRSS != 41 || g.BackRounds != 1 || g.Rounds != 2 || len(g.Reasons) != 1 {
		t.Errorf("llmgw streams summary %+v", g)
	}
	// Anonymous = RSS − file-backed, per round, then the median.
	if g.IdleAnon != 12 || g.IdleFile != 29 || g.PeakAnon != 58 || g.PeakFile != 31 {
		t.Errorf("llmgw RSS split %v/%v idle, %v/%v peak; want 12/29, 58/31", g.IdleAnon, g.IdleFile, g.PeakAnon, g.PeakFile)
	}
	// Stacks: the most any sample of a round saw (not the peak-RSS
	// sample's), then the median: 21 and 17.
	if g.PeakStack != 19 {
		t.Errorf("llmgw peak stacks %v, want 19", g.PeakStack)
	}
	if !math.IsNaN(float64(d.PeakStack)) {
		t.Errorf("a target without /metrics must have no stack figure: %v", d.PeakStack)
	}
	if !math.IsNaN(float64(d.PeakFile)) || !math.IsNaN(float64(d.IdleAnon)) {
		t.Errorf("rounds without the split must have none: %+v", d)
	}
	if !math.IsNaN(float64(d.IdleGor)) || !math.IsNaN(float64(d.IdleHeap)) {
		t.Errorf("a target without /metrics must have no goroutine or heap figures: %+v", d)
	}
}

func TestEvaluateGoals(t *testing.T) {
	s := Summary{
		Latency: []LatSummary{
			{Phase: "c1", Workload: "alpha/json", Target: "llmgw", Metric: "total", AddedP50: 260, RatioAddedP50: 1.3},
			{Phase: "c1", Workload: "alpha/sse", Target: "llmgw", Metric: "total", RatioAddedP50: 9}, // end of stream: not a goal
			{Phase: "c1", Workload: "alpha/sse", Target: "llmgw", Metric: "first", RatioAddedP50: 1.6},
			{Phase: "open1000", Workload: "alpha/json", Target: "llmgw", Metric: "total", RatioP99: 2.5, RatioP999: 2.9},
			{Phase: "open1000", Workload: "alpha/json", Target: "revproxy", Metric: "total", RatioP99: 1, RatioP999: 1},
		},
		Closed:  []ClosedSummary{{Workload: "alpha/json", Target: "llmgw", Conc: 8, RatioCPU: Num(math.NaN())}},
		Streams: []StreamSummary{{Target: "llmgw", Streams: 1000, PeakRSS: 95, IdleRSS: 29.5, BackRounds: 3, Rounds: 3}},
	}
	goals := evaluateGoals(s, []targetSpec{{Name: "revproxy", Kind: kindRevproxy}, {Name: "llmgw", Kind: kindGateway}})
	want := []struct {
		name, workload string
		met            bool
	}{
		{"c=1 added p50 ≤ 1.3× revproxy's (JSON)", "alpha/json", true},
		{"c=1 added p50 ≤ 1.3× revproxy's (SSE to first content)", "alpha/sse", false},
		{"open loop 1000/s p99 ≤ 2× revproxy", "alpha/json", false},
		{"open loop 1000/s p99.9 ≤ 3× revproxy", "alpha/json", true},
		{"CPU per request at c=8 ≤ 1.3× revproxy", "alpha/json", false}, // not measured is not met
		{"1000 streams: peak RSS ≤ 90 MB", "", false},
		{"idle RSS ≤ 30 MB", "", true},
		{"1000 streams: goroutines and heap back to idle", "", true},
	}
	if len(goals) != len(want) {
		t.Fatalf("got %d goals, want %d: %+v", len(goals), len(want), goals)
	}
	for i, w := range want {
		g := goals[i]
		if g.Target != "llmgw" || g.Name != w.name || g.Workload != w.workload || g.Verdict.Met != w.met {
			t.Errorf("goal %d = %s %q %s met=%v, want %q %s met=%v", i, g.Target, g.Name, g.Workload, g.Verdict.Met, w.name, w.workload, w.met)
		}
	}
	if g := goals[5]; math.Abs(float64(g.Verdict.Over)-(95.0/90-1)) > 1e-9 {
		t.Errorf("peak RSS over = %v, want %v", g.Verdict.Over, 95.0/90-1)
	}
}

func TestGoalsNoteOtherSettings(t *testing.T) {
	s := Summary{
		Latency: []LatSummary{{Phase: "open200", Workload: "alpha/json", Target: "llmgw", Metric: "total", RatioP99: 1, RatioP999: 1}},
		Streams: []StreamSummary{{Target: "llmgw", Streams: 50, PeakRSS: 40, IdleRSS: 20, Rounds: 1, BackRounds: 1}},
	}
	for _, g := range evaluateGoals(s, []targetSpec{{Name: "llmgw", Kind: kindGateway}}) {
		if (strings.Contains(g.Name, "open loop") || strings.Contains(g.Name, "peak RSS")) && !strings.Contains(g.Detail, "not comparable") {
			t.Errorf("%s measured at other settings than the issue's must say so: %q", g.Name, g.Detail)
		}
	}
}

func TestFmtVerdict(t *testing.T) {
	for _, tc := range []struct {
		v    Verdict
		unit string
		want string
	}{
		{verdict(1.1, 1.3), "×", "met (1.10×)"},
		{verdict(2.6, 1.3), "×", "**missed by 100 %**: 2.60× against ≤ 1.30×"},
		{verdict(120, 90), "MB", "**missed by 33 %**: 120.0 MB against ≤ 90.0 MB"},
		{verdict(math.NaN(), 2), "×", "**not measured**"},
		{Verdict{Measured: 2, Limit: 3, Over: Num(math.NaN())}, "rounds", "**missed**: 2 of 3 rounds"},
		{Verdict{Measured: 3, Limit: 3, Met: true}, "rounds", "met (3 of 3 rounds)"},
	} {
		if got := fmtVerdict(tc.v, tc.unit); got != tc.want {
			t.Errorf("fmtVerdict(%+v) = %q, want %q", tc.v, got, tc.want)
		}
	}
}

func TestPhaseGroups(t *testing.T) {
	in := []PhaseLoad{
		{Phase: "warm-up", Start: "1", End: "2", Seconds: 1},
		{Phase: "streams 1000 direct", Start: "2", End: "3", Seconds: 10},
		{Phase: "streams 1000 llmgw", Start: "3", End: "4", Seconds: 10},
		{Phase: "c=1 alpha/json", Start: "4", End: "5", Seconds: 5},
		{Phase: "c=1 beta/json", Start: "5", End: "6", Seconds: 5},
		{Phase: "open 1000/s alpha/json llmgw", Start: "6", End: "7", Seconds: 8},
		{Phase: "open 1000/s beta/json llmgw", Start: "7", End: "8", Seconds: 8},
	}
	got := phaseGroups(in)
	want := []PhaseLoad{
		{Phase: "warm-up", Start: "1", End: "2", Seconds: 1},
		{Phase: "streams 1000", Start: "2", End: "4", Seconds: 20},
		{Phase: "c=1", Start: "4", End: "6", Seconds: 10},
		{Phase: "open 1000/s", Start: "6", End: "8", Seconds: 16},
	}
	if len(got) != len(want) {
		t.Fatalf("got %+v", got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("group %d = %+v, want %+v", i, got[i], want[i])
		}
	}
}

func TestGoalsFlagAScheduleNotKept(t *testing.T) {
	s := Summary{
		Latency: []LatSummary{{Phase: "open1000", Workload: "alpha/json", Target: "llmgw", Metric: "total", RatioP99: 0.5, RatioP999: 0.5}},
		Open: []OpenSummary{
			{Workload: "alpha/json", Target: "llmgw", Rate: 1000, SendLagP99: 200},
			{Workload: "alpha/json", Target: "revproxy", Rate: 1000, SendLagP99: 509_000},
		},
	}
	for _, g := range evaluateGoals(s, []targetSpec{{Name: "llmgw", Kind: kindGateway}}) {
		if !strings.Contains(g.Detail, "could not keep the schedule") {
			t.Errorf("%s: a comparison with the client 509 ms late must say so: %q", g.Name, g.Detail)
		}
	}
	s.Open[1].SendLagP99 = 300
	for _, g := range evaluateGoals(s, []targetSpec{{Name: "llmgw", Kind: kindGateway}}) {
		if strings.Contains(g.Detail, "schedule") {
			t.Errorf("%s: flagged without cause: %q", g.Name, g.Detail)
		}
	}
}
