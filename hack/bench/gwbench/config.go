package main

import (
	"flag"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// config is the run's settings; Settings is what the report records of it.
type config struct {
	mocks, revproxy   string
	gateways          []gatewayFlag
	gatewayArgs       []string
	rssBaseline       string
	traced            map[string]bool // gateway targets that export traces
	workloads         []Workload
	openWorkloads     []Workload
	rounds, warmup    int
	c1N, c1Warmup     int
	conc, concSlices  int
	concDur           time.Duration
	concWarmup        time.Duration
	rates             []float64
	openDur           time.Duration
	openWarmup        time.Duration
	streams           int
	streamRamp        float64
	streamChunks      int
	streamDelayMs     int
	streamProto       string
	chunks            int
	gatewayLogLevel   string
	seed              uint64
	name, out, outDir string
	note              string
	smoke             bool
	targetNames       []string
	gatewayByName     map[string]string
	streamWorkload    Workload
}

// Settings is the config as the report records it.
type Settings struct {
	Targets       []string          `json:"targets"`
	Gateways      map[string]string `json:"gateways"` // name: binary
	GatewayArgs   []string          `json:"gateway_args,omitempty"`
	Traced        []string          `json:"traced,omitempty"`
	Mocks         string            `json:"mocks"`
	Rounds        int               `json:"rounds"`
	Workloads     []string          `json:"workloads"`
	OpenWorkloads []string          `json:"open_workloads"`
	Warmup        int               `json:"warmup"`
	C1N           int               `json:"c1_requests"`
	Conc          int               `json:"concurrency"`
	ConcSeconds   float64           `json:"concurrency_seconds"`
	ConcSlices    int               `json:"concurrency_slices"`
	Rates         []float64         `json:"open_rates"`
	OpenSeconds   float64           `json:"open_seconds"`
	Streams       int               `json:"streams"`
	StreamRamp    float64           `json:"stream_ramp_per_s"`
	StreamChunks  int               `json:"stream_chunks"`
	StreamDelayMs int               `json:"stream_chunk_delay_ms"`
	StreamProto   string            `json:"stream_protocol"`
	MockChunks    int               `json:"mock_chunks"`
	LogLevel      string            `json:"gateway_log_level"`
	Smoke         bool              `json:"smoke"`
	Note          string            `json:"note,omitempty"`
}

func (c *config) settings() Settings {
	s := Settings{Targets: c.targetNames, Gateways: c.gatewayByName, GatewayArgs: c.gatewayArgs, Mocks: c.mocks, Rounds: c.rounds,
		Warmup: c.warmup, C1N: c.c1N, Conc: c.conc, ConcSeconds: c.concDur.Seconds(), ConcSlices: c.concSlices, Rates: c.rates,
		OpenSeconds: c.openDur.Seconds(), Streams: c.streams, StreamRamp: c.streamRamp, StreamChunks: c.streamChunks,
		StreamDelayMs: c.streamDelayMs, StreamProto: c.streamProto, MockChunks: c.chunks, LogLevel: c.gatewayLogLevel,
		Smoke: c.smoke, Note: c.note}
	for _, n := range c.targetNames {
		if c.traced[n] {
			s.Traced = append(s.Traced, n)
		}
	}
	for _, w := range c.workloads {
		s.Workloads = append(s.Workloads, w.String())
	}
	for _, w := range c.openWorkloads {
		s.OpenWorkloads = append(s.OpenWorkloads, w.String())
	}
	return s
}

// gatewayFlag is one -gateway NAME=BINARY: a gateway target.
type gatewayFlag struct{ name, bin string }

type gatewayFlags []gatewayFlag

func (g *gatewayFlags) String() string { return "" }

func (g *gatewayFlags) Set(s string) error {
	name, bin, ok := strings.Cut(s, "=")
	if !ok || name == "" || bin == "" || strings.ContainsAny(name, " ,/") || name == "direct" || name == "revproxy" {
		return fmt.Errorf("want NAME=BINARY (NAME not direct or revproxy), e.g. llmgw=bin/llmgw")
	}
	*g = append(*g, gatewayFlag{name, bin})
	return nil
}

// smokePreset is -smoke: every phase, tiny, for CI (correctness only).
var smokePreset = map[string]string{
	"rounds": "1", "warmup": "5", "c1-n": "50", "c1-warmup": "5", "conc-dur": "500ms", "conc-warmup": "100ms", "conc-slices": "2",
	"rates": "200", "open-dur": "1s", "open-warmup": "0s", "open-workloads": "alpha/json,beta/sse",
	"streams": "50", "stream-ramp": "200", "stream-chunks": "4", "stream-delay-ms": "100",
}

func parseConfig(args []string) (*config, error) {
	c := &config{}
	fs := flag.NewFlagSet("gwbench", flag.ContinueOnError)
	var gateways gatewayFlags
	var workloads, openWorkloads, rates, gatewayArgs, traced string
	fs.StringVar(&c.mocks, "mocks", "bin/llmgw", "the llmgw binary that runs the mock providers (llmgw mockprovider)")
	fs.Var(&gateways, "gateway", "a gateway target NAME=BINARY (an llmgw binary); repeatable (default llmgw=bin/llmgw)")
	fs.StringVar(&gatewayArgs, "gateway-args", "", "extra `llmgw gateway` flags for every gateway target, space-separated")
	fs.StringVar(&c.revproxy, "revproxy", "bin/bench-revproxy", "the reverse proxy binary (hack/bench/revproxy)")
	fs.StringVar(&traced, "traced", "", "comma-separated -gateway NAMEs that export every request's spans (OTEL_TRACES_SAMPLER=always_on, OTLP/HTTP) to a local receiver (llmgw mockprovider --flavor otlp from -mocks); the others run with tracing off")
	fs.StringVar(&c.rssBaseline, "rss-baseline", "", "a -gateway NAME whose peak RssAnon with the streams open the other gateways must stay within 1.2× of")
	fs.StringVar(&workloads, "workloads", "alpha/json,alpha/sse,beta/json,beta/sse", "request shapes: protocol/mode")
	fs.StringVar(&openWorkloads, "open-workloads", "", "workloads of the open loop (default: -workloads)")
	fs.IntVar(&c.rounds, "rounds", 3, "rounds: every measure is repeated on fresh processes, medians reported")
	fs.IntVar(&c.warmup, "warmup", 100, "sequential requests per workload and target before each part of a round")
	fs.IntVar(&c.c1N, "c1-n", 3000, "c=1: measured requests per target and workload (targets interleaved)")
	fs.IntVar(&c.c1Warmup, "c1-warmup", 100, "c=1: unrecorded turns first")
	fs.IntVar(&c.conc, "conc", 8, "concurrency of the closed loop that measures CPU a request")
	fs.DurationVar(&c.concDur, "conc-dur", 3*time.Second, "its length per target and workload")
	fs.IntVar(&c.concSlices, "conc-slices", 6, "slices of -conc-dur in which the targets take turns, the order rotating each slice")
	fs.DurationVar(&c.concWarmup, "conc-warmup", 500*time.Millisecond, "unrecorded time per target before it")
	fs.StringVar(&rates, "rates", "1000", "open-loop rates, requests a second, comma-separated")
	fs.DurationVar(&c.openDur, "open-dur", 8*time.Second, "open-loop length per rate, target and workload")
	fs.DurationVar(&c.openWarmup, "open-warmup", 500*time.Millisecond, "unrecorded open-loop time at the same rate first")
	fs.IntVar(&c.streams, "streams", 1000, "concurrent slow streams")
	fs.Float64Var(&c.streamRamp, "stream-ramp", 500, "streams opened a second")
	fs.IntVar(&c.streamChunks, "stream-chunks", 16, "content pieces of a slow stream")
	fs.IntVar(&c.streamDelayMs, "stream-delay-ms", 400, "ms between a slow stream's pieces")
	fs.StringVar(&c.streamProto, "stream-proto", "alpha", "protocol of the slow streams: alpha or beta")
	fs.IntVar(&c.chunks, "chunks", 4, "content pieces of a normal mock answer")
	fs.StringVar(&c.gatewayLogLevel, "gateway-log-level", "info", "llmgw gateway --log-level (info, the default, logs one line a request)")
	fs.Uint64Var(&c.seed, "seed", 1, "seed of the c=1 interleaving order")
	fs.StringVar(&c.name, "name", "run", "short name of the report directory <out>/<YYYY-MM-DD>-<name>")
	fs.StringVar(&c.out, "out", "docs/benchmarks", "parent of the report directory")
	fs.StringVar(&c.outDir, "out-dir", "", "exact report directory (overrides -out and -name)")
	fs.StringVar(&c.note, "note", "", "a remark printed at the top of the report (e.g. what else ran on the machine)")
	fs.BoolVar(&c.smoke, "smoke", false, "tiny settings for CI, explicit flags still win; asserts correctness only")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments %q", fs.Args())
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
	if len(gateways) == 0 {
		gateways = gatewayFlags{{"llmgw", "bin/llmgw"}}
	}
	c.gateways, c.gatewayArgs = gateways, strings.Fields(gatewayArgs)
	c.targetNames = []string{"direct", "revproxy"}
	c.gatewayByName = map[string]string{}
	for _, g := range gateways {
		if c.gatewayByName[g.name] != "" {
			return nil, fmt.Errorf("-gateway %s twice", g.name)
		}
		c.gatewayByName[g.name] = g.bin
		c.targetNames = append(c.targetNames, g.name)
	}
	c.traced = map[string]bool{}
	for _, n := range strings.Split(traced, ",") {
		if n = strings.TrimSpace(n); n == "" {
			continue
		}
		if c.gatewayByName[n] == "" {
			return nil, fmt.Errorf("-traced %q is not a -gateway name", n)
		}
		c.traced[n] = true
	}
	if c.rssBaseline != "" && c.gatewayByName[c.rssBaseline] == "" {
		return nil, fmt.Errorf("-rss-baseline %q is not a -gateway name", c.rssBaseline)
	}
	var err error
	if c.workloads, err = parseWorkloads(workloads); err != nil {
		return nil, fmt.Errorf("-workloads: %w", err)
	}
	if openWorkloads == "" {
		c.openWorkloads = c.workloads
	} else if c.openWorkloads, err = parseWorkloads(openWorkloads); err != nil {
		return nil, fmt.Errorf("-open-workloads: %w", err)
	}
	for _, w := range c.openWorkloads {
		if !slices.Contains(c.workloads, w) {
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
	case c.rounds < 1 || c.c1N < 1 || c.conc < 1 || c.concSlices < 1 || c.streams < 1 || c.streamChunks < 1 || c.streamRamp <= 0 || c.chunks < 1:
		return nil, fmt.Errorf("-rounds, -c1-n, -conc, -conc-slices, -streams, -stream-chunks, -stream-ramp and -chunks must be positive")
	case c.streamProto != "alpha" && c.streamProto != "beta":
		return nil, fmt.Errorf("-stream-proto must be alpha or beta")
	case c.outDir == "" && (c.name == "" || strings.ContainsAny(c.name, "/ ")):
		return nil, fmt.Errorf("-name must be one path element without spaces")
	}
	c.streamWorkload = Workload{Proto: c.streamProto, SSE: true}
	return c, nil
}
