package gateway_test

import (
	"context"
	"log/slog"
	"net"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmgw/llmgw/gateway"
	"github.com/llmgw/llmgw/gateway/source"
)

// A source that fails at start fails Start cleanly: an error, no panic, and
// the listeners it had bound are closed again.
func TestStartFailsCleanlyWhenTheSourceFails(t *testing.T) {
	dir := t.TempDir()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	_, err = gateway.Start(context.Background(), gateway.Config{Addr: addr, MgmtAddr: "127.0.0.1:0",
		Source: source.File{Path: filepath.Join(dir, "missing.json")}, DBPath: filepath.Join(dir, "usage.db"),
		Logger: slog.New(slog.DiscardHandler)})
	if err == nil || !strings.Contains(err.Error(), "loading snapshot") {
		t.Fatalf("Start with a missing snapshot file: %v", err)
	}
	again, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("the data-plane address is still bound after the failed Start: %v", err)
	}
	again.Close()
}
