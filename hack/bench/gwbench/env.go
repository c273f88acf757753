package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/llmgw/llmgw/api/keyformat"
	"github.com/llmgw/llmgw/api/snapshot"
	"github.com/llmgw/llmgw/gateway/usage"
)

// roundEnv is one round's processes: both mocks and every target, fresh.
type roundEnv struct {
	cfg               *config
	dir               string
	alpha, beta       *proc
	alphaURL, betaURL string
	alphaPort         int
	betaPort          int
	alphaKey, betaKey string
	gatewayKey        string
	targets           []*target
}

func (e *roundEnv) mock(proto string) *proc {
	if proto == "alpha" {
		return e.alpha
	}
	return e.beta
}

func randomSecret(prefix string) (string, error) {
	b := make([]byte, 24)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return prefix + hex.EncodeToString(b), nil
}

func writeSecret(path, s string) error { return os.WriteFile(path, []byte(s+"\n"), 0o600) }

// startRound starts the mocks, then every target, and waits until each
// answers. On error whatever started is stopped.
func startRound(ctx context.Context, cfg *config, specs []targetSpec, dir string) (env *roundEnv, err error) {
	env = &roundEnv{cfg: cfg, dir: dir}
	defer func() {
		if err != nil {
			env.stopAll()
		}
	}()
	if env.alphaKey, err = randomSecret("mock-alpha-"); err != nil {
		return nil, err
	}
	if env.betaKey, err = randomSecret("mock-beta-"); err != nil {
		return nil, err
	}
	if env.gatewayKey, _, _, err = keyformat.Generate(); err != nil {
		return nil, err
	}
	for _, m := range []struct {
		flavor string
		key    string
		p      **proc
		url    *string
		port   *int
	}{{"alpha", env.alphaKey, &env.alpha, &env.alphaURL, &env.alphaPort}, {"beta", env.betaKey, &env.beta, &env.betaURL, &env.betaPort}} {
		keyFile := filepath.Join(dir, "mock-"+m.flavor+".key")
		if err := writeSecret(keyFile, m.key); err != nil {
			return nil, err
		}
		if *m.port, err = freePort(); err != nil {
			return nil, err
		}
		addr := "127.0.0.1:" + strconv.Itoa(*m.port)
		if *m.p, err = startProc(dir, "mock-"+m.flavor, cfg.llmgwBin, "mockprovider", "--flavor", m.flavor, "--addr", addr,
			"--require-key-file", keyFile, "--default-chunks", strconv.Itoa(cfg.chunks), "--log-level", "warn"); err != nil {
			return nil, err
		}
		*m.url = "http://" + addr
		if err := waitReady(ctx, *m.p, *m.url+"/healthz", 20*time.Second); err != nil {
			return nil, err
		}
	}
	for _, spec := range specs {
		t, err := env.startTarget(ctx, spec)
		if err != nil {
			return nil, fmt.Errorf("target %s: %w", spec.Name, err)
		}
		env.targets = append(env.targets, t)
	}
	return env, nil
}

func (e *roundEnv) startTarget(ctx context.Context, spec targetSpec) (*target, error) {
	t := &target{spec: spec, eps: map[Workload]*endpoint{},
		client: &http.Client{Transport: newTransport(1024, true), Timeout: 2 * time.Minute}}
	switch spec.Kind {
	case kindDirect:
		t.command = "llmgw mockprovider (alpha or beta: the one a request's protocol names)"
		for _, w := range e.cfg.workloads {
			t.eps[w] = nativeEndpoint(e.mockURL(w.Proto), w, e.upstreamKey(w.Proto), "")
		}
		return t, nil
	case kindRevproxy:
		port, mport, err := twoPorts()
		if err != nil {
			return nil, err
		}
		args := []string{"-addr", loop(port), "-mgmt-addr", loop(mport), "-alpha", e.alphaURL, "-beta", e.betaURL}
		if t.proc, err = startProc(e.dir, spec.Name, e.cfg.targetRevproxy, args...); err != nil {
			return nil, err
		}
		t.command = "revproxy " + strings.Join(e.redact(args), " ")
		t.base, t.mgmt = "http://"+loop(port), "http://"+loop(mport)
		t.ready = t.base + "/healthz"
		if err := waitReady(ctx, t.proc, t.ready, 20*time.Second); err != nil {
			return nil, err
		}
		for _, w := range e.cfg.workloads {
			t.eps[w] = nativeEndpoint(t.base, w, e.upstreamKey(w.Proto), "")
		}
		return t, nil
	case kindGateway:
		return t, e.startGateway(ctx, t)
	}
	return nil, fmt.Errorf("unknown kind %q", spec.Kind)
}

func (e *roundEnv) startGateway(ctx context.Context, t *target) error {
	dir := filepath.Join(e.dir, t.spec.Name)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	snapPath := filepath.Join(dir, "snapshot.json")
	if err := writeGatewaySnapshot(snapPath, e); err != nil {
		return err
	}
	port, mport, err := twoPorts()
	if err != nil {
		return err
	}
	t.dbPath = filepath.Join(dir, "usage.db")
	args := []string{"gateway", "--snapshot", snapPath, "--db", t.dbPath, "--addr", loop(port), "--mgmt-addr", loop(mport),
		"--log-level", e.cfg.gatewayLogLevel, "--ip-rpm", "0"}
	for _, f := range t.spec.Flags {
		args = append(args, strings.ReplaceAll(f, "{dir}", dir))
	}
	if t.spec.Setup != nil {
		se := &sidecarEnv{Dir: dir}
		flags, err := t.spec.Setup(ctx, se)
		t.sidecars = se.procs
		if err != nil {
			return fmt.Errorf("setup: %w", err)
		}
		args = append(args, flags...)
	}
	if t.proc, err = startProc(dir, t.spec.Name, e.cfg.targetLlmgw, args...); err != nil {
		return err
	}
	t.command = "llmgw " + strings.Join(e.redact(args), " ")
	t.base, t.mgmt = "http://"+loop(port), "http://"+loop(mport)
	t.ready = t.base + "/health"
	if err := waitReady(ctx, t.proc, t.ready, 30*time.Second); err != nil {
		return err
	}
	for _, w := range e.cfg.workloads {
		t.eps[w] = gatewayEndpoint(t.base, w, e.gatewayKey, "")
	}
	return nil
}

// writeGatewaySnapshot writes the gateway's config: alias alpha-large to
// mock alpha, beta-large to mock beta, no fallback, credentials from files
// beside the snapshot, and limits out of reach.
func writeGatewaySnapshot(path string, e *roundEnv) error {
	dir := filepath.Dir(path)
	if err := writeSecret(filepath.Join(dir, "alpha.key"), e.alphaKey); err != nil {
		return err
	}
	if err := writeSecret(filepath.Join(dir, "beta.key"), e.betaKey); err != nil {
		return err
	}
	prefix, _ := keyformat.PrefixOf(e.gatewayKey)
	zero := 0
	long := snapshot.Timeouts{TotalMs: 300_000, AttemptMs: 300_000, FirstChunkMs: 60_000, IdleMs: 60_000}
	s := &snapshot.Snapshot{
		Providers: []snapshot.Provider{
			{Name: "alpha", Protocol: snapshot.ProtocolOpenAI, BaseURL: e.alphaURL, Credential: &snapshot.Credential{File: "alpha.key"}},
			{Name: "beta", Protocol: snapshot.ProtocolAnthropic, BaseURL: e.betaURL, Credential: &snapshot.Credential{File: "beta.key"}},
		},
		Aliases: []snapshot.Alias{
			{Name: model("alpha"), Primary: snapshot.Route{Provider: "alpha", Model: model("alpha")}, MaxFallbacks: &zero, Timeouts: long},
			{Name: model("beta"), Primary: snapshot.Route{Provider: "beta", Model: model("beta")}, MaxFallbacks: &zero, Timeouts: long},
		},
		Keys: []snapshot.Key{{ID: "bench", Prefix: prefix, Hash: keyformat.Hash(e.gatewayKey), Models: []string{"*"},
			RateLimit: snapshot.RateLimit{RPM: 100_000_000, Burst: 1_000_000}}},
		Limits: snapshot.Limits{MaxConcurrent: 1_000_000},
	}
	return snapshot.WriteFile(path, s)
}

func (e *roundEnv) mockURL(proto string) string {
	if proto == "alpha" {
		return e.alphaURL
	}
	return e.betaURL
}

func (e *roundEnv) upstreamKey(proto string) string {
	if proto == "alpha" {
		return e.alphaKey
	}
	return e.betaKey
}

// redact shows the round's temp dir as {dir}, so a command can be printed.
func (e *roundEnv) redact(args []string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = strings.ReplaceAll(a, e.dir, "{dir}")
	}
	return out
}

// stopTargets stops every target and its sidecars; gateways' ledgers are
// then counted. The mocks go last, so a draining target still reaches them.
func (e *roundEnv) stopTargets(ctx context.Context) ([]RecordRow, error) {
	var rows []RecordRow
	var errs []error
	for _, t := range e.targets {
		var lag *LagHistogram
		var writer map[string]float64
		if t.spec.Kind == kindGateway && t.mgmt != "" {
			// Scraped once, before the stop, and added to what the process
			// counted before its restart: the counts of the whole round.
			var err error
			if lag, writer, err = scrapeLedger(ctx, t.mgmt); err != nil {
				errs = append(errs, err)
			}
			lag = t.earlierLag.plus(lag)
			if writer == nil {
				writer = map[string]float64{}
			}
			for k, v := range t.earlierWriter {
				writer[k] += v
			}
		}
		if t.proc != nil {
			if err := t.proc.stop(40 * time.Second); err != nil {
				errs = append(errs, err)
			}
		}
		for _, s := range t.sidecars {
			_ = s.stop(10 * time.Second)
		}
		if t.spec.Kind == kindGateway {
			row := countRecords(ctx, t)
			row.JournalLag = lag
			row.LedgerOps, row.LedgerTransactions = uint64(writer[ledgerOpsMetric]), uint64(writer[ledgerTxMetric])
			rows = append(rows, row)
		}
	}
	e.targets = nil
	return rows, errors.Join(errs...)
}

// countRecords opens the stopped gateway's ledger with gateway/usage and
// compares its records with the requests sent: exactly one final record
// per request, each a success (no error was expected anywhere).
func countRecords(ctx context.Context, t *target) RecordRow {
	row := RecordRow{Target: t.spec.Name, Requests: int(t.sent.Load())}
	l, err := usage.Open(ctx, t.dbPath, usage.Options{})
	if err != nil {
		row.Error = err.Error()
		return row
	}
	defer l.Close()
	total, by, err := l.Count(ctx)
	if err != nil {
		row.Error = err.Error()
		return row
	}
	row.Records, row.ByStatus = total, by
	row.OK = total == row.Requests && by[usage.StatusSuccess] == total
	return row
}

// restart gives the load phases fresh processes: both mocks and every
// target's own process are stopped and started again with the same
// command (same ports, keys, flags and ledger file; sidecars keep
// running), and the clients' pooled connections to the old ones dropped.
// Without it the closed and open loops would measure processes carrying
// what the streams wave left behind, which costs one target more than
// another: the reverse proxy's CPU a request at c=8 measured 216 µs after
// the wave against 176 µs fresh, the gateway's 243 against 244
// (docs/BENCHMARK.md, "sixth round").
func (e *roundEnv) restart(ctx context.Context) error {
	for _, t := range e.targets {
		if t.proc == nil {
			continue
		}
		if t.spec.Kind == kindGateway && t.mgmt != "" {
			lag, writer, err := scrapeLedger(ctx, t.mgmt)
			if err != nil {
				return err
			}
			t.earlierLag, t.earlierWriter = lag, writer
		}
		if err := t.proc.stop(40 * time.Second); err != nil {
			return err
		}
	}
	for _, m := range []struct {
		p   **proc
		url string
	}{{&e.alpha, e.alphaURL}, {&e.beta, e.betaURL}} {
		p, err := (*m.p).restart(15 * time.Second)
		if err != nil {
			return err
		}
		*m.p = p
		if err := waitReady(ctx, p, m.url+"/healthz", 20*time.Second); err != nil {
			return err
		}
	}
	for _, t := range e.targets {
		t.client.CloseIdleConnections()
		if t.proc == nil {
			continue
		}
		// Stopped in the first loop: targets go down before the mocks
		// they hold connections to, and come up after them.
		p, err := t.proc.again()
		if err != nil {
			return err
		}
		t.proc = p
		if err := waitReady(ctx, p, t.ready, 30*time.Second); err != nil {
			return err
		}
	}
	return nil
}

func (e *roundEnv) stopAll() {
	_, _ = e.stopTargets(context.Background())
	for _, m := range []*proc{e.alpha, e.beta} {
		if m != nil {
			_ = m.stop(15 * time.Second)
		}
	}
}

// twoPorts asks for two distinct free ports at once.
func twoPorts() (int, int, error) {
	var lns []net.Listener
	defer func() {
		for _, ln := range lns {
			ln.Close()
		}
	}()
	for range 2 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, 0, err
		}
		lns = append(lns, ln)
	}
	return lns[0].Addr().(*net.TCPAddr).Port, lns[1].Addr().(*net.TCPAddr).Port, nil
}

func loop(port int) string { return "127.0.0.1:" + strconv.Itoa(port) }
