// Command gwbench is `make bench`: llmgw against a bare reverse proxy and
// against calling the mock providers directly, each target its own
// process, all in front of the same `llmgw mockprovider` processes, in one
// run that writes report.json, report.md and PNG plots.
//
// Per round (fresh processes every round): warm-up; many concurrent slow
// streams (RSS and goroutines against streams open, back to idle after);
// every process restarted, so that the load phases measure fresh ones;
// closed loop at c=1 with the targets interleaved (added latency over
// direct); closed loop at -conc (throughput, each process's own CPU per
// request); open loop at fixed rates, latency from the scheduled send time.
// Then every gateway is stopped and its SQLite ledger counted against the
// requests sent to it. docs/BENCHMARK.md explains the method.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"syscall"
	"time"
)

func main() {
	cfg, err := parseConfig(os.Args[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, "gwbench:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	run := run
	if cfg.render != "" {
		run = rerender
	}
	rep, dir, err := run(ctx, cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "gwbench:", err)
		os.Exit(1)
	}
	fmt.Printf("\nreport: %s\n", filepath.Join(dir, "report.md"))
	failed := false
	for _, c := range rep.Checks {
		if !c.OK {
			fmt.Fprintf(os.Stderr, "gwbench: check failed: %s: %s\n", c.Name, c.Detail)
			failed = true
		}
	}
	if failed {
		os.Exit(1)
	}
}

// bench is the state of one run.
type bench struct {
	cfg      *config
	round    int
	env      *roundEnv
	cur      *Round
	errLogs  map[string]*errLog
	raw      map[curveKey][]time.Duration
	startRSS map[string]float64
	failures []error
}

type curveKey struct{ phase, workload, target, metric string }

func (b *bench) errs(phase string, w Workload, t *target) *errLog {
	k := fmt.Sprintf("round %d %s %s %s", b.round, phase, w, t.spec.Name)
	if b.errLogs[k] == nil {
		b.errLogs[k] = &errLog{}
	}
	return b.errLogs[k]
}

// fail records a problem that makes the run's results incomplete.
func (b *bench) fail(err error) {
	fmt.Fprintln(os.Stderr, "gwbench:", err)
	b.failures = append(b.failures, err)
}

// addLatency records a round's distribution and keeps the samples for the
// all-rounds percentile curves.
func (b *bench) addLatency(phase string, w Workload, t *target, s *samples) {
	add := func(metric string, d []time.Duration) {
		k := curveKey{phase, w.String(), t.spec.Name, metric}
		b.raw[k] = append(b.raw[k], d...)
		b.cur.Latency = append(b.cur.Latency, LatencyRow{Phase: phase, Workload: w.String(), Target: t.spec.Name, Metric: metric, Dist: summarize(d)})
	}
	add("total", s.total)
	if w.SSE {
		add("first", s.first)
	}
}

// phase runs f and records the load average around it.
func (b *bench) phase(name string, f func()) {
	start, l0 := time.Now(), loadavg()
	fmt.Printf("  %-34s load %s", name, l0)
	f()
	l1 := loadavg()
	b.cur.Phases = append(b.cur.Phases, PhaseLoad{Phase: name, Start: l0, End: l1, Seconds: time.Since(start).Seconds()})
	fmt.Printf(" → %s  (%.1fs)\n", l1, time.Since(start).Seconds())
}

func run(ctx context.Context, cfg *config) (*Report, string, error) {
	started := time.Now()
	dir := cfg.outDir
	if dir == "" {
		dir = filepath.Join(cfg.out, started.Format("2006-01-02")+"-"+cfg.name)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, "", err
	}
	tmp, err := os.MkdirTemp("", "llmgw-gwbench-")
	if err != nil {
		return nil, "", err
	}
	defer os.RemoveAll(tmp)
	cfg.targetLlmgw, cfg.targetRevproxy = cfg.llmgwBin, cfg.revproxyBin
	if cfg.freshBinaries {
		if err := stageBinaries(filepath.Join(tmp, "bin"), cfg); err != nil {
			return nil, "", err
		}
	}

	rep := &Report{Name: cfg.name, Started: started.UTC().Format(time.RFC3339), Machine: machineInfo(cfg.llmgwBin), Settings: cfg.settings()}
	b := &bench{cfg: cfg, errLogs: map[string]*errLog{}, raw: map[curveKey][]time.Duration{}}
	fmt.Printf("gwbench: %d round(s), targets %v, machine %s (%d CPUs), load %s\n",
		cfg.rounds, rep.Settings.Targets, rep.Machine.CPU, rep.Machine.CPUs, loadavg())
	for r := 1; r <= cfg.rounds && ctx.Err() == nil; r++ {
		b.round = r
		rd, infos, err := b.runRound(ctx, filepath.Join(tmp, fmt.Sprintf("round-%d", r)))
		if err != nil {
			return nil, "", fmt.Errorf("round %d: %w", r, err)
		}
		rep.Rounds = append(rep.Rounds, *rd)
		if rep.Targets == nil {
			rep.Targets = infos
		}
	}
	if ctx.Err() != nil {
		return nil, "", ctx.Err()
	}
	rep.Seconds = time.Since(started).Seconds()
	rep.Summary = summarizeRounds(rep.Rounds)
	rep.Goals = evaluateGoals(rep.Summary, cfg.targets)
	rep.Checks = b.checks(rep)
	rep.Curves = b.curves()
	if err := writeReport(rep, dir); err != nil {
		return nil, "", err
	}
	rep.Checks = append(rep.Checks, checkFiles(dir, rep))
	return rep, dir, nil
}

// runRound starts fresh processes and runs every phase once.
func (b *bench) runRound(ctx context.Context, dir string) (*Round, []TargetInfo, error) {
	cfg := b.cfg
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, nil, err
	}
	fmt.Printf("round %d/%d\n", b.round, cfg.rounds)
	env, err := startRound(ctx, cfg, cfg.targets, dir)
	if err != nil {
		return nil, nil, err
	}
	defer env.stopAll()
	b.env = env
	b.cur = &Round{Index: b.round}
	b.startRSS = map[string]float64{}
	var infos []TargetInfo
	for _, t := range env.targets {
		m, _ := t.ownForStreams(env).mem()
		b.startRSS[t.spec.Name] = float64(m.rss) / mb
		infos = append(infos, TargetInfo{Name: t.spec.Name, Kind: string(t.spec.Kind), Command: t.command})
	}
	// The order of the targets within a phase rotates from round to round,
	// so none is always measured first (or right after another's load).
	order := slices.Clone(env.targets)
	k := (b.round - 1) % len(order)
	order = append(order[k:], order[:k]...)
	for _, t := range order {
		b.cur.Order = append(b.cur.Order, t.spec.Name)
	}

	b.phase("warm-up", func() { b.warmUp(ctx, cfg.warmup) })
	// Streams come first: a fresh process's VmHWM is then the streams'
	// peak, and idle is idle after the warm-up, not after the load tests.
	for _, t := range order {
		b.phase(fmt.Sprintf("streams %d %s", cfg.streams, t.spec.Name), func() { b.streamsPhase(ctx, t) })
	}
	var restartErr error
	b.phase("restart", func() { restartErr = env.restart(ctx) })
	if restartErr != nil {
		return nil, nil, fmt.Errorf("restarting the processes after the streams: %w", restartErr)
	}
	for _, w := range cfg.workloads {
		b.phase("c=1 "+w.String(), func() { b.closedC1(ctx, w, cfg.c1N) })
	}
	for _, w := range cfg.workloads {
		b.phase(fmt.Sprintf("c=%d %s", cfg.conc, w), func() { b.closedN(ctx, w, order, cfg.conc, cfg.concDur, cfg.concSlices) })
	}
	for _, rate := range cfg.rates {
		for _, w := range cfg.openWorkloads {
			for _, t := range order {
				b.phase(fmt.Sprintf("open %g/s %s %s", rate, w, t.spec.Name), func() { b.openLoop(ctx, w, t, rate, cfg.openDur) })
			}
		}
	}
	if ctx.Err() != nil {
		return nil, nil, ctx.Err()
	}
	records, err := env.stopTargets(ctx)
	if err != nil {
		b.fail(fmt.Errorf("round %d: stopping targets: %w", b.round, err))
	}
	b.cur.Records = records
	for _, r := range records {
		fmt.Printf("  ledger %s: %d records for %d requests %v\n", r.Target, r.Records, r.Requests, r.ByStatus)
	}
	return b.cur, infos, nil
}

// checks are the run's correctness conditions: any failure fails the run.
func (b *bench) checks(rep *Report) []Check {
	var out []Check
	total, detail := 0, ""
	keys := make([]string, 0, len(b.errLogs))
	for k := range b.errLogs {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		n, samples := b.errLogs[k].count()
		if n > 0 {
			total += n
			if len(detail) < 2000 {
				detail += fmt.Sprintf("%s: %d errors, e.g. %q; ", k, n, samples)
			}
		}
	}
	requests := 0
	for _, r := range rep.Rounds {
		for _, c := range r.Closed {
			requests += c.Requests
		}
		for _, o := range r.Open {
			requests += o.Sent
		}
		for _, s := range r.Streams {
			requests += s.Streams
		}
	}
	if total == 0 {
		detail = fmt.Sprintf("0 failed of %d measured requests (warm-ups included in the check)", requests)
	}
	out = append(out, Check{Name: "zero errors", OK: total == 0, Detail: detail})
	for _, r := range rep.Rounds {
		for _, rec := range r.Records {
			d := fmt.Sprintf("round %d %s: %d records, %d requests sent, by status %v", r.Index, rec.Target, rec.Records, rec.Requests, rec.ByStatus)
			if rec.Error != "" {
				d += ": " + rec.Error
			}
			out = append(out, Check{Name: "usage records == requests", OK: rec.OK, Detail: d})
		}
	}
	var ferr error
	for _, e := range b.failures {
		ferr = errors.Join(ferr, e)
	}
	if ferr != nil {
		out = append(out, Check{Name: "run complete", OK: false, Detail: ferr.Error()})
	} else {
		out = append(out, Check{Name: "run complete", OK: true, Detail: "every phase measured; every process stopped cleanly"})
	}
	return out
}

// curves are the percentile curves of all rounds' samples together.
func (b *bench) curves() []Curve {
	var out []Curve
	for k, d := range b.raw {
		c := Curve{Phase: k.phase, Workload: k.workload, Target: k.target, Metric: k.metric}
		if !plotted(c) {
			continue
		}
		slices.Sort(d)
		out = append(out, Curve{Phase: k.phase, Workload: k.workload, Target: k.target, Metric: k.metric, N: len(d), Points: curve(d)})
	}
	slices.SortFunc(out, func(a, c Curve) int {
		for _, x := range [][2]string{{a.Phase, c.Phase}, {a.Workload, c.Workload}, {a.Metric, c.Metric}, {a.Target, c.Target}} {
			if x[0] != x[1] {
				if x[0] < x[1] {
					return -1
				}
				return 1
			}
		}
		return 0
	})
	return out
}

// rerender rebuilds a report's Markdown and plots from its report.json, so
// a change to the presentation (or to how medians and verdicts are drawn
// from the rounds) reaches an earlier run without measuring again. The
// checks stay those recorded when the run measured.
func rerender(_ context.Context, cfg *config) (*Report, string, error) {
	dir := cfg.render
	b, err := os.ReadFile(filepath.Join(dir, "report.json"))
	if err != nil {
		return nil, "", err
	}
	var rep Report
	if err := json.Unmarshal(b, &rep); err != nil {
		return nil, "", fmt.Errorf("%s: %w", dir, err)
	}
	var specs []targetSpec
	for _, t := range rep.Targets {
		specs = append(specs, targetSpec{Name: t.Name, Kind: kind(t.Kind)})
	}
	rep.Summary = summarizeRounds(rep.Rounds)
	rep.Goals = evaluateGoals(rep.Summary, specs)
	rep.Checks = slices.DeleteFunc(rep.Checks, func(c Check) bool { return c.Name == "report files written" })
	if err := writeReport(&rep, dir); err != nil {
		return nil, "", err
	}
	rep.Checks = append(rep.Checks, checkFiles(dir, &rep))
	return &rep, dir, nil
}
