package main

import (
	"context"
	"io"
	"log/slog"

	"github.com/llmgw/llmgw/api/keyformat"
	"github.com/llmgw/llmgw/gateway/localstack"
	"github.com/llmgw/llmgw/mockproviders"
)

// model is both the alias name and the provider model, so a request body is
// byte-for-byte the same whether it goes to the mock or through the gateway.
const model = "alpha-large"

// stack is the local stack (gateway/localstack) in this process, each
// server a real http.Server on its own loopback listener.
type stack struct {
	mockURL, gwURL string
	upstreamKey    string // what the gateway injects; the direct path sends it itself
	gatewayKey     string
	level          *slog.LevelVar // the gateway's log level, switchable between phases
	close          func()
}

func startStack(ctx context.Context, dir string, chunks int) (*stack, error) {
	upstream, _, _, err := keyformat.Generate() // any high-entropy string does
	if err != nil {
		return nil, err
	}
	level := new(slog.LevelVar)
	// Logs go to io.Discard through the JSON handler the real binary uses, so
	// an enabled level still pays for formatting every line.
	log := slog.New(slog.NewJSONHandler(io.Discard, &slog.HandlerOptions{Level: level}))
	ls, err := localstack.Start(ctx, localstack.Options{Dir: dir, AlphaKey: "mock-" + upstream[4:], Logger: log,
		Mutate: localstack.ForBenchmarks(model),
		Mock:   func(o *mockproviders.Options) { o.DefaultChunks = chunks; o.Logger = nil }})
	if err != nil {
		return nil, err
	}
	return &stack{mockURL: ls.AlphaURL, gwURL: ls.URL, upstreamKey: ls.AlphaKey, gatewayKey: ls.KeyA, level: level,
		close: func() { _ = ls.Close() }}, nil
}
