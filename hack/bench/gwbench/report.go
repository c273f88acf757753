package main

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// writeReport writes the plots, report.json and report.md into dir.
func writeReport(rep *Report, dir string) error {
	files, err := writePlots(rep, dir)
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

func fmtVerdict(v Verdict, unit string) string {
	m := fmtMeasured(v.Measured, unit)
	if unit == "rounds" {
		m += " of " + fmtNum(v.Limit, "%.0f") + " rounds"
	}
	switch {
	case v.Met:
		return "met (" + m + ")"
	case math.IsNaN(float64(v.Measured)):
		return "**not measured**"
	case unit == "rounds":
		return "**missed**: " + m
	}
	return fmt.Sprintf("**missed by %s**: %s against ≤ %s", fmtNum(v.Over*100, "%.0f %%"), m, fmtMeasured(v.Limit, unit))
}

func fmtMeasured(v Num, unit string) string {
	switch unit {
	case "×":
		return fmtNum(v, "%.2f×")
	case "MB":
		return fmtNum(v, "%.1f MB")
	}
	return fmtNum(v, "%.0f")
}

func markdown(rep *Report) string {
	var b strings.Builder
	p := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	m, st := rep.Machine, rep.Settings
	started, _ := time.Parse(time.RFC3339, rep.Started)
	p("# llmgw benchmark: %s, %s\n\n", rep.Name, started.Format("2006-01-02 15:04 MST"))
	if st.Note != "" {
		p("> %s\n\n", st.Note)
	}
	first, last := "n/a", "n/a"
	if n := len(rep.Rounds); n > 0 && len(rep.Rounds[0].Phases) > 0 {
		first = rep.Rounds[0].Phases[0].Start
		ph := rep.Rounds[n-1].Phases
		last = ph[len(ph)-1].End
	}
	vm := ""
	if m.Hypervisor {
		vm = ", a VM"
	}
	p("`make bench` (hack/bench/gwbench) on %s (%d CPUs%s), %d round(s), %.1f min; load average (1, 5, 15 min) %s at the start, %s at the end. Work tree %s. ",
		m.CPU, m.CPUs, vm, st.Rounds, rep.Seconds/60, first, last, orNA(m.Commit))
	p("Method: [docs/BENCHMARK.md](../../BENCHMARK.md). Every figure below is the median of the rounds unless it says otherwise; ratios are between those medians.\n\n")

	p("## Issue 12's targets\n\n")
	if len(rep.Goals) == 0 {
		p("No gateway target was measured.\n\n")
	} else {
		p("| target | goal | workload | measured | verdict |\n|---|---|---|---|---|\n")
		for _, g := range rep.Goals {
			p("| %s | %s | %s | %s | %s |\n", g.Target, g.Name, orDash(g.Workload), orDash(g.Detail), fmtVerdict(g.Verdict, g.Unit))
		}
		p("\n")
	}
	p("## Correctness\n\n| check | result | detail |\n|---|---|---|\n")
	for _, c := range rep.Checks {
		r := "ok"
		if !c.OK {
			r = "**FAILED**"
		}
		p("| %s | %s | %s |\n", c.Name, r, mdEscape(c.Detail))
	}
	p("| report files written | checked after writing | report.json, report.md and %d plots |\n\n", len(rep.Plots))

	s := rep.Summary
	p("## Closed loop, c=1: latency and latency added over direct\n\n")
	p("One request to each target in turn, in a random order per turn, %d measured turns per workload and round: every target sees the same moments of the machine. "+
		"*added* = the target's percentile − direct's, per round. SSE: *first* is the time to the first content byte, *total* to the end of the stream.\n\n", st.C1N)
	p("| workload | metric | target | p50 | p99 | p99.9 | added p50 | added p99 | added p50 vs revproxy |\n|---|---|---|---:|---:|---:|---:|---:|---:|\n")
	for _, l := range s.Latency {
		if l.Phase != "c1" {
			continue
		}
		p("| %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", l.Workload, l.Metric, l.Target, fmtUS(l.P50), fmtUS(l.P99), fmtUS(l.P999),
			fmtUS(l.AddedP50), fmtUS(l.AddedP99), fmtNum(l.RatioAddedP50, "%.2f×"))
	}
	p("\n## Closed loop, c=%d: throughput and each process's own CPU per request\n\n", st.Conc)
	if st.ConcSlices > 1 {
		p("Each target alone for %.1f s per workload and round, in %d slices of %.2f s: the targets take turns, the order rotating every slice, so a slower stretch of a shared machine falls on all of them; "+
			"each slice starts with an unmeasured lead-in. ", st.ConcSeconds, st.ConcSlices, st.ConcSeconds/float64(st.ConcSlices))
	} else {
		p("Each target alone for %.1f s per workload and round. ", st.ConcSeconds)
	}
	p("*own CPU* is the target process's user+system time (/proc/PID/stat) over the requests it completed; " +
		"for direct that is the mock's. The mock's and the client's (this tool's) CPU are shown for context: the client does the same work a request whatever the target, so where its CPU a request differs between targets, the machine's speed did.\n\n")
	p("| workload | target | req/s | vs revproxy | own CPU/req | vs revproxy | mock CPU/req | client CPU/req | p50 | p99 | errors |\n|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, c := range s.Closed {
		l, _ := findLat(s.Latency, "c"+itoa(c.Conc), c.Workload, "total", c.Target)
		mock := fmtNum(c.MockCPU, "%.0f µs")
		if c.Target == "direct" {
			mock = "(own)"
		}
		p("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %d |\n", c.Workload, c.Target, fmtNum(c.RPS, "%.0f"), fmtNum(c.RatioRPS, "%.2f×"),
			fmtNum(c.CPUPerReq, "%.0f µs"), fmtNum(c.RatioCPU, "%.2f×"), mock, fmtNum(c.ClientCPU, "%.0f µs"), fmtUS(l.P50), fmtUS(l.P99), c.Errors)
	}
	for _, rate := range st.Rates {
		phase := "open" + itoa(int(rate))
		p("\n## Open loop, %g requests a second, %.0f s per target and workload\n\n", rate, st.OpenSeconds)
		p("Requests are sent on a fixed schedule whatever the answers do; latency counts from the scheduled send time, so a stall is paid by every request queued behind it. " +
			"*send lag* is how late this client itself sent (part of every latency, for every target alike).\n\n")
		p("| workload | metric | target | p50 | p90 | p99 | p99.9 | max | p99 vs revproxy | p99.9 vs revproxy | errors / sent | send lag p99 |\n|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
		for _, l := range s.Latency {
			if l.Phase != phase {
				continue
			}
			errs, lag := "—", "—"
			for _, o := range s.Open {
				if o.Workload == l.Workload && o.Target == l.Target && o.Rate == rate {
					errs, lag = fmt.Sprintf("%d / %d", o.Errors, o.Sent), fmtUS(o.SendLagP99)
				}
			}
			p("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", l.Workload, l.Metric, l.Target, fmtUS(l.P50), fmtUS(l.P90), fmtUS(l.P99),
				fmtUS(l.P999), fmtUS(l.Max), fmtNum(l.RatioP99, "%.2f×"), fmtNum(l.RatioP999, "%.2f×"), errs, lag)
		}
	}
	p("\n## %d concurrent slow streams (%s, %d pieces %d ms apart, opened at %g a second)\n\n", st.Streams, st.StreamProto, st.StreamChunks, st.StreamDelayMs, st.StreamRamp)
	p("RSS is the target process's. For direct that is mock %s, which also serves the other targets' streams (the order rotates each round), so direct's memory figures say how the mock grew, not what one wave costs. *start*: right after startup; *idle*: after the warm-up, before the streams; *peak*: max of VmHWM and VmRSS sampled every 50 ms, through the first wave of streams; "+
		"*after*: once the last wave closed and goroutines settled (Go returns freed memory to the OS lazily, so RSS is reported, not judged). "+
		"Goroutines, heap in use (spans holding objects) and the live heap (the objects' bytes, go_memstats_heap_alloc_bytes) come from the target's /metrics; after each wave they are read after two GCs forced through /debug/pprof/heap?gc=1 where served, at idle without a forced GC (the heap idle includes garbage). "+
		"RSS is always read before any forced GC: the heap profile that forces it maps more of the binary (its symbol tables) and leaves garbage, which would be the instrument's memory, not the target's; idle and wave 1 therefore see no heap profile at all. "+
		"Where they exist a second, identical wave of streams follows the first. *Back to idle*: after each wave, goroutines less two per pooled upstream connection "+
		"(the target's HTTP client keeps up to 256 per host for reuse) within %d of idle; and the live heap after wave 2 within %.1f MB of where wave 1 left it "+
		"(heap in use where the live heap is not exposed: it also counts the free slots of half-empty spans, which move by a megabyte or two from wave to wave), "+
		"so what stays is bounded (pooled connections, grown tables) and nothing grows per stream. MB = 10^6 bytes.\n\n", st.StreamProto, goroutineSlack, heapSlackMB(st.Streams))
	p("| target | start RSS | idle RSS | peak RSS | peak RSS wave 2 | after RSS | goroutines idle / peak / after | heap in use idle / after wave 1 / after wave 2 | live heap idle / after wave 1 / after wave 2 | back to idle | errors |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, ss := range s.Streams {
		p("| %s | %s | %s | %s | %s | %s | %s / %s / %s | %s / %s / %s | %s / %s / %s | %d of %d rounds | %d |\n", ss.Target, fmtNum(ss.StartRSS, "%.1f MB"), fmtNum(ss.IdleRSS, "%.1f MB"),
			fmtNum(ss.PeakRSS, "%.1f MB"), fmtNum(ss.Wave2Peak, "%.1f MB"), fmtNum(ss.AfterRSS, "%.1f MB"), fmtNum(ss.IdleGor, "%.0f"), fmtNum(ss.PeakGor, "%.0f"), fmtNum(ss.AfterGor, "%.0f"),
			fmtNum(ss.IdleHeap, "%.1f MB"), fmtNum(ss.AfterHeap, "%.1f MB"), fmtNum(ss.Wave2Heap, "%.1f MB"),
			fmtNum(ss.IdleLive, "%.1f MB"), fmtNum(ss.AfterLive, "%.1f MB"), fmtNum(ss.Wave2Live, "%.1f MB"), ss.BackRounds, ss.Rounds, ss.Errors)
	}
	for _, ss := range s.Streams {
		for _, r := range ss.Reasons {
			if r != "" && !strings.HasPrefix(r, "not judged") {
				p("\n- %s, not back to idle: %s", ss.Target, mdEscape(r))
			}
		}
	}
	if hasMemSplit(s.Streams) {
		p("\n\nWhat the RSS is made of (medians): *anonymous* is the process's own memory (heap, goroutine stacks, runtime), *file-backed* the pages of its binary the kernel has mapped in (RssFile in /proc/PID/status). " +
			"The file-backed part grows with the binary (every package's init touches its code and data, and the kernel maps each fault's neighbouring pages too), not with the load. " +
			"llmgw drops its mappings of those pages once it serves (--release-startup-pages, on by default; they stay in the page cache), so its file-backed part is what it has read since; the mock (direct) keeps them. " +
			"Peak: the sample of the highest sampled RSS. *Stacks*: the most the goroutine stacks held during the first wave (go_memstats_stack_inuse_bytes, part of the anonymous memory; where the target has /metrics). " +
			"*Touched in the wave*: of the file-backed pages, those the process accessed during the first wave (their accessed bits cleared through /proc/PID/clear_refs before it, the Referenced pages of its file mappings in /proc/PID/smaps after it); the rest stay mapped, clean page cache the kernel can take back under pressure. " +
			"*Mapped huge*: of the file-backed pages after the wave, those mapped as whole 2 MiB folios (FilePmdMapped): how a binary entered the page cache changes its file-backed RSS by about 10 MB for the same work (docs/BENCHMARK.md, eighth round).\n\n")
		p("| target | idle: anonymous / file-backed | peak: anonymous / file-backed | file-backed touched in the wave | mapped huge | peak stacks |\n|---|---:|---:|---:|---:|---:|\n")
		for _, ss := range s.Streams {
			p("| %s | %s / %s | %s / %s | %s | %s | %s |\n", ss.Target, fmtNum(ss.IdleAnon, "%.1f MB"), fmtNum(ss.IdleFile, "%.1f MB"), fmtNum(ss.PeakAnon, "%.1f MB"), fmtNum(ss.PeakFile, "%.1f MB"), fmtNum(ss.FileTouched, "%.1f MB"), fmtNum(ss.FileHuge, "%.1f MB"), fmtNum(ss.PeakStack, "%.1f MB"))
		}
	}
	p("\n\n## Usage ledger\n\nAfter each round every gateway was stopped (SIGTERM) and its SQLite ledger opened with gateway/usage: one final record per request sent, every one a success.\n\n")
	p("The last columns are the window the finish journal opens: how long a final record was a journal line only, from the request's answer to the commit of its row (`%s`, every phase of the round; p50 and p99 are the upper bounds of their histogram buckets).\n\n", journalLagMetric)
	p("*Operations a transaction* is the ledger writer's mean batch over the round (`%s` / `%s`): a request's begin and finish are one operation when the begin was held and merged.\n\n", ledgerOpsMetric, ledgerTxMetric)
	p("| round | target | requests sent | records | by status | journal-only: records | mean | p50 ≤ | p99 ≤ | operations a transaction |\n|---:|---|---:|---:|---|---:|---:|---:|---:|---:|\n")
	for _, r := range rep.Rounds {
		for _, rec := range r.Records {
			p("| %d | %s | %d | %d | %v | %s | %s |\n", r.Index, rec.Target, rec.Requests, rec.Records, rec.ByStatus, lagCells(rec.JournalLag), batchCell(rec))
		}
	}
	p("\n## Plots\n\nPercentile curves pool the samples of all rounds (x: percentile on a log scale of 1/(1−p); y: latency, log scale). The streams plots show, per target, the round with the median peak RSS.\n\n")
	for _, f := range rep.Plots {
		p("![%s](%s)\n\n", strings.TrimSuffix(f, ".png"), f)
	}
	p("## Machine\n\n| | |\n|---|---|\n")
	p("| CPU | %s |\n| CPUs / GOMAXPROCS | %d / %d |\n| VM | %v |\n| memory | %s |\n| kernel | %s (%s) |\n| Go | %s (llmgw built with %s) |\n| work tree | %s |\n\n",
		m.CPU, m.CPUs, m.GOMAXPROCS, m.Hypervisor, orNA(m.MemTotal), m.Kernel, m.OS, m.Go, orNA(m.LlmgwGo), orNA(m.Commit))
	p("## Method and settings\n\n")
	p("Each target is its own process; all share the two mock processes (`llmgw mockprovider`, alpha: OpenAI protocol, beta: Anthropic style), started fresh with every round, as is every target. " +
		"The client (this tool) runs on the same machine, with keep-alive HTTP/1.1 connections to each target. Every answer is read to the end and checked (status 200, content, exactly one end-of-stream marker); a failure is an error, never a fast sample.\n\n")
	p("| target | process |\n|---|---|\n")
	for _, t := range rep.Targets {
		p("| %s | `%s` |\n", t.Name, t.Command)
	}
	p("\n| setting | value |\n|---|---|\n")
	p("| rounds | %d (target order rotated each round) |\n| workloads | %s |\n| warm-up | %d sequential requests per workload and target |\n", st.Rounds, strings.Join(st.Workloads, ", "), st.Warmup)
	p("| c=1 | %d measured turns (after %d) per workload |\n| c=%d | %.1f s per target and workload", st.C1N, st.C1Warmup, st.Conc, st.ConcSeconds)
	if st.ConcSlices > 1 {
		p(", in %d interleaved slices", st.ConcSlices)
	}
	p(" |\n")
	var rates []string
	for _, r := range st.Rates {
		rates = append(rates, fmt.Sprintf("%g", r))
	}
	p("| open loop | %s req/s, %.1f s each, workloads %s |\n", strings.Join(rates, ", "), st.OpenSeconds, strings.Join(st.OpenWorkloads, ", "))
	p("| streams | %d, %s, %d pieces %d ms apart, opened at %g/s; settle up to %.0f s |\n", st.Streams, st.StreamProto, st.StreamChunks, st.StreamDelayMs, st.StreamRamp, st.SettleSeconds)
	p("| mock answer | %d content pieces, no delay |\n| llmgw log level | %s |\n", st.MockChunks, st.GatewayLogLevel)
	binaries := "the files given (-fresh-binaries=false, or a report before the option)"
	if st.FreshBinaries {
		binaries = "copies written at the start of the run (the state a node has right after pulling an image), whatever read the originals before"
	}
	p("| targets' binaries | %s |\n\n", binaries)

	p("## Load average per phase\n\n| round | phase | load at start | load at end | seconds |\n|---:|---|---|---|---:|\n")
	for _, r := range rep.Rounds {
		for _, g := range phaseGroups(r.Phases) {
			p("| %d | %s | %s | %s | %.0f |\n", r.Index, g.Phase, g.Start, g.End, g.Seconds)
		}
	}
	p("\nreport.json has every phase's own load average and every round's figures.\n")
	return b.String()
}

// phaseGroups merges a round's consecutive phases of one kind (all
// "open 1000/s ..." phases, say) into one row.
func phaseGroups(ps []PhaseLoad) []PhaseLoad {
	var out []PhaseLoad
	for _, ph := range ps {
		g := ph.Phase
		if i := strings.IndexByte(g, ' '); i > 0 && !strings.HasPrefix(g, "open") && !strings.HasPrefix(g, "streams") {
			g = g[:i]
		} else if fields := strings.Fields(g); len(fields) >= 2 {
			g = fields[0] + " " + fields[1]
		}
		if n := len(out); n > 0 && out[n-1].Phase == g {
			out[n-1].End = ph.End
			out[n-1].Seconds += ph.Seconds
			continue
		}
		out = append(out, PhaseLoad{Phase: g, Start: ph.Start, End: ph.End, Seconds: ph.Seconds})
	}
	return slices.Clip(out)
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
	return mdEscape(s)
}

func mdEscape(s string) string { return strings.ReplaceAll(s, "|", `\|`) }

// lagCells are the journal-lag columns of one ledger row.
func batchCell(rec RecordRow) string {
	if rec.LedgerTransactions == 0 {
		return "–"
	}
	return fmt.Sprintf("%.1f (%d in %d)", float64(rec.LedgerOps)/float64(rec.LedgerTransactions), rec.LedgerOps, rec.LedgerTransactions)
}

func lagCells(h *LagHistogram) string {
	if h == nil || h.Count == 0 {
		return "– | – | – | –"
	}
	bound := func(q float64) string {
		v, _ := h.Quantile(q)
		if v == math.MaxFloat64 {
			return "above the last bucket"
		}
		return fmtMs(v * 1000)
	}
	return fmt.Sprintf("%d | %s | %s | %s", h.Count, fmtMs(h.Sum/float64(h.Count)*1000), bound(0.5), bound(0.99))
}

func fmtMs(ms float64) string {
	if ms < 1 {
		return fmt.Sprintf("%.2g ms", ms)
	}
	return fmt.Sprintf("%.3g ms", ms)
}

// hasMemSplit: some target's RSS was split into anonymous and file-backed
// (reports before 2026-12-01 have no split).
func hasMemSplit(ss []StreamSummary) bool {
	for _, x := range ss {
		if !math.IsNaN(float64(x.PeakFile)) {
			return true
		}
	}
	return false
}
