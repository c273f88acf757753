// Package localstack is the whole product on one machine: mock providers
// alpha and beta and a gateway fed from a snapshot file, each on its own
// loopback listener in this process. `llmgw up` runs it for people; the data
// plane's acceptance tests and the benchmarks build the same stack.
package localstack

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/llmgw/llmgw/api/snapshot"
	"github.com/llmgw/llmgw/gateway"
	"github.com/llmgw/llmgw/gateway/source"
	"github.com/llmgw/llmgw/mockproviders"
)

// Files of the state directory.
const (
	envFile      = "env"            // 0600: URLs and the two demo keys, shell-sourceable
	alphaKeyFile = "mock-alpha.key" // 0600: with Options.AlphaKey, mock alpha's upstream key
	betaKeyFile  = "mock-beta.key"  // 0600: the upstream key only mock beta and the gateway know
	snapshotFile = "snapshot.json"
	usageDBFile  = "usage.db"
)

// Options configures one stack. Zero values give a stack on free loopback
// ports with new keys.
type Options struct {
	Dir                       string // state directory (created 0700); required
	Addr, AlphaAddr, BetaAddr string // listen addresses; "" means 127.0.0.1:0
	MgmtAddr                  string // gateway /metrics; "" disables
	// KeyA and KeyB are the two demo gateway keys; "" generates one.
	KeyA, KeyB string
	// AlphaKey, when set, is an upstream key mock alpha requires (the demo's
	// alpha needs none). BetaKey is mock beta's; "" reuses the state
	// directory's or generates one.
	AlphaKey, BetaKey string
	// Mutate edits the demo snapshot before it is written.
	Mutate func(*snapshot.Snapshot)
	// Mock edits a mock provider's options before it starts.
	Mock           func(*mockproviders.Options)
	ReloadInterval time.Duration // snapshot file poll; 0 means one second
	DrainTimeout   time.Duration // 0 means ten seconds
	Logger         *slog.Logger
}

// Stack is a running local stack.
type Stack struct {
	*gateway.Gateway // Server, Ledger, Addr

	URL, AlphaURL, BetaURL string // http://host:port of each
	KeyA, KeyB             string // plaintext demo keys (A: every alias, B: chat-alpha and chat-beta)
	AlphaKey, BetaKey      string // upstream keys the gateway injects ("" when not required)
	SnapshotPath, DBPath   string

	cancel  context.CancelFunc
	done    chan struct{}
	err     error
	closers []func()
}

// Start brings up both mocks, writes the demo snapshot and starts the
// gateway on it. Close (or ctx ending, then Close) stops everything.
func Start(ctx context.Context, opts Options) (_ *Stack, err error) {
	if opts.Dir == "" {
		return nil, errors.New("localstack: a state directory is required")
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if err := os.MkdirAll(opts.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("creating state dir: %w", err)
	}
	ctx, cancel := context.WithCancel(ctx)
	// The cleanup holds st, never the named result, which an error return
	// sets to nil.
	st := &Stack{cancel: cancel, done: make(chan struct{}),
		SnapshotPath: filepath.Join(opts.Dir, snapshotFile), DBPath: filepath.Join(opts.Dir, usageDBFile)}
	defer func() {
		if err != nil {
			st.stop()
		}
	}()
	if st.KeyA, err = keyOrNew(opts.KeyA); err != nil {
		return nil, err
	}
	if st.KeyB, err = keyOrNew(opts.KeyB); err != nil {
		return nil, err
	}
	if opts.BetaKey != "" {
		err = writePrivate(filepath.Join(opts.Dir, betaKeyFile), []byte(opts.BetaKey+"\n"))
	}
	if err != nil {
		return nil, err
	}
	if st.BetaKey, err = loadOrCreateSecret(filepath.Join(opts.Dir, betaKeyFile), "mockbeta-"); err != nil {
		return nil, err
	}
	if st.AlphaKey = opts.AlphaKey; st.AlphaKey != "" {
		if err := writePrivate(filepath.Join(opts.Dir, alphaKeyFile), []byte(st.AlphaKey+"\n")); err != nil {
			return nil, err
		}
	}
	if st.AlphaURL, err = st.serveMock(ctx, orLoopback(opts.AlphaAddr), mockproviders.Alpha, st.AlphaKey, opts); err != nil {
		return nil, err
	}
	if st.BetaURL, err = st.serveMock(ctx, orLoopback(opts.BetaAddr), mockproviders.Beta, st.BetaKey, opts); err != nil {
		return nil, err
	}
	snap := Demo(st.AlphaURL, st.BetaURL, st.KeyA, st.KeyB)
	if st.AlphaKey != "" {
		snap.Providers[0].Credential = &snapshot.Credential{File: alphaKeyFile}
	}
	if opts.Mutate != nil {
		opts.Mutate(snap)
	}
	if err := snapshot.WriteFile(st.SnapshotPath, snap); err != nil {
		return nil, fmt.Errorf("writing snapshot: %w", err)
	}
	interval, drain := opts.ReloadInterval, opts.DrainTimeout
	if interval <= 0 {
		interval = time.Second
	}
	if drain <= 0 {
		drain = 10 * time.Second
	}
	st.Gateway, err = gateway.Start(ctx, gateway.Config{Addr: orLoopback(opts.Addr), MgmtAddr: opts.MgmtAddr,
		Source: source.File{Path: st.SnapshotPath, Interval: interval},
		DBPath: st.DBPath, DrainTimeout: drain, Logger: opts.Logger})
	if err != nil {
		return nil, err
	}
	st.URL = "http://" + st.Addr
	go func() {
		defer close(st.done)
		st.err = st.Wait(ctx)
	}()
	return st, nil
}

// Done is closed once the gateway has stopped (Close, the caller's context
// ending, or a listener failing).
func (st *Stack) Done() <-chan struct{} { return st.done }

// Close drains the gateway, closes its ledger and stops both mocks.
func (st *Stack) Close() error {
	st.cancel()
	<-st.done
	st.stop()
	return st.err
}

func (st *Stack) stop() {
	st.cancel()
	for i := len(st.closers) - 1; i >= 0; i-- {
		st.closers[i]()
	}
	st.closers = nil
}

func (st *Stack) serveMock(ctx context.Context, addr string, flavor mockproviders.Flavor, key string, opts Options) (string, error) {
	mo := mockproviders.Options{Flavor: flavor, RequireKey: key, Logger: opts.Logger}
	if opts.Mock != nil {
		opts.Mock(&mo)
	}
	h, err := mockproviders.NewHandler(mo)
	if err != nil {
		return "", err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", fmt.Errorf("mock %s: listening on %s: %w", flavor, addr, err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 120 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	st.closers = append(st.closers, func() {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if srv.Shutdown(sctx) != nil {
			_ = srv.Close()
		}
	})
	return "http://" + ln.Addr().String(), nil
}

func orLoopback(addr string) string {
	if addr == "" {
		return "127.0.0.1:0"
	}
	return addr
}
