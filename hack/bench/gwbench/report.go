package main

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// writeReport writes the plots, report.json and report.md into dir.
func writeReport(rep *Report, samples map[curveKey][]float64, dir string) error {
	files, err := writePlots(rep, samples, dir)
	if err != nil {
		return fmt.Errorf("plots: %w", err)
	}
	rep.Plots = files
	b, err := json.MarshalIndent(rep, "", " ")
	if err != nil {
		return fmt.Errorf("report.json: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "report.json"), append(b, '\n'), 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "report.md"), []byte(markdown(rep)), 0o644)
}

// checkFiles verifies that every file the report names was written and is
// not empty.
func checkFiles(dir string, rep *Report) Check {
	names := append([]string{"report.json", "report.md"}, rep.Plots...)
	var missing []string
	for _, n := range names {
		if fi, err := os.Stat(filepath.Join(dir, n)); err != nil || fi.Size() == 0 {
			missing = append(missing, n)
		}
	}
	if len(missing) > 0 || len(rep.Plots) == 0 {
		return Check{Name: "report files written", Detail: fmt.Sprintf("missing or empty: %v (plots: %d)", missing, len(rep.Plots))}
	}
	return Check{Name: "report files written", OK: true, Detail: fmt.Sprintf("%d files in %s", len(names), dir)}
}

func fmtNum(v Num, format string) string {
	if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
		return "n/a"
	}
	return fmt.Sprintf(format, float64(v))
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

func fmtMB(v Num) string { return fmtNum(v, "%.1f MB") }

func fmtGoal(g Goal) string {
	m := fmtNum(g.Measured, "%.2f×")
	switch {
	case g.Met:
		return "met (" + m + ")"
	case math.IsNaN(float64(g.Measured)):
		return "**not met or not measured**"
	}
	return fmt.Sprintf("**missed**: %s against ≤ %g×", m, float64(g.Limit))
}

func markdown(rep *Report) string {
	var b strings.Builder
	p := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	m, st, s := rep.Machine, rep.Settings, rep.Summary
	started, _ := time.Parse(time.RFC3339, rep.Started)
	p("# llmgw benchmark: %s, %s\n\n", rep.Name, started.Format("2006-01-02 15:04 MST"))
	if st.Note != "" {
		p("> %s\n\n", st.Note)
	}
	p("`make bench` (hack/bench/gwbench) on %s (%d CPUs, %s), %d round(s), %.1f min, work tree %s. "+
		"Method: [docs/BENCHMARK.md](../../BENCHMARK.md). Every figure is the median of the rounds; ratios are between medians.\n\n",
		m.CPU, m.CPUs, m.MemTotal, st.Rounds, rep.Seconds/60, orNA(m.Commit))

	p("## Issue 42's limits\n\n| target | limit | workload | measured | verdict |\n|---|---|---|---|---|\n")
	for _, g := range rep.Goals {
		p("| %s | %s | %s | %s | %s |\n", g.Target, g.Name, orDash(g.Workload), g.Detail, fmtGoal(g))
	}
	p("\n## Correctness\n\n| check | result | detail |\n|---|---|---|\n")
	for _, c := range rep.Checks {
		r := "ok"
		if !c.OK {
			r = "**FAILED**"
		}
		p("| %s | %s | %s |\n", c.Name, r, strings.ReplaceAll(c.Detail, "|", `\|`))
	}

	p("\n## Closed loop, c=1: latency added over direct\n\n"+
		"One request to each target in turn, in a random order each turn, %d measured turns a workload and round. "+
		"*added* = the target's percentile − direct's in the same round. SSE: *first* is to the first content event, *total* to the end.\n\n", st.C1N)
	p("| workload | metric | target | p50 | p99 | added p50 | added p99 | added p50 vs revproxy |\n|---|---|---|---:|---:|---:|---:|---:|\n")
	for _, c := range s.C1 {
		p("| %s | %s | %s | %s | %s | %s | %s | %s |\n", c.Workload, c.Metric, c.Target, fmtUS(c.P50), fmtUS(c.P99),
			fmtUS(c.AddedP50), fmtUS(c.AddedP99), fmtNum(c.RatioAddedP50, "%.2f×"))
	}

	p("\n## Closed loop, c=%d: CPU a request\n\n"+
		"Each target alone for %.1f s a workload and round, in %d slices taken in turns (the order rotating each slice). "+
		"*CPU* is the target process's user+system time (/proc/PID/stat) over the requests it completed; for direct, the mock's. "+
		"The mock's and this client's CPU are context: they do the same work whatever the target.\n\n", st.Conc, st.ConcSeconds, st.ConcSlices)
	p("| workload | target | req/s | CPU/req | vs revproxy | mock CPU/req | client CPU/req | p50 | p99 | errors |\n|---|---|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, c := range s.Closed {
		p("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %d |\n", c.Workload, c.Target, fmtNum(c.RPS, "%.0f"), fmtUS(c.CPUPerReq),
			fmtNum(c.RatioCPU, "%.2f×"), fmtUS(c.MockCPU), fmtUS(c.ClientCPU), fmtUS(c.P50), fmtUS(c.P99), c.Errors)
	}

	p("\n## Open loop\n\nRequests on a fixed schedule for %.0f s a target, workload and rate, whatever the answers do; "+
		"latency counts from the scheduled send time. *send lag* is how late this client itself sent.\n\n", st.OpenSeconds)
	p("| rate | workload | target | p50 | p99 | p99.9 | max | p99 vs revproxy | errors / sent | send lag p99 |\n|---:|---|---|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, o := range s.Open {
		p("| %g/s | %s | %s | %s | %s | %s | %s | %s | %d / %d | %s |\n", o.Rate, o.Workload, o.Target, fmtUS(o.P50), fmtUS(o.P99),
			fmtUS(o.P999), fmtUS(o.Max), fmtNum(o.RatioP99, "%.2f×"), o.Errors, o.Sent, fmtUS(o.SendLagP99))
	}

	p("\n## %d concurrent slow streams\n\n"+
		"%s streams of %d pieces %d ms apart, opened at %g a second through each target in turn. "+
		"*anon* is RssAnon (/proc/PID/status, sampled every 50 ms): the process's own memory (heap, stacks, runtime), which the load changes; "+
		"*RSS* (VmRSS, with VmHWM for the peak) also counts the pages of the binary the kernel has mapped in. Goroutines from /metrics. MB = 10^6 bytes.\n\n",
		st.Streams, st.StreamProto, st.StreamChunks, st.StreamDelayMs, st.StreamRamp)
	p("| target | anon idle | anon peak | RSS idle | RSS peak | goroutines idle / peak / after | errors |\n|---|---:|---:|---:|---:|---:|---:|\n")
	for _, ss := range s.Streams {
		p("| %s | %s | %s | %s | %s | %s / %s / %s | %d |\n", ss.Target, fmtMB(ss.IdleAnon), fmtMB(ss.PeakAnon), fmtMB(ss.IdleRSS), fmtMB(ss.PeakRSS),
			fmtNum(ss.IdleGoroutines, "%.0f"), fmtNum(ss.PeakGoroutines, "%.0f"), fmtNum(ss.AfterGoroutines, "%.0f"), ss.Errors)
	}

	p("\n## Plots\n\nPercentile curves pool the samples of all rounds (x: percentile on a log scale of 1/(1−p); y: latency, log scale). " +
		"The streams plot shows the last round.\n\n")
	for _, f := range rep.Plots {
		p("![%s](%s)\n\n", strings.TrimSuffix(f, ".png"), f)
	}

	p("## Targets and settings\n\nEvery target is its own process; all share two mock processes (alpha: OpenAI protocol, beta: Anthropic style). " +
		"Every round has two parts on fresh processes (streams, then the loops), each after a warm-up. " +
		"Every answer is read to the end and checked (status 200, content, one end-of-stream marker); a failure is an error, never a fast sample.\n\n")
	p("| target | command |\n|---|---|\n")
	for _, t := range rep.Targets {
		p("| %s | `%s` |\n", t.Name, t.Command)
	}
	names := make([]string, 0, len(st.Gateways))
	for n := range st.Gateways {
		names = append(names, n)
	}
	sort.Strings(names)
	p("\n| setting | value |\n|---|---|\n| mocks | `%s mockprovider`, %d content pieces an answer |\n", st.Mocks, st.MockChunks)
	for _, n := range names {
		p("| gateway %s | `%s`, --log-level %s |\n", n, st.Gateways[n], st.LogLevel)
	}
	p("| rounds | %d (target order rotated each round) |\n| workloads | %s; open loop %s |\n| warm-up | %d sequential requests a workload and target |\n",
		st.Rounds, strings.Join(st.Workloads, ", "), strings.Join(st.OpenWorkloads, ", "), st.Warmup)
	p("| Go (gwbench) | %s |\n| kernel | %s |\n", m.Go, m.Kernel)
	return b.String()
}

func orNA(s string) string {
	if s == "" {
		return "n/a"
	}
	return s
}

func orDash(s string) string {
	if s == "" {
		return "—"
	}
	return s
}
