package main

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestParseStatCPU(t *testing.T) {
	// A command name with a space and a parenthesis; utime 250, stime 50 ticks.
	stat := "1234 (llmgw (x) y) S 1 1234 1234 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 8 0 100 1000 200\n"
	got, err := parseStatCPU([]byte(stat))
	if err != nil || got != 3*time.Second {
		t.Fatalf("parseStatCPU = %v, %v; want 3s", got, err)
	}
	if _, err := parseStatCPU([]byte("1234 (x) S 1 2")); err == nil {
		t.Fatal("a short stat line parsed")
	}
	if d := procCPU("self"); d < 0 {
		t.Fatalf("own CPU %v", d)
	}
}

func TestParseStatus(t *testing.T) {
	status := "Name:\tllmgw\nVmHWM:\t   90000 kB\nVmRSS:\t   80000 kB\nRssAnon:\t   30000 kB\nRssFile:\t   50000 kB\n"
	m, err := parseStatus([]byte(status))
	if err != nil || m.rss != 80000*1024 || m.anon != 30000*1024 || m.hwm != 90000*1024 {
		t.Fatalf("parseStatus = %+v, %v", m, err)
	}
	if _, err := parseStatus([]byte("VmRSS:\t 1 kB\n")); err == nil {
		t.Fatal("a status without RssAnon parsed")
	}
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Skip("no /proc")
	}
	if m, err := parseStatus(b); err != nil || m.anon == 0 || m.rss < m.anon {
		t.Fatalf("own status: %+v, %v", m, err)
	}
}

func TestParseGoroutines(t *testing.T) {
	n, err := parseGoroutines(strings.NewReader("# HELP go_goroutines x\ngo_goroutines_total{a=\"b\"} 9\ngo_goroutines 23\n"))
	if err != nil || n != 23 {
		t.Fatalf("parseGoroutines = %d, %v", n, err)
	}
	if _, err := parseGoroutines(strings.NewReader("go_threads 5\n")); err == nil {
		t.Fatal("an exposition without go_goroutines parsed")
	}
}

func TestPercentileAndMedian(t *testing.T) {
	d := make([]time.Duration, 1000)
	for i := range d {
		d[i] = time.Duration(i+1) * time.Microsecond
	}
	for p, want := range map[float64]time.Duration{50: 500, 99: 990, 99.9: 999, 100: 1000} {
		if got := percentile(d, p); got != want*time.Microsecond {
			t.Errorf("p%g = %v, want %v", p, got, want*time.Microsecond)
		}
	}
	if m := median([]float64{3, math.NaN(), 1, 2}); m != 2 {
		t.Errorf("median = %v, want 2 (NaN left out)", m)
	}
	if m := median([]float64{4, 1}); m != 2.5 {
		t.Errorf("median = %v, want 2.5", m)
	}
	if m := median(nil); !math.IsNaN(m) {
		t.Errorf("median of nothing = %v, want NaN", m)
	}
	if r := ratio(1, 0); !math.IsNaN(r) {
		t.Errorf("ratio against 0 = %v, want NaN", r)
	}
}

func TestParseConfig(t *testing.T) {
	c, err := parseConfig([]string{"-smoke", "-gateway", "new=bin/llmgw", "-gateway", "old=/work/old/llmgw", "-rss-baseline", "old", "-c1-n", "7"})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(c.targetNames, ",") != "direct,revproxy,new,old" || c.gatewayByName["old"] != "/work/old/llmgw" {
		t.Errorf("targets %v, gateways %v", c.targetNames, c.gatewayByName)
	}
	if c.rounds != 1 || c.streams != 50 || c.c1N != 7 {
		t.Errorf("smoke preset not applied or not overridden: rounds %d streams %d c1-n %d", c.rounds, c.streams, c.c1N)
	}
	if len(c.openWorkloads) != 2 || len(c.workloads) != 4 {
		t.Errorf("workloads %v, open %v", c.workloads, c.openWorkloads)
	}
	c, err = parseConfig(nil)
	if err != nil || len(c.gateways) != 1 || c.gateways[0] != (gatewayFlag{"llmgw", "bin/llmgw"}) {
		t.Errorf("default gateway: %+v, %v", c, err)
	}
	for _, bad := range [][]string{
		{"-gateway", "revproxy=x"}, {"-gateway", "noequals"}, {"-gateway", "a=x", "-gateway", "a=y"},
		{"-rss-baseline", "nope"}, {"-workloads", "gamma/json"}, {"-rates", "0"}, {"-name", "a/b"}, {"stray"},
	} {
		if _, err := parseConfig(bad); err == nil {
			t.Errorf("parseConfig(%q) accepted", bad)
		}
	}
}

// A synthetic run: the summary takes medians and ratios against revproxy,
// the goals follow from them, and the report renders with its plots.
func TestSummaryGoalsAndReport(t *testing.T) {
	cfg, err := parseConfig([]string{"-gateway", "new=x", "-gateway", "old=y", "-rss-baseline", "old", "-workloads", "alpha/json,alpha/sse", "-rates", "1000"})
	if err != nil {
		t.Fatal(err)
	}
	dist := func(p50, p99 float64) Dist { return Dist{N: 100, P50: p50, P90: p99, P99: p99, P999: p99, Max: p99} }
	var rounds []Round
	for r := 1; r <= 3; r++ {
		f := float64(r) // every round's figures scale alike: medians are round 2's
		rd := Round{Index: r}
		for target, added := range map[string]float64{"direct": 0, "revproxy": 100, "new": 120, "old": 200} {
			for _, w := range []string{"alpha/json", "alpha/sse"} {
				rd.Latency = append(rd.Latency, LatencyRow{Phase: "c1", Workload: w, Target: target, Metric: "total", Dist: dist(1000+added*f, 2000)},
					LatencyRow{Phase: "open1000", Workload: w, Target: target, Metric: "total", Dist: dist(1000, 1000+added*10*f)})
				if w == "alpha/sse" {
					rd.Latency = append(rd.Latency, LatencyRow{Phase: "c1", Workload: w, Target: target, Metric: "first", Dist: dist(500+added*f, 900)})
				}
				rd.Closed = append(rd.Closed, ClosedRow{Workload: w, Target: target, Conc: 8, Requests: 1000, RPS: 1000, CPUPerReqUS: 100 + added*f, ClientCPUPerReqUS: 50})
				rd.Open = append(rd.Open, OpenRow{Workload: w, Target: target, Rate: 1000, Sent: 8000})
			}
			if target != "direct" {
				rd.Streams = append(rd.Streams, StreamRow{Target: target, Streams: 1000, IdleAnon: 5, PeakAnon: 20 + added/10*f,
					Samples: []StreamSample{{Open: 0, AnonMB: 5}, {Open: 1000, AnonMB: 20 + added/10*f}}})
			}
		}
		rounds = append(rounds, rd)
	}
	s := summarize(rounds, cfg)
	find := func(target, workload, metric string) C1Summary {
		for _, c := range s.C1 {
			if c.Target == target && c.Workload == workload && c.Metric == metric {
				return c
			}
		}
		t.Fatalf("no c1 summary for %s %s %s", target, workload, metric)
		return C1Summary{}
	}
	if c := find("new", "alpha/json", "total"); c.AddedP50 != 240 || math.Abs(float64(c.RatioAddedP50)-1.2) > 1e-9 {
		t.Errorf("new c=1: added p50 %v, ratio %v; want 240, 1.2", c.AddedP50, c.RatioAddedP50)
	}
	if c := find("direct", "alpha/json", "total"); !math.IsNaN(float64(c.AddedP50)) {
		t.Errorf("direct has an added latency: %v", c.AddedP50)
	}
	goals := evaluateGoals(s, cfg)
	met := map[string]bool{}
	for _, g := range goals {
		met[g.Target+" "+g.Name+" "+g.Workload] = g.Met
	}
	for name, want := range map[string]bool{
		"new c=1 added p50 (total) ≤ 1.5× revproxy's alpha/json":         true,  // 240/200
		"old c=1 added p50 (total) ≤ 1.5× revproxy's alpha/json":         false, // 400/200
		"new c=1 added p50 (first) ≤ 1.5× revproxy's alpha/sse":          true,
		"new CPU a request at c=8 ≤ 1.5× revproxy's alpha/sse":           true,  // 340/300
		"old CPU a request at c=8 ≤ 1.5× revproxy's alpha/json":          false, // 500/300
		"new open loop 1000/s: p99 ≤ 2× revproxy's, no error alpha/json": true,  // 3400/3000
		"old open loop 1000/s: p99 ≤ 2× revproxy's, no error alpha/json": true,  // 5000/3000
		"new peak RssAnon, 1000 streams open, ≤ 1.2× old's ":             true,  // 44/60
	} {
		if got, ok := met[name]; !ok || got != want {
			t.Errorf("%q: met %v (stated: %v), want %v", name, got, ok, want)
		}
	}
	// Per gateway: c=1 (JSON to the end, SSE to first content), CPU and
	// open loop for both workloads; and the new one's RssAnon against old.
	if len(goals) != 2*6+1 {
		t.Errorf("%d goals, want 13: %v", len(goals), met)
	}

	dir := t.TempDir()
	rep := &Report{Name: "test", Settings: cfg.settings(), Rounds: rounds, Summary: s, Goals: goals}
	samples := map[curveKey][]float64{}
	for _, target := range cfg.targetNames {
		for i := range 500 {
			samples[curveKey{"c1", "alpha/json", target, "total"}] = append(samples[curveKey{"c1", "alpha/json", target, "total"}], float64(1000+i))
		}
	}
	if err := writeReport(rep, samples, dir); err != nil {
		t.Fatal(err)
	}
	if c := checkFiles(dir, rep); !c.OK || len(rep.Plots) != 2 {
		t.Fatalf("%+v, plots %v", c, rep.Plots)
	}
	md, err := os.ReadFile(filepath.Join(dir, "report.md"))
	if err != nil || !strings.Contains(string(md), "| new | c=1 added p50 (total) ≤ 1.5× revproxy's | alpha/json | added p50 240 µs | met (1.20×) |") {
		t.Errorf("report.md lacks the goal line:\n%s", md)
	}
}

// A traced gateway's CPU a request is compared with the first untraced
// gateway's, workload by workload, against the 1.1× limit.
func TestTracingGoals(t *testing.T) {
	cfg, err := parseConfig([]string{"-gateway", "llmgw=bin/llmgw", "-gateway", "traced=bin/llmgw", "-traced", "traced"})
	if err != nil {
		t.Fatal(err)
	}
	s := Summary{Closed: []ClosedSummary{
		{Workload: "alpha/json", Target: "llmgw", CPUPerReq: 100},
		{Workload: "alpha/json", Target: "traced", CPUPerReq: 108},
		{Workload: "alpha/sse", Target: "llmgw", CPUPerReq: 100},
		{Workload: "alpha/sse", Target: "traced", CPUPerReq: 125},
	}}
	got := tracingGoals(s, cfg, "traced")
	if len(got) != 2 || !got[0].Met || got[1].Met || float64(got[1].Measured) != 1.25 {
		t.Fatalf("goals %+v", got)
	}
	if _, err := parseConfig([]string{"-traced", "nope"}); err == nil {
		t.Fatal("-traced of an unknown gateway accepted")
	}
}
