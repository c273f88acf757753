// Command gwbench is `make bench`: llmgw against a bare reverse proxy
// (hack/bench/revproxy) and against calling the mock providers directly,
// every target its own process in front of the same two `llmgw mockprovider`
// processes. It reaches them only as a user does: command lines, HTTP,
// /metrics, /proc/PID and the gateway's SQLite ledger file. It writes
// report.json, report.md and PNG plots; docs/BENCHMARK.md has the method.
//
// Every round has two parts, each on fresh processes after a warm-up:
//
//  1. streams: -streams slow streams opened through the reverse proxy and
//     each gateway in turn, their anonymous memory (RssAnon) and goroutines
//     sampled against the streams open;
//  2. load: closed loop at c=1 with the targets interleaved (latency added
//     over direct), closed loop at -conc (each process's CPU a request), and
//     open loop at each of -rates (latency from the scheduled send time).
//
// After each part every gateway is stopped and its ledger counted: one
// final record a request sent, every one a success.
package main

import (
	"context"
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
	cur      *Round
	errs     map[string]*errLog     // by "round phase workload target"
	samples  map[curveKey][]float64 // latencies in µs, all rounds pooled, for the plots
	failures []error
}

type curveKey struct{ Phase, Workload, Target, Metric string }

func (b *bench) errLog(phase string, w Workload, t *target) *errLog {
	k := fmt.Sprintf("round %d %s %s %s", b.round, phase, w, t.name)
	if b.errs[k] == nil {
		b.errs[k] = &errLog{}
	}
	return b.errs[k]
}

// fail records a problem that leaves the run's results incomplete.
func (b *bench) fail(err error) {
	fmt.Fprintln(os.Stderr, "gwbench:", err)
	b.failures = append(b.failures, err)
}

// phase runs f and prints how long it took and the load average around it.
func (b *bench) phase(name string, f func()) {
	start := time.Now()
	fmt.Printf("  %-36s load %s", name, loadavg())
	f()
	fmt.Printf(" → %s  (%.1fs)\n", loadavg(), time.Since(start).Seconds())
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

	rep := &Report{Name: cfg.name, Started: started.UTC().Format(time.RFC3339), Machine: machineInfo(), Settings: cfg.settings()}
	b := &bench{cfg: cfg, errs: map[string]*errLog{}, samples: map[curveKey][]float64{}}
	fmt.Printf("gwbench: %d round(s), targets %v, %s (%d CPUs), load %s\n", cfg.rounds, rep.Settings.Targets, rep.Machine.CPU, rep.Machine.CPUs, loadavg())
	for r := 1; r <= cfg.rounds && ctx.Err() == nil; r++ {
		b.round = r
		b.cur = &Round{Index: r}
		fmt.Printf("round %d/%d\n", r, cfg.rounds)
		for _, part := range []struct {
			name string
			f    func(context.Context, *env)
		}{{"streams", b.streamsPart}, {"load", b.loadPart}} {
			e, err := startEnv(ctx, cfg, filepath.Join(tmp, fmt.Sprintf("round-%d-%s", r, part.name)))
			if err != nil {
				return nil, "", fmt.Errorf("round %d, %s: %w", r, part.name, err)
			}
			if rep.Targets == nil {
				rep.Targets = e.infos()
			}
			b.phase("warm-up", func() { b.warmUp(ctx, e) })
			part.f(ctx, e)
			records, err := e.stop()
			if err != nil {
				b.fail(fmt.Errorf("round %d, %s: stopping: %w", r, part.name, err))
			}
			for i := range records {
				records[i].Part = part.name
				fmt.Printf("  ledger %s: %d records for %d requests %v\n", records[i].Target, records[i].Records, records[i].Requests, records[i].ByStatus)
			}
			b.cur.Records = append(b.cur.Records, records...)
		}
		rep.Rounds = append(rep.Rounds, *b.cur)
	}
	if ctx.Err() != nil {
		return nil, "", ctx.Err()
	}
	rep.Seconds = time.Since(started).Seconds()
	rep.Summary = summarize(rep.Rounds, cfg)
	rep.Goals = evaluateGoals(rep.Summary, cfg)
	rep.Checks = b.checks(rep)
	if err := writeReport(rep, b.samples, dir); err != nil {
		return nil, "", err
	}
	rep.Checks = append(rep.Checks, checkFiles(dir, rep))
	return rep, dir, nil
}

// streamsPart opens the slow streams through every target that has a
// process of its own (direct's would be the shared mock's).
func (b *bench) streamsPart(ctx context.Context, e *env) {
	for _, t := range b.rotated(e.targets) {
		if t.kind != kindDirect {
			b.phase(fmt.Sprintf("streams %d %s", b.cfg.streams, t.name), func() { b.streams(ctx, e, t) })
		}
	}
}

func (b *bench) loadPart(ctx context.Context, e *env) {
	order := b.rotated(e.targets)
	for _, w := range b.cfg.workloads {
		b.phase("c=1 "+w.String(), func() { b.closedC1(ctx, e, w) })
	}
	for _, w := range b.cfg.workloads {
		b.phase(fmt.Sprintf("c=%d %s", b.cfg.conc, w), func() { b.closedN(ctx, e, w, order) })
	}
	for _, rate := range b.cfg.rates {
		for _, w := range b.cfg.openWorkloads {
			for _, t := range order {
				b.phase(fmt.Sprintf("open %g/s %s %s", rate, w, t.name), func() { b.openLoop(ctx, w, t, rate) })
			}
		}
	}
}

// rotated is the targets in this round's order: rotated by one each round,
// so none is always measured first or right after another's load.
func (b *bench) rotated(ts []*target) []*target {
	k := (b.round - 1) % len(ts)
	return append(slices.Clone(ts[k:]), ts[:k]...)
}

// checks are the run's correctness conditions: any failure fails the run.
func (b *bench) checks(rep *Report) []Check {
	var out []Check
	total, detail := 0, ""
	keys := make([]string, 0, len(b.errs))
	for k := range b.errs {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if n, samples := b.errs[k].count(); n > 0 {
			total += n
			if len(detail) < 2000 {
				detail += fmt.Sprintf("%s: %d errors, e.g. %q; ", k, n, samples)
			}
		}
	}
	if total == 0 {
		detail = "no request failed (warm-ups included)"
	}
	out = append(out, Check{Name: "zero errors", OK: total == 0, Detail: detail})
	for _, r := range rep.Rounds {
		for _, rec := range r.Records {
			d := fmt.Sprintf("round %d %s %s: %d records for %d requests, by status %v", r.Index, rec.Part, rec.Target, rec.Records, rec.Requests, rec.ByStatus)
			if rec.Error != "" {
				d += ": " + rec.Error
			}
			out = append(out, Check{Name: "records == requests", OK: rec.OK, Detail: d})
		}
	}
	c := Check{Name: "run complete", OK: true, Detail: "every phase measured; every process stopped cleanly"}
	if err := errors.Join(b.failures...); err != nil {
		c = Check{Name: "run complete", Detail: err.Error()}
	}
	return append(out, c)
}
