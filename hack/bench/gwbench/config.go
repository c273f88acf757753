package main

import (
	"flag"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// config is the run's settings; Settings is its JSON form in the report.
type config struct {
	llmgwBin, revproxyBin string
	// targetLlmgw and targetRevproxy are what the targets run: copies of
	// the two made at the start of the run (stage.go), or the same files
	// with -fresh-binaries=false. The mocks run llmgwBin.
	targetLlmgw, targetRevproxy string
	freshBinaries               bool
	targets                     []targetSpec
	workloads                   []Workload
	openWorkloads               []Workload
	rounds                      int
	warmup                      int
	c1N, c1Warmup               int
	conc                        int
	concDur, concWarmup         time.Duration
	concSlices                  int
	rates                       []float64
	openDur, openWarmup         time.Duration
	streams                     int
	streamRamp                  float64
	streamChunks                int
	streamDelayMs               int
	streamProto                 string
	settle                      time.Duration
	heapProfiles                string // -heap-profiles: where to keep the heap profile after each wave; "" none
	chunks                      int
	gatewayLogLevel             string
	seed                        uint64
	name, out, outDir           string
	note                        string
	smoke                       bool
	render                      string
}

// Settings is the config as the report records it.
type Settings struct {
	Rounds        int      `json:"rounds"`
	Targets       []string `json:"targets"`
	Workloads     []string `json:"workloads"`
	OpenWorkloads []string `json:"open_workloads"`
	Warmup        int      `json:"warmup_per_workload_target"`
	C1N           int      `json:"c1_requests_per_target"`
	C1Warmup      int      `json:"c1_warmup"`
	Conc          int      `json:"concurrency"`
	ConcSeconds   float64  `json:"concurrency_seconds"`
	// ConcSlices: the targets took turns in this many slices of the c=N
	// phase (0 in reports before 2026-12-05: one window per target).
	ConcSlices      int       `json:"concurrency_slices,omitempty"`
	Rates           []float64 `json:"open_rates"`
	OpenSeconds     float64   `json:"open_seconds"`
	Streams         int       `json:"streams"`
	StreamRamp      float64   `json:"stream_ramp_per_s"`
	StreamChunks    int       `json:"stream_chunks"`
	StreamDelayMs   int       `json:"stream_chunk_delay_ms"`
	StreamProto     string    `json:"stream_protocol"`
	SettleSeconds   float64   `json:"settle_seconds"`
	MockChunks      int       `json:"mock_chunks"`
	GatewayLogLevel string    `json:"gateway_log_level"`
	Seed            uint64    `json:"seed"`
	// FreshBinaries: the targets ran from copies written at the start of
	// the run (false in reports before 2026-12-04's eighth round).
	FreshBinaries bool   `json:"fresh_binaries,omitempty"`
	Smoke         bool   `json:"smoke"`
	Note          string `json:"note,omitempty"`
}

func (c *config) settings() Settings {
	s := Settings{Rounds: c.rounds, Warmup: c.warmup, C1N: c.c1N, C1Warmup: c.c1Warmup, Conc: c.conc,
		ConcSeconds: c.concDur.Seconds(), ConcSlices: c.concSlices, Rates: c.rates, OpenSeconds: c.openDur.Seconds(), Streams: c.streams,
		StreamRamp: c.streamRamp, StreamChunks: c.streamChunks, StreamDelayMs: c.streamDelayMs, StreamProto: c.streamProto,
		SettleSeconds: c.settle.Seconds(), MockChunks: c.chunks, GatewayLogLevel: c.gatewayLogLevel, Seed: c.seed,
		Smoke: c.smoke, Note: c.note, FreshBinaries: c.freshBinaries}
	for _, t := range c.targets {
		s.Targets = append(s.Targets, t.Name)
	}
	for _, w := range c.workloads {
		s.Workloads = append(s.Workloads, w.String())
	}
	for _, w := range c.openWorkloads {
		s.OpenWorkloads = append(s.OpenWorkloads, w.String())
	}
	return s
}

// smokePreset is -smoke: every phase, tiny, for CI (correctness only).
var smokePreset = map[string]string{
	"rounds": "1", "warmup": "5", "c1-n": "50", "c1-warmup": "5", "conc-dur": "500ms", "conc-warmup": "100ms", "conc-slices": "2",
	"rates": "200", "open-dur": "1s", "open-warmup": "0s", "open-workloads": "alpha/json,beta/sse",
	"streams": "50", "stream-ramp": "200", "stream-chunks": "4", "stream-delay-ms": "100", "settle": "5s",
}

func parseConfig(args []string) (*config, error) {
	c := &config{}
	fs := flag.NewFlagSet("gwbench", flag.ContinueOnError)
	var targets, workloads, openWorkloads, rates string
	var variants variantFlag
	fs.StringVar(&c.llmgwBin, "llmgw", "bin/llmgw", "the llmgw binary (mock providers and the gateway)")
	fs.StringVar(&c.revproxyBin, "revproxy", "bin/bench-revproxy", "the reverse proxy binary (hack/bench/revproxy)")
	fs.BoolVar(&c.freshBinaries, "fresh-binaries", true, "run the targets from copies of -llmgw and -revproxy written at the start of the run, so that every run finds them in the page cache in the same state (stage.go); false runs the files themselves")
	fs.StringVar(&targets, "targets", "direct,revproxy,llmgw", "targets to compare, each its own process: direct, revproxy, llmgw (and -variant names)")
	fs.Var(&variants, "variant", "an extra gateway target NAME='--flag value ...' ({dir} = its temp dir); repeatable")
	fs.StringVar(&workloads, "workloads", "alpha/json,alpha/sse,beta/json,beta/sse", "request shapes: protocol/mode")
	fs.StringVar(&openWorkloads, "open-workloads", "", "workloads of the open-loop phase (default: -workloads)")
	fs.IntVar(&c.rounds, "rounds", 3, "rounds: every measure is repeated on fresh processes, medians reported")
	fs.IntVar(&c.warmup, "warmup", 100, "sequential requests per workload and target at the start of a round")
	fs.IntVar(&c.c1N, "c1-n", 3000, "c=1: measured requests per target and workload (targets interleaved)")
	fs.IntVar(&c.c1Warmup, "c1-warmup", 100, "c=1: unrecorded rounds of requests first")
	fs.IntVar(&c.conc, "conc", 8, "closed-loop concurrency of the throughput and CPU phase")
	fs.DurationVar(&c.concDur, "conc-dur", 3*time.Second, "length of that phase per target and workload")
	fs.IntVar(&c.concSlices, "conc-slices", 6, "slices of -conc-dur in which the targets take turns, the order rotating each slice (1: one window per target)")
	fs.DurationVar(&c.concWarmup, "conc-warmup", 500*time.Millisecond, "unrecorded time before it")
	fs.StringVar(&rates, "rates", "1000", "open-loop rates, requests a second, comma-separated")
	fs.DurationVar(&c.openDur, "open-dur", 8*time.Second, "open-loop length per rate, target and workload")
	fs.DurationVar(&c.openWarmup, "open-warmup", 500*time.Millisecond, "unrecorded open-loop time at the same rate before it")
	fs.IntVar(&c.streams, "streams", 1000, "concurrent slow streams")
	fs.Float64Var(&c.streamRamp, "stream-ramp", 500, "streams opened a second")
	fs.IntVar(&c.streamChunks, "stream-chunks", 16, "content pieces of a slow stream")
	fs.IntVar(&c.streamDelayMs, "stream-delay-ms", 400, "ms between a slow stream's pieces")
	fs.StringVar(&c.streamProto, "stream-proto", "alpha", "protocol of the slow streams: alpha or beta")
	fs.StringVar(&c.heapProfiles, "heap-profiles", "", "a directory to keep the heap profile read after each wave of streams (go tool pprof -diff_base to compare the waves)")
	fs.DurationVar(&c.settle, "settle", 15*time.Second, "after the streams: how long goroutines may take to return to idle")
	fs.IntVar(&c.chunks, "chunks", 4, "content pieces of a normal mock answer")
	fs.StringVar(&c.gatewayLogLevel, "gateway-log-level", "info", "llmgw --log-level (info, the default, logs one line per request)")
	fs.Uint64Var(&c.seed, "seed", 1, "seed of the c=1 interleaving order")
	fs.StringVar(&c.name, "name", "run", "short name of the report directory <out>/<YYYY-MM-DD>-<name>")
	fs.StringVar(&c.out, "out", "docs/benchmarks", "parent of the report directory")
	fs.StringVar(&c.outDir, "out-dir", "", "exact report directory (overrides -out and -name)")
	fs.StringVar(&c.note, "note", "", "a remark printed at the top of the report (e.g. what else ran on the machine)")
	fs.BoolVar(&c.smoke, "smoke", false, "tiny settings for CI; explicit flags still win; asserts correctness only")
	fs.StringVar(&c.render, "render", "", "measure nothing: re-render DIR/report.md and the plots from DIR/report.json (medians and verdicts recomputed from its rounds)")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if c.smoke {
		set := map[string]bool{}
		fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
		for k, v := range smokePreset {
			if !set[k] {
				if err := fs.Set(k, v); err != nil {
					return nil, fmt.Errorf("smoke preset %s: %w", k, err)
				}
			}
		}
	}
	var err error
	if c.targets, err = selectTargets(targets, variants); err != nil {
		return nil, fmt.Errorf("-targets: %w", err)
	}
	if c.workloads, err = parseWorkloads(workloads); err != nil {
		return nil, fmt.Errorf("-workloads: %w", err)
	}
	if openWorkloads == "" {
		c.openWorkloads = c.workloads
	} else if c.openWorkloads, err = parseWorkloads(openWorkloads); err != nil {
		return nil, fmt.Errorf("-open-workloads: %w", err)
	}
	for _, w := range c.openWorkloads {
		if !containsWorkload(c.workloads, w) {
			c.workloads = append(c.workloads, w)
		}
	}
	for _, f := range strings.Split(rates, ",") {
		r, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
		if err != nil || r <= 0 || r > 100_000 {
			return nil, fmt.Errorf("-rates: %q is not a rate in (0, 100000]", f)
		}
		c.rates = append(c.rates, r)
	}
	switch {
	case c.rounds < 1:
		return nil, fmt.Errorf("-rounds must be at least 1")
	case c.c1N < 1 || c.conc < 1 || c.concSlices < 1 || c.streams < 1 || c.streamChunks < 1 || c.streamRamp <= 0 || c.chunks < 1:
		return nil, fmt.Errorf("-c1-n, -conc, -conc-slices, -streams, -stream-chunks, -stream-ramp and -chunks must be positive")
	case c.streamProto != "alpha" && c.streamProto != "beta":
		return nil, fmt.Errorf("-stream-proto must be alpha or beta")
	case strings.ContainsAny(c.name, "/ "):
		return nil, fmt.Errorf("-name must be one path element without spaces")
	}
	return c, nil
}

func containsWorkload(ws []Workload, w Workload) bool {
	for _, x := range ws {
		if x == w {
			return true
		}
	}
	return false
}

func itoa(n int) string { return strconv.Itoa(n) }
