package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// kind is how a target is built.
type kind string

const (
	kindDirect   kind = "direct"   // the client calls the mock itself
	kindRevproxy kind = "revproxy" // hack/bench/revproxy in front of the mocks
	kindGateway  kind = "gateway"  // `llmgw gateway --snapshot` with its SQLite ledger
)

// target is one row of the comparison, running in one part of a round.
type target struct {
	name    string
	kind    kind
	proc    *proc  // nil for direct
	base    string // data-plane base URL ("" for direct: the mocks')
	key     string // a gateway's key
	mgmt    string // base URL of /metrics ("" for direct)
	db      string // a gateway's ledger file
	command string
	client  *http.Client
	eps     map[Workload]*endpoint
	sent    atomic.Int64 // requests sent to it, for the ledger check
}

// own is the process whose CPU a request of w through t costs: its own, or
// for direct the mock that answers it.
func (t *target) own(e *env, w Workload) *proc {
	if t.proc != nil {
		return t.proc
	}
	return e.mock(w.Proto).proc
}

// endpoint is how to send w (with a mock directive, "" for none) to t.
func (t *target) endpoint(e *env, w Workload, directive string) *endpoint {
	m := e.mock(w.Proto)
	switch t.kind {
	case kindGateway:
		return gatewayEndpoint(t.base, w, t.key, directive)
	case kindRevproxy:
		return nativeEndpoint(t.base, w, m.key, directive)
	}
	return nativeEndpoint(m.url, w, m.key, directive)
}

// mock is one running mock provider.
type mock struct {
	proc     *proc
	url, key string
}

// env is the processes of one part of a round: both mocks and every target.
type env struct {
	cfg         *config
	dir         string
	alpha, beta *mock
	otlp        *proc  // the trace receiver of -traced gateways (nil: none)
	otlpURL     string // its base URL
	targets     []*target
}

func (e *env) mock(proto string) *mock {
	if proto == "alpha" {
		return e.alpha
	}
	return e.beta
}

// startEnv starts the mocks, then every target, and waits until each
// answers. On error whatever started is stopped.
func startEnv(ctx context.Context, cfg *config, dir string) (*env, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	e := &env{cfg: cfg, dir: dir}
	if err := e.start(ctx); err != nil {
		_, _ = e.stop()
		return nil, err
	}
	for _, t := range e.targets {
		t.client = &http.Client{Transport: newTransport(1024, true), Timeout: 2 * time.Minute}
		t.eps = map[Workload]*endpoint{}
		for _, w := range cfg.workloads {
			t.eps[w] = t.endpoint(e, w, "")
		}
	}
	return e, nil
}

// start starts the processes. One that started is kept even when it fails
// to get ready, so that stop ends it.
func (e *env) start(ctx context.Context) error {
	var err error
	if e.alpha, err = e.startMock(ctx, "alpha"); err != nil {
		return err
	}
	if e.beta, err = e.startMock(ctx, "beta"); err != nil {
		return err
	}
	if len(e.cfg.traced) > 0 {
		if err := e.startTraceReceiver(ctx); err != nil {
			return fmt.Errorf("trace receiver: %w", err)
		}
	}
	e.targets = append(e.targets, &target{name: "direct", kind: kindDirect, command: "llmgw mockprovider (the one a request's protocol names)"})
	rp, err := e.startRevproxy(ctx)
	if rp != nil {
		e.targets = append(e.targets, rp)
	}
	if err != nil {
		return fmt.Errorf("revproxy: %w", err)
	}
	for _, g := range e.cfg.gateways {
		t, err := e.startGateway(ctx, g)
		if t != nil {
			e.targets = append(e.targets, t)
		}
		if err != nil {
			return fmt.Errorf("gateway %s: %w", g.name, err)
		}
	}
	return nil
}

func randomSecret(prefix string) (string, error) {
	b := make([]byte, 24)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return prefix + hex.EncodeToString(b), nil
}

func writeSecret(path, s string) error { return os.WriteFile(path, []byte(s+"\n"), 0o600) }

func (e *env) startMock(ctx context.Context, flavor string) (*mock, error) {
	key, err := randomSecret("mock-" + flavor + "-")
	if err != nil {
		return nil, err
	}
	keyFile := filepath.Join(e.dir, "mock-"+flavor+".key")
	if err := writeSecret(keyFile, key); err != nil {
		return nil, err
	}
	addr, err := freePort()
	if err != nil {
		return nil, err
	}
	p, err := startProc(e.dir, "mock-"+flavor, e.cfg.mocks, "mockprovider", "--flavor", flavor, "--addr", addr,
		"--require-key-file", keyFile, "--default-chunks", strconv.Itoa(e.cfg.chunks), "--log-level", "warn")
	if err != nil {
		return nil, err
	}
	m := &mock{proc: p, url: "http://" + addr, key: key}
	return m, waitReady(ctx, p, m.url+"/healthz", 20*time.Second)
}

// startTraceReceiver runs the OTLP receiver the -traced gateways export
// to: `llmgw mockprovider --flavor otlp` of the mocks' binary, a process of
// its own whose CPU is not a gateway's.
func (e *env) startTraceReceiver(ctx context.Context) error {
	addr, err := freePort()
	if err != nil {
		return err
	}
	if e.otlp, err = startProc(e.dir, "otlp", e.cfg.mocks, "mockprovider", "--flavor", "otlp", "--addr", addr, "--log-level", "warn"); err != nil {
		return err
	}
	e.otlpURL = "http://" + addr
	return waitReady(ctx, e.otlp, e.otlpURL+"/healthz", 20*time.Second)
}

// traceEnv is the environment of a -traced gateway: every request sampled,
// exported over OTLP/HTTP to the local receiver.
func (e *env) traceEnv() []string {
	return []string{"OTEL_EXPORTER_OTLP_ENDPOINT=" + e.otlpURL, "OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf",
		"OTEL_TRACES_SAMPLER=always_on", "OTEL_SERVICE_NAME=llmgw-bench"}
}

func (e *env) startRevproxy(ctx context.Context) (*target, error) {
	addr, mgmt, err := servingPorts()
	if err != nil {
		return nil, err
	}
	args := []string{"-addr", addr, "-mgmt-addr", mgmt, "-alpha", e.alpha.url, "-beta", e.beta.url}
	t := &target{name: "revproxy", kind: kindRevproxy, base: "http://" + addr, mgmt: "http://" + mgmt, command: "revproxy " + strings.Join(args, " ")}
	if t.proc, err = startProc(e.dir, t.name, e.cfg.revproxy, args...); err != nil {
		return nil, err
	}
	return t, waitReady(ctx, t.proc, t.base+"/healthz", 20*time.Second)
}

// startGateway writes the gateway's snapshot (alias alpha-large to mock
// alpha, beta-large to mock beta, no fallback, credentials in files beside
// it, limits out of reach), adds a key with the binary's own `llmgw keys
// create`, and starts `llmgw gateway` on it.
func (e *env) startGateway(ctx context.Context, g gatewayFlag) (*target, error) {
	dir := filepath.Join(e.dir, g.name)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	snap := filepath.Join(dir, "snapshot.json")
	if err := e.writeSnapshot(snap); err != nil {
		return nil, err
	}
	keyFile := filepath.Join(dir, "gateway.key")
	out, err := exec.CommandContext(ctx, g.bin, "keys", "create", "--id", "bench", "--rpm", "100000000", "--burst", "1000000",
		"--into", snap, "--key-out", keyFile).CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("llmgw keys create: %w: %s", err, out)
	}
	key, err := os.ReadFile(keyFile)
	if err != nil {
		return nil, err
	}
	addr, mgmt, err := servingPorts()
	if err != nil {
		return nil, err
	}
	t := &target{name: g.name, kind: kindGateway, base: "http://" + addr, key: strings.TrimSpace(string(key)), mgmt: "http://" + mgmt, db: filepath.Join(dir, "usage.db")}
	args := append([]string{"gateway", "--snapshot", snap, "--db", t.db, "--addr", addr, "--mgmt-addr", mgmt,
		"--log-level", e.cfg.gatewayLogLevel, "--ip-rpm", "0"}, e.cfg.gatewayArgs...)
	t.command = g.bin + " " + strings.ReplaceAll(strings.Join(args, " "), e.dir, "{dir}")
	var procEnv []string
	if e.cfg.traced[g.name] {
		procEnv = e.traceEnv()
		t.command = "OTEL_EXPORTER_OTLP_ENDPOINT=http://{otlp} OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf OTEL_TRACES_SAMPLER=always_on " + t.command
	}
	if t.proc, err = startProcEnv(dir, g.name, g.bin, procEnv, args...); err != nil {
		return nil, err
	}
	return t, waitReady(ctx, t.proc, t.base+"/health", 30*time.Second)
}

func (e *env) writeSnapshot(path string) error {
	dir := filepath.Dir(path)
	for _, m := range []struct{ name, key string }{{"alpha", e.alpha.key}, {"beta", e.beta.key}} {
		if err := writeSecret(filepath.Join(dir, m.name+".key"), m.key); err != nil {
			return err
		}
	}
	timeouts := map[string]int{"totalMs": 300_000, "attemptMs": 300_000, "firstChunkMs": 60_000, "idleMs": 60_000}
	alias := func(proto string) map[string]any {
		return map[string]any{"name": model(proto), "primary": map[string]string{"provider": proto, "model": model(proto)},
			"maxFallbacks": 0, "timeouts": timeouts}
	}
	s := map[string]any{
		"providers": []map[string]any{
			{"name": "alpha", "protocol": "openai", "baseURL": e.alpha.url, "credential": map[string]string{"file": "alpha.key"}},
			{"name": "beta", "protocol": "anthropic", "baseURL": e.beta.url, "credential": map[string]string{"file": "beta.key"}},
		},
		"aliases": []map[string]any{alias("alpha"), alias("beta")},
		"keys":    []any{},
		"limits":  map[string]int{"maxConcurrent": 1_000_000},
	}
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o600)
}

// infos describe the targets for the report.
func (e *env) infos() []TargetInfo {
	var out []TargetInfo
	for _, t := range e.targets {
		out = append(out, TargetInfo{Name: t.name, Kind: string(t.kind), Command: t.command})
	}
	return out
}

// stop stops every target, then counts each gateway's ledger, then stops
// the mocks (last, so a draining target still reaches them).
func (e *env) stop() ([]RecordRow, error) {
	var rows []RecordRow
	var errs []error
	for _, t := range e.targets {
		if t.proc == nil {
			continue
		}
		if err := t.proc.stop(40 * time.Second); err != nil {
			errs = append(errs, err)
		}
		if t.client != nil {
			t.client.CloseIdleConnections()
		}
		if t.kind == kindGateway {
			rows = append(rows, countRecords(t))
		}
	}
	for _, m := range []*mock{e.alpha, e.beta} {
		if m != nil {
			if err := m.proc.stop(15 * time.Second); err != nil {
				errs = append(errs, err)
			}
		}
	}
	if e.otlp != nil {
		if err := e.otlp.stop(15 * time.Second); err != nil {
			errs = append(errs, err)
		}
	}
	e.targets = nil
	return rows, errors.Join(errs...)
}
