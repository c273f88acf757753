// Command latency measures the latency the llmgw gateway adds to a chat
// request, against calling the upstream (mock alpha) directly, in one run.
//
// It starts mock alpha and the gateway in this process, each a real
// http.Server on its own 127.0.0.1 listener (real TCP, real HTTP/1.1,
// keep-alive clients), with the real SQLite usage ledger in a temp dir. Then,
// per mode (JSON, SSE) and concurrency, every worker sends pairs of requests
// with the same body, one direct to the mock and one through the gateway, in
// random order per pair. Both paths therefore see the same machine at the
// same moment, and the difference of their distributions is the gateway's
// cost, with the neighbours' noise largely cancelled.
//
// Separately it measures process CPU time per request for each path in
// alternating ABBA blocks (robust to load: CPU a request uses does not grow
// when other processes compete) and throughput at high concurrency.
//
// Run it with `make bench`; docs/BENCHMARK.md explains the method and
// records results.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"time"
)

type config struct {
	n, warmup   int
	conc        []int
	streams     []bool
	levels      []string
	tputC       int
	tputDur     time.Duration
	cpuN        int
	chunks      int
	maxPhase    time.Duration
	seed        uint64
	cpuProfile  string
	gatewayOnly bool
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "latency:", err)
		os.Exit(1)
	}
}

func run() error {
	var cfg config
	var conc, stream, levels string
	flag.IntVar(&cfg.n, "n", 20000, "measured request pairs (direct + gateway) per phase")
	flag.IntVar(&cfg.warmup, "warmup", 1000, "unrecorded pairs before each phase")
	flag.StringVar(&conc, "c", "1,8", "comma-separated concurrencies for the paired latency phases")
	flag.StringVar(&stream, "stream", "both", "off (JSON), on (SSE) or both")
	flag.StringVar(&levels, "log", "warn", "gateway log level(s), comma-separated: warn (no per-request line) and/or info (one JSON line per request, to io.Discard)")
	flag.IntVar(&cfg.tputC, "tput-c", 64, "concurrency of the throughput phase (0: skip it)")
	flag.DurationVar(&cfg.tputDur, "tput-dur", 8*time.Second, "throughput phase length per path")
	flag.IntVar(&cfg.cpuN, "cpu-n", 4000, "requests per path for the CPU-per-request phase (0: skip it)")
	flag.IntVar(&cfg.chunks, "chunks", 4, "content pieces per mock answer (SSE events)")
	flag.DurationVar(&cfg.maxPhase, "max-phase", 3*time.Minute, "upper bound on each phase's wall time")
	flag.Uint64Var(&cfg.seed, "seed", 1, "seed of the per-pair order")
	flag.StringVar(&cfg.cpuProfile, "cpuprofile", "", "write a CPU profile of the measured phases to this file")
	flag.BoolVar(&cfg.gatewayOnly, "profile-gateway-only", false, "with -cpuprofile: send only gateway requests in the paired phases (a cleaner profile; no latency table)")
	flag.Parse()

	var err error
	if cfg.conc, err = parseInts(conc); err != nil {
		return fmt.Errorf("-c: %w", err)
	}
	switch stream {
	case "off":
		cfg.streams = []bool{false}
	case "on":
		cfg.streams = []bool{true}
	case "both":
		cfg.streams = []bool{false, true}
	default:
		return fmt.Errorf("-stream must be off, on or both")
	}
	for _, l := range strings.Split(levels, ",") {
		if l != "warn" && l != "info" {
			return fmt.Errorf("-log: %q is not warn or info", l)
		}
		cfg.levels = append(cfg.levels, l)
	}
	if cfg.n < 1 || cfg.n > 1_000_000 || cfg.warmup < 0 || cfg.chunks < 1 {
		return fmt.Errorf("-n must be in 1..1000000, -warmup >= 0, -chunks >= 1")
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	dir, err := os.MkdirTemp("", "llmgw-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	st, err := startStack(ctx, dir, cfg.chunks)
	if err != nil {
		return err
	}
	defer st.close()

	printHeader(&cfg)
	if cfg.cpuProfile != "" {
		f, err := os.Create(cfg.cpuProfile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}

	b := &bench{cfg: &cfg, st: st, client: newClient(max(cfg.tputC, maxInt(cfg.conc))), ctx: ctx}
	for _, lvl := range cfg.levels {
		st.level.Set(levelOf(lvl))
		for _, s := range cfg.streams {
			for _, c := range cfg.conc {
				if err := b.paired(s, c, lvl); err != nil {
					return err
				}
				if ctx.Err() != nil {
					return ctx.Err()
				}
			}
			if cfg.gatewayOnly {
				continue
			}
			if cfg.cpuN > 0 {
				if err := b.cpuPerRequest(s, lvl); err != nil {
					return err
				}
			}
			if cfg.tputC > 0 {
				if err := b.throughput(s, lvl); err != nil {
					return err
				}
			}
			if ctx.Err() != nil {
				return ctx.Err()
			}
		}
	}
	if len(b.summary) > 0 && !cfg.gatewayOnly {
		fmt.Printf("\n## Summary: added latency (SSE: to first content) against the aim of < 1000 µs at p99\n\n")
		fmt.Printf("| mode | concurrency | log | added p50 µs | added p99 µs | aim |\n|---|---:|---|---:|---:|---|\n")
		for _, l := range b.summary {
			fmt.Println(l)
		}
	}
	fmt.Printf("\nload average at the end: %s\n", loadavg())
	return nil
}

func printHeader(cfg *config) {
	fmt.Printf("# llmgw added latency: gateway vs direct to mock alpha\n\n")
	fmt.Printf("- date: %s\n", time.Now().UTC().Format(time.RFC3339))
	fmt.Printf("- machine: %s, nproc %d, GOMAXPROCS %d, %s %s/%s\n", cpuModel(), runtime.NumCPU(),
		runtime.GOMAXPROCS(0), runtime.Version(), runtime.GOOS, runtime.GOARCH)
	fmt.Printf("- load average at start: %s\n", loadavg())
	fmt.Printf("- settings: n=%d pairs/phase (after %d warm-up pairs), c=%v, mock chunks=%d, throughput c=%d for %s/path, CPU phase %d req/path\n",
		cfg.n, cfg.warmup, cfg.conc, cfg.chunks, cfg.tputC, cfg.tputDur, cfg.cpuN)
	fmt.Printf("- all times in µs; \"added\" = gateway percentile − direct percentile; \"paired Δ\" = percentiles of (gateway − direct) over pairs sent back to back\n")
}

func parseInts(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		v, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || v < 1 || v > 1024 {
			return nil, fmt.Errorf("%q is not a concurrency in 1..1024", f)
		}
		out = append(out, v)
	}
	return out, nil
}

func maxInt(v []int) int {
	m := 1
	for _, x := range v {
		m = max(m, x)
	}
	return m
}

func cpuModel() string {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return "unknown CPU"
	}
	for _, l := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "unknown CPU"
}

func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "n/a"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "n/a"
	}
	return strings.Join(f[:3], " ")
}

// jsonBody is the request both paths receive, byte for byte.
func jsonBody(stream bool) []byte {
	m := map[string]any{"model": model, "messages": []map[string]string{
		{"role": "system", "content": "You are terse"},
		{"role": "user", "content": "Tell me something deterministic please"}}}
	if stream {
		m["stream"] = true
		m["stream_options"] = map[string]bool{"include_usage": true}
	}
	b, _ := json.Marshal(m)
	return b
}
