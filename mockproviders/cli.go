package mockproviders

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/llmgw/llmgw/mockproviders/otlpsink"
)

// KeyFileEnv names the variable holding the path of the required-key file, for
// deployments that mount secrets as files and configure through env.
const KeyFileEnv = "LLMGW_MOCK_REQUIRE_KEY_FILE"

// Main runs `llmgw mockprovider`. It returns nil after a graceful shutdown when ctx
// is cancelled (SIGTERM), flag.ErrHelp for --help.
func Main(ctx context.Context, args []string) error {
	return run(ctx, args, os.Stderr, os.Getenv, nil)
}

// run is Main with its process dependencies injected; ready receives the bound
// address so tests can use port 0.
func run(ctx context.Context, args []string, stderr io.Writer, getenv func(string) string, ready func(addr string)) error {
	fs := flag.NewFlagSet("llmgw mockprovider", flag.ContinueOnError)
	fs.SetOutput(stderr)
	flavor := fs.String("flavor", "", "wire protocol: alpha (OpenAI: POST /v1/chat/completions, /v1/responses, /v1/embeddings) or beta (Anthropic-Messages style: POST /v1/messages, /v1/messages/count_tokens); otlp runs a trace receiver instead (OTLP/HTTP POST /v1/traces, GET /mock/spans); required")
	addr := fs.String("addr", "", "listen address host:port (default 127.0.0.1:9001 for alpha, 127.0.0.1:9002 for beta, 127.0.0.1:4318 for otlp)")
	keyFile := fs.String("require-key-file", "", "file whose trimmed content is the API key clients must send (alpha: Authorization: Bearer <key>, beta: x-api-key: <key>); default $"+KeyFileEnv+"; unset means no auth")
	chunks := fs.Int("default-chunks", DefaultChunks, fmt.Sprintf("content pieces per answer when the request has no chunks= directive (1..%d)", MaxChunks))
	chunkDelay := fs.Duration("default-chunk-delay", 0, "wait between content pieces when the request has no chunk_delay_ms= directive (e.g. 20ms)")
	delay := fs.Duration("default-delay", 0, "wait before response headers when the request has no delay_ms= directive (e.g. 100ms)")
	grace := fs.Duration("shutdown-grace", 10*time.Second, "on SIGTERM, how long in-flight calls may finish before they are cut")
	logFormat := fs.String("log-format", "text", "log format on stderr: text or json")
	logLevel := fs.String("log-level", "info", "debug, info, warn or error; debug logs one line per call (never keys or message text)")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), `Usage: llmgw mockprovider --flavor alpha|beta|otlp [flags]

Runs a mock model provider with deterministic answers and on-demand faults
(alpha, beta), or a trace receiver that keeps what the gateways export over
OTLP/HTTP and shows it at GET /mock/spans?trace_id=... (otlp).
Faults: a line in the last user turn like
  @mock alpha:status=503 beta:chunks=5 *:delay_ms=200
Keys: status retry_after delay_ms first_byte_delay_ms chunks chunk_delay_ms
      drop_after error_after stall_after no_usage cached_tokens reasoning_tokens
      tool args (see docs/MOCKPROVIDERS.md).
Control: GET /mock/calls, POST /mock/reset, GET /healthz.

Flags:
`)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}

	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(*logLevel)); err != nil {
		return fmt.Errorf("--log-level: %w", err)
	}
	var lh slog.Handler
	switch *logFormat {
	case "text":
		lh = slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: lvl})
	case "json":
		lh = slog.NewJSONHandler(stderr, &slog.HandlerOptions{Level: lvl})
	default:
		return fmt.Errorf("--log-format %q: want text or json", *logFormat)
	}
	logger := slog.New(lh).With("component", "mockprovider")

	opts := Options{
		Flavor:            Flavor(*flavor),
		DefaultChunks:     *chunks,
		DefaultChunkDelay: *chunkDelay,
		DefaultDelay:      *delay,
		Logger:            logger,
	}
	var h http.Handler
	switch opts.Flavor {
	case flavorOTLP:
		if *addr == "" {
			*addr = "127.0.0.1:4318"
		}
		h = otlpsink.New().Handler()
	case Alpha:
		if *addr == "" {
			*addr = "127.0.0.1:9001"
		}
	case Beta:
		if *addr == "" {
			*addr = "127.0.0.1:9002"
		}
	case "":
		return errors.New("--flavor is required (alpha, beta or otlp)")
	default:
		return fmt.Errorf("--flavor %q: want alpha, beta or otlp", *flavor)
	}
	if *chunks < 1 {
		return fmt.Errorf("--default-chunks must be at least 1")
	}
	if *grace < 0 {
		return fmt.Errorf("--shutdown-grace must not be negative")
	}
	path := *keyFile
	if path == "" {
		path = getenv(KeyFileEnv)
	}
	if path != "" {
		key, err := readKeyFile(path)
		if err != nil {
			return err
		}
		opts.RequireKey = key
	}
	if h == nil {
		mh, err := NewHandler(opts)
		if err != nil {
			return err
		}
		h = mh
	}

	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	// Request contexts hang off base rather than ctx: SIGTERM first lets in-flight
	// calls finish, and only a grace timeout cancels them (ending stalls and delays).
	base, cancelBase := context.WithCancel(context.Background())
	defer cancelBase()
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		BaseContext:       func(net.Listener) context.Context { return base },
		ErrorLog:          slog.NewLogLogger(lh, slog.LevelWarn),
	}
	logger.Info("mock provider listening", "flavor", opts.Flavor, "addr", ln.Addr().String(), "require_key", path != "",
		"default_chunks", *chunks, "default_chunk_delay", *chunkDelay, "default_delay", *delay)
	if ready != nil {
		ready(ln.Addr().String())
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	logger.Info("shutting down", "grace", *grace)
	sctx, cancel := context.WithTimeout(context.Background(), *grace)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		logger.Warn("grace period over, cutting in-flight calls")
		// Connections first, then the handlers: a handler released first
		// could end its response cleanly before its connection is closed,
		// and a cut call would look like a finished one.
		srv.Close()
		cancelBase()
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	logger.Info("stopped")
	return nil
}

// flavorOTLP runs the trace receiver of package otlpsink, not a provider.
const flavorOTLP Flavor = "otlp"

// readKeyFile refuses an empty key: silently running without auth would let a
// credential-injection test pass for the wrong reason. Errors name the path only.
func readKeyFile(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("require-key file: %w", err)
	}
	key := strings.TrimSpace(string(b))
	if key == "" {
		return "", fmt.Errorf("require-key file %s is empty", path)
	}
	return key, nil
}
