package gateway

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/llmgw/llmgw/gateway/keys/keyformat"
	"github.com/llmgw/llmgw/gateway/snapshot"
	"github.com/llmgw/llmgw/mockproviders"
)

// Files of the local state directory.
const (
	envFile      = "env"           // 0600: URLs and the two demo keys, shell-sourceable
	betaKeyFile  = "mock-beta.key" // 0600: the upstream key only mock beta and the gateway know
	snapshotFile = "snapshot.json"
	usageDBFile  = "usage.db"
)

// UpConfig is one local stack.
type UpConfig struct {
	StateDir  string
	Addr      string
	AlphaAddr string
	BetaAddr  string
	MgmtAddr  string // /metrics; empty disables
	Logger    *slog.Logger
	Out       io.Writer
	// Ready, when set, is called with the env file's path once everything serves.
	Ready func(envPath string)
}

// UpMain is `llmgw up`.
func UpMain(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("up", flag.ContinueOnError)
	cfg := UpConfig{Out: os.Stdout}
	fs.StringVar(&cfg.StateDir, "state-dir", ".llmgw", "state directory: keys (0600 env file), snapshot, mock-beta upstream key, usage database")
	fs.StringVar(&cfg.Addr, "addr", "127.0.0.1:8080", "gateway listen address")
	fs.StringVar(&cfg.AlphaAddr, "alpha-addr", "127.0.0.1:9001", "mock provider alpha (OpenAI protocol) listen address")
	fs.StringVar(&cfg.BetaAddr, "beta-addr", "127.0.0.1:9002", "mock provider beta (Anthropic-Messages protocol) listen address")
	fs.StringVar(&cfg.MgmtAddr, "mgmt-addr", "", "gateway management address serving /metrics (e.g. 127.0.0.1:9090); empty disables it")
	level := fs.String("log-level", "warn", "log level of the gateway and mocks (logs go to stderr): debug, info, warn or error")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "Usage: llmgw up [flags]\n\nStarts mock providers alpha and beta and the gateway on loopback, with demo aliases\nchat-alpha, chat-beta, chat-restricted and two keys (A: all three, B: chat-alpha and chat-beta).\nA second run on the same state directory reuses the keys and the usage history. Ctrl-C stops everything.\n\nFlags:")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	log, err := newLogger(*level)
	if err != nil {
		return err
	}
	cfg.Logger = log
	return Up(ctx, cfg)
}

// Up runs the local stack until ctx is cancelled.
func Up(ctx context.Context, cfg UpConfig) error {
	if err := os.MkdirAll(cfg.StateDir, 0o700); err != nil {
		return fmt.Errorf("creating state dir: %w", err)
	}
	envPath := filepath.Join(cfg.StateDir, envFile)
	keyA, keyB, err := loadOrCreateKeys(envPath)
	if err != nil {
		return err
	}
	betaKey, err := loadOrCreateSecret(filepath.Join(cfg.StateDir, betaKeyFile))
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	alphaURL, stopAlpha, err := serveMock(ctx, cfg.AlphaAddr, mockproviders.Options{Flavor: mockproviders.Alpha, Logger: cfg.Logger})
	if err != nil {
		return err
	}
	defer stopAlpha()
	betaURL, stopBeta, err := serveMock(ctx, cfg.BetaAddr, mockproviders.Options{Flavor: mockproviders.Beta, RequireKey: betaKey, Logger: cfg.Logger})
	if err != nil {
		return err
	}
	defer stopBeta()
	snapPath := filepath.Join(cfg.StateDir, snapshotFile)
	if err := snapshot.WriteFile(snapPath, demoSnapshot(alphaURL, betaURL, keyA, keyB)); err != nil {
		return fmt.Errorf("writing snapshot: %w", err)
	}
	ready := func(addr string) {
		gwURL := "http://" + addr
		env := fmt.Sprintf("LLMGW_URL=%s\nLLMGW_KEY_A=%s\nLLMGW_KEY_B=%s\nLLMGW_MOCK_ALPHA_URL=%s\nLLMGW_MOCK_BETA_URL=%s\n",
			gwURL, keyA, keyB, alphaURL, betaURL)
		if err := writePrivate(envPath, []byte(env)); err != nil {
			cfg.Logger.Error("writing env file", "err", err)
			cancel()
			return
		}
		printBanner(cfg.Out, gwURL, alphaURL, betaURL, envPath, cfg.StateDir)
		if cfg.Ready != nil {
			cfg.Ready(envPath)
		}
	}
	return Run(ctx, Config{Addr: cfg.Addr, MgmtAddr: cfg.MgmtAddr, SnapshotFile: snapPath, ReloadInterval: time.Second,
		DBPath: filepath.Join(cfg.StateDir, usageDBFile), DrainTimeout: 10 * time.Second, Logger: cfg.Logger, Ready: ready})
}

// demoSnapshot is the fixed demo configuration other tools rely on.
func demoSnapshot(alphaURL, betaURL, keyA, keyB string) *snapshot.Snapshot {
	zero, one := 0, 1
	key := func(id, plain string, models []string) snapshot.Key {
		prefix, _ := keyformat.PrefixOf(plain)
		return snapshot.Key{ID: id, Prefix: prefix, Hash: keyformat.Hash(plain), Models: models,
			RateLimit: snapshot.RateLimit{RPM: 60, Burst: 10}}
	}
	return &snapshot.Snapshot{
		Providers: []snapshot.Provider{
			{Name: "alpha", Protocol: snapshot.ProtocolOpenAI, BaseURL: alphaURL},
			{Name: "beta", Protocol: snapshot.ProtocolAnthropic, BaseURL: betaURL, Credential: &snapshot.Credential{File: betaKeyFile}},
		},
		Aliases: []snapshot.Alias{
			{Name: "chat-alpha", Primary: snapshot.Route{Provider: "alpha", Model: "alpha-large"},
				Fallbacks: []snapshot.Route{{Provider: "beta", Model: "beta-large"}}, MaxFallbacks: &one},
			{Name: "chat-beta", Primary: snapshot.Route{Provider: "beta", Model: "beta-large"},
				Fallbacks: []snapshot.Route{{Provider: "alpha", Model: "alpha-large"}}, MaxFallbacks: &one},
			{Name: "chat-restricted", Primary: snapshot.Route{Provider: "alpha", Model: "alpha-small"}, MaxFallbacks: &zero},
		},
		Keys: []snapshot.Key{
			key("key-a", keyA, []string{"chat-alpha", "chat-beta", "chat-restricted"}),
			key("key-b", keyB, []string{"chat-alpha", "chat-beta"}),
		},
	}
}

// loadOrCreateKeys reuses the keys of an earlier run so that their usage
// history stays reachable; the plaintext lives only in the 0600 env file.
func loadOrCreateKeys(envPath string) (a, b string, err error) {
	if vals, err := readEnv(envPath); err == nil {
		a, b = vals["LLMGW_KEY_A"], vals["LLMGW_KEY_B"]
		if _, okA := keyformat.PrefixOf(a); okA {
			if _, okB := keyformat.PrefixOf(b); okB {
				return a, b, nil
			}
		}
		return "", "", fmt.Errorf("%s exists but does not hold two valid keys; remove it to start over", envPath)
	} else if !errors.Is(err, os.ErrNotExist) {
		return "", "", err
	}
	if a, _, _, err = keyformat.Generate(); err != nil {
		return "", "", err
	}
	if b, _, _, err = keyformat.Generate(); err != nil {
		return "", "", err
	}
	return a, b, nil
}

func readEnv(path string) (map[string]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	vals := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(strings.TrimSpace(sc.Text()), "="); ok {
			vals[k] = v
		}
	}
	return vals, sc.Err()
}

func loadOrCreateSecret(path string) (string, error) {
	if b, err := os.ReadFile(path); err == nil {
		if s := strings.TrimSpace(string(b)); s != "" {
			return s, nil
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return "", err
	}
	raw := make([]byte, 24)
	if _, err := rand.Read(raw); err != nil {
		return "", err
	}
	s := "mockbeta-" + hex.EncodeToString(raw)
	return s, writePrivate(path, []byte(s+"\n"))
}

// writePrivate writes a 0600 file atomically (also tightening an existing one).
func writePrivate(path string, data []byte) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return err
	}
	if err := os.Chmod(tmp, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

func serveMock(ctx context.Context, addr string, opts mockproviders.Options) (string, func(), error) {
	h, err := mockproviders.NewHandler(opts)
	if err != nil {
		return "", nil, err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", nil, fmt.Errorf("mock %s: listening on %s: %w", opts.Flavor, addr, err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	stop := func() {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if srv.Shutdown(sctx) != nil {
			_ = srv.Close()
		}
	}
	return "http://" + ln.Addr().String(), stop, nil
}

func printBanner(w io.Writer, gw, alpha, beta, envPath, stateDir string) {
	fmt.Fprintf(w, `llmgw local stack is up.
  gateway      %s   (OpenAI-compatible: /v1/chat/completions, /v1/models, /v1/usage, /health)
  mock alpha   %s   (OpenAI protocol)
  mock beta    %s   (Anthropic-Messages protocol; its upstream key is injected by the gateway)
  keys         %s   (mode 0600: LLMGW_KEY_A may use chat-alpha, chat-beta, chat-restricted; LLMGW_KEY_B chat-alpha, chat-beta)
  usage db     %s

Try it (in another shell):
  source %s
  curl -s $LLMGW_URL/v1/models -H "Authorization: Bearer $LLMGW_KEY_A"
  curl -s $LLMGW_URL/v1/chat/completions -H "Authorization: Bearer $LLMGW_KEY_A" -H 'Content-Type: application/json' \
    -d '{"model":"chat-alpha","messages":[{"role":"user","content":"Hello"}]}'
  curl -sN $LLMGW_URL/v1/chat/completions -H "Authorization: Bearer $LLMGW_KEY_B" -H 'Content-Type: application/json' \
    -d '{"model":"chat-beta","stream":true,"messages":[{"role":"user","content":"Hello"}]}'
  curl -s $LLMGW_URL/v1/chat/completions -H "Authorization: Bearer $LLMGW_KEY_A" -H 'Content-Type: application/json' \
    -d '{"model":"chat-alpha","messages":[{"role":"user","content":"Hi\n@mock alpha:status=503"}]}' -D - | grep -i x-llmgw-provider
  curl -s "$LLMGW_URL/v1/usage?limit=5" -H "Authorization: Bearer $LLMGW_KEY_A"

Ctrl-C stops everything.
`, gw, alpha, beta, envPath, filepath.Join(stateDir, usageDBFile), envPath)
}
