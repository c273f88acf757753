package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"time"

	"github.com/llmgw/llmgw/api/keyformat"
	"github.com/llmgw/llmgw/api/snapshot"
	"github.com/llmgw/llmgw/gateway/server"
	"github.com/llmgw/llmgw/gateway/usage"
	"github.com/llmgw/llmgw/mockproviders"
)

// model is both the alias name and the provider model, so a request body is
// byte-for-byte the same whether it goes to the mock or through the gateway.
const model = "alpha-large"

// stack is mock alpha and the gateway, each a real http.Server on its own
// loopback listener, in this process.
type stack struct {
	mockURL, gwURL string
	upstreamKey    string // what the gateway injects; the direct path sends it itself
	gatewayKey     string
	level          *slog.LevelVar // the gateway's log level, switchable between phases
	close          func()
}

type staticCreds string

func (c staticCreds) Resolve(context.Context, string, snapshot.Credential) (string, error) {
	return string(c), nil
}

func startStack(ctx context.Context, dir string, chunks int) (*stack, error) {
	st := &stack{level: new(slog.LevelVar)}
	var closers []func()
	st.close = func() {
		for i := len(closers) - 1; i >= 0; i-- {
			closers[i]()
		}
	}
	fail := func(err error) (*stack, error) { st.close(); return nil, err }

	upstream, _, _, err := keyformat.Generate() // any high-entropy string does
	if err != nil {
		return fail(err)
	}
	st.upstreamKey = "mock-" + upstream[4:]
	mock, err := mockproviders.NewHandler(mockproviders.Options{Flavor: mockproviders.Alpha,
		RequireKey: st.upstreamKey, DefaultChunks: chunks})
	if err != nil {
		return fail(err)
	}
	mockURL, stop, err := serve(mock)
	if err != nil {
		return fail(err)
	}
	closers = append(closers, stop)
	st.mockURL = mockURL

	st.gatewayKey, _, _, err = keyformat.Generate()
	if err != nil {
		return fail(err)
	}
	prefix, _ := keyformat.PrefixOf(st.gatewayKey)
	zero := 0
	snap := &snapshot.Snapshot{
		Providers: []snapshot.Provider{{Name: "alpha", Protocol: snapshot.ProtocolOpenAI, BaseURL: mockURL,
			Credential: &snapshot.Credential{File: "in-process"}}},
		Aliases: []snapshot.Alias{{Name: model, Primary: snapshot.Route{Provider: "alpha", Model: model},
			MaxFallbacks: &zero}},
		// The limiter must never reject: ~1.7M requests/s sustained, 1M burst.
		Keys: []snapshot.Key{{ID: "bench", Prefix: prefix, Hash: keyformat.Hash(st.gatewayKey), Models: []string{"*"},
			RateLimit: snapshot.RateLimit{RPM: 100_000_000, Burst: 1_000_000}}},
	}

	// Logs go to io.Discard through the JSON handler the real binary uses, so
	// an enabled level still pays for formatting every line.
	log := slog.New(slog.NewJSONHandler(io.Discard, &slog.HandlerOptions{Level: st.level}))
	ledger, err := usage.Open(ctx, filepath.Join(dir, "usage.db"), usage.Options{Logger: log})
	if err != nil {
		return fail(err)
	}
	closers = append(closers, func() { _ = ledger.Close() })
	srv, err := server.New(server.Options{Ledger: ledger, Logger: log, Credentials: staticCreds(st.upstreamKey)})
	if err != nil {
		return fail(err)
	}
	if err := srv.Apply(ctx, snap); err != nil {
		return fail(fmt.Errorf("apply snapshot: %w", err))
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fail(err)
	}
	hs := server.HTTPServer(ln.Addr().String(), srv.Handler()) // the production timeouts
	go func() { _ = hs.Serve(ln) }()
	closers = append(closers, func() { shutdown(hs) })
	st.gwURL = "http://" + ln.Addr().String()
	return st, nil
}

func serve(h http.Handler) (string, func(), error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	hs := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 120 * time.Second}
	go func() {
		if err := hs.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			slog.Error("mock server", "err", err)
		}
	}()
	return "http://" + ln.Addr().String(), func() { shutdown(hs) }, nil
}

func shutdown(hs *http.Server) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if hs.Shutdown(ctx) != nil {
		_ = hs.Close()
	}
}
