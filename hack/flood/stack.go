package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"time"

	"github.com/llmgw/llmgw/api/keyformat"
	"github.com/llmgw/llmgw/api/snapshot"
	"github.com/llmgw/llmgw/gateway"
	"github.com/llmgw/llmgw/gateway/localstack"
	"github.com/llmgw/llmgw/mockproviders"
)

// stack is mock alpha and beta plus a gateway started through `llmgw
// gateway`'s own flag parsing (gateway.Main), so the abuse limits and the
// ledger's retention are exactly the defaults an operator gets. (localstack
// starts its gateway with no per-client-address limit, which would not
// measure a flood "at the limit".)
type stack struct {
	url, mgmtURL string
	dbPath       string
	validKey     string
	stop         func() error
}

func startStack(ctx context.Context, dir string, extraFlags []string) (*stack, error) {
	alphaURL, stopAlpha, err := serveMock(mockproviders.Alpha)
	if err != nil {
		return nil, err
	}
	betaURL, stopBeta, err := serveMock(mockproviders.Beta)
	if err != nil {
		stopAlpha()
		return nil, err
	}
	stopMocks := func() { stopAlpha(); stopBeta() }
	keyA, _, _, err := keyformat.Generate()
	if err != nil {
		stopMocks()
		return nil, err
	}
	keyB, _, _, err := keyformat.Generate()
	if err != nil {
		stopMocks()
		return nil, err
	}
	// The demo configuration (60 rpm, burst 10 per key); beta needs no
	// upstream credential here, only the flood's shape matters.
	snap := localstack.Demo(alphaURL, betaURL, keyA, keyB)
	for i := range snap.Providers {
		snap.Providers[i].Credential = nil
	}
	snapPath := filepath.Join(dir, "snapshot.json")
	if err := snapshot.WriteFile(snapPath, snap); err != nil {
		stopMocks()
		return nil, fmt.Errorf("writing snapshot: %w", err)
	}
	addr, err := freeAddr()
	if err != nil {
		stopMocks()
		return nil, err
	}
	mgmt, err := freeAddr()
	if err != nil {
		stopMocks()
		return nil, err
	}
	dbPath := filepath.Join(dir, "usage.db")
	args := append([]string{"--snapshot", snapPath, "--db", dbPath, "--addr", addr, "--mgmt-addr", mgmt,
		"--log-level", "warn"}, extraFlags...)
	gctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- gateway.Main(gctx, args) }()
	st := &stack{url: "http://" + addr, mgmtURL: "http://" + mgmt, dbPath: dbPath, validKey: keyA,
		stop: func() error {
			cancel()
			err := <-done
			stopMocks()
			return err
		}}
	if err := waitReady(ctx, st.url, done); err != nil {
		cancel()
		stopMocks()
		return nil, err
	}
	return st, nil
}

func serveMock(flavor mockproviders.Flavor) (string, func(), error) {
	h, err := mockproviders.NewHandler(mockproviders.Options{Flavor: flavor})
	if err != nil {
		return "", nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, fmt.Errorf("mock %s: %w", flavor, err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	return "http://" + ln.Addr().String(), func() { _ = srv.Close() }, nil
}

// freeAddr asks the kernel for a free loopback port. gateway.Main binds it
// itself, a moment later; on a quiet machine nobody takes it in between.
func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("finding a free port: %w", err)
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

func waitReady(ctx context.Context, base string, done <-chan error) error {
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case err := <-done:
			return fmt.Errorf("gateway exited before it was ready: %w", err)
		case <-ctx.Done():
			return ctx.Err()
		default:
		}
		if resp, err := http.Get(base + "/readyz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	return errors.New("gateway not ready after 30s")
}
