package localstack

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
	"os"
	"path/filepath"
	"strings"

	"github.com/llmgw/llmgw/api/keyformat"
	"github.com/llmgw/llmgw/gateway"
)

// UpConfig is `llmgw up`: a stack on fixed addresses whose keys and usage
// history survive restarts of the same state directory.
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
		fmt.Fprintln(fs.Output(), "Usage: llmgw up [flags]\n\nStarts mock providers alpha and beta and the gateway on loopback, with demo aliases\nchat-alpha, chat-beta, chat-restricted, embed-alpha and two keys (A: all four, B: all but chat-restricted).\nA second run on the same state directory reuses the keys and the usage history. Ctrl-C stops everything.\n\nFlags:")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	log, err := gateway.NewLogger(*level)
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
	st, err := Start(ctx, Options{Dir: cfg.StateDir, Addr: cfg.Addr, AlphaAddr: cfg.AlphaAddr, BetaAddr: cfg.BetaAddr,
		MgmtAddr: cfg.MgmtAddr, KeyA: keyA, KeyB: keyB, Logger: cfg.Logger})
	if err != nil {
		return err
	}
	env := fmt.Sprintf("LLMGW_URL=%s\nLLMGW_KEY_A=%s\nLLMGW_KEY_B=%s\nLLMGW_MOCK_ALPHA_URL=%s\nLLMGW_MOCK_BETA_URL=%s\n",
		st.URL, keyA, keyB, st.AlphaURL, st.BetaURL)
	if err := writePrivate(envPath, []byte(env)); err != nil {
		_ = st.Close()
		return fmt.Errorf("writing env file: %w", err)
	}
	printBanner(cfg.Out, st.URL, st.AlphaURL, st.BetaURL, envPath, cfg.StateDir)
	if cfg.Ready != nil {
		cfg.Ready(envPath)
	}
	select {
	case <-ctx.Done():
	case <-st.Done():
	}
	return st.Close()
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
	if a, err = keyOrNew(""); err != nil {
		return "", "", err
	}
	b, err = keyOrNew("")
	return a, b, err
}

// keyOrNew returns key, or a new plaintext gateway key when key is empty.
func keyOrNew(key string) (string, error) {
	if key != "" {
		return key, nil
	}
	plain, _, _, err := keyformat.Generate()
	return plain, err
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

func loadOrCreateSecret(path, prefix string) (string, error) {
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
	s := prefix + hex.EncodeToString(raw)
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

func printBanner(w io.Writer, gw, alpha, beta, envPath, stateDir string) {
	fmt.Fprintf(w, `llmgw local stack is up.
  gateway      %s   (/v1/chat/completions, /v1/responses, /v1/messages, /v1/embeddings, /v1/models, /v1/usage, /health)
  mock alpha   %s   (OpenAI protocol, with the Responses API)
  mock beta    %s   (Anthropic-Messages protocol; its upstream key is injected by the gateway)
  keys         %s   (mode 0600: LLMGW_KEY_A may use chat-alpha, chat-beta, chat-restricted, embed-alpha; LLMGW_KEY_B all but chat-restricted)
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
