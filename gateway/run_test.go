package gateway_test

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/llmgw/llmgw/api/snapshot"
	"github.com/llmgw/llmgw/gateway"
	"github.com/llmgw/llmgw/gateway/source"
	"github.com/llmgw/llmgw/gateway/usage"
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

// The management port serves /metrics (with the ledger's retention counters)
// and the detailed /health; the data port's /health does not say why a
// snapshot was rejected.
func TestManagementPort(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "snapshot.json")
	if err := snapshot.WriteFile(path, &snapshot.Snapshot{}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	g, err := gateway.Start(ctx, gateway.Config{Addr: "127.0.0.1:0", MgmtAddr: "127.0.0.1:0",
		Source: source.File{Path: path, Interval: 10 * time.Millisecond}, DBPath: filepath.Join(dir, "usage.db"),
		Retention: usage.Retention{MaxAge: time.Hour}, DrainTimeout: time.Second, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- g.Wait(ctx) }()
	defer func() { cancel(); <-done }()

	if body := get(t, "http://"+g.MgmtAddr+"/metrics"); !strings.Contains(body, `llmgw_usage_records_pruned_total{reason="age"} 0`) {
		t.Fatalf("/metrics lacks the retention counter:\n%s", body)
	}
	// The first snapshot's apply is timed (the gateway's half of a hot load).
	deadline0 := time.Now().Add(10 * time.Second)
	for !strings.Contains(get(t, "http://"+g.MgmtAddr+"/metrics"), "llmgw_snapshot_apply_seconds_count 1") {
		if time.Now().After(deadline0) {
			t.Fatal("llmgw_snapshot_apply_seconds does not count the first apply")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := os.WriteFile(path, []byte(`{"providers":[{"name":"p","protocol":"openai","baseURL":"http://h:1","credential":{"file":"/etc/secret-path"}}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(get(t, "http://"+g.Addr+"/health"), "degraded") {
		if time.Now().After(deadline) {
			t.Fatal("the rejected snapshot is not reported")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if data := get(t, "http://"+g.Addr+"/health"); strings.Contains(data, "credential.file") || strings.Contains(data, path) {
		t.Fatalf("the data port's /health tells why: %s", data)
	}
	if mgmt := get(t, "http://"+g.MgmtAddr+"/health"); !strings.Contains(mgmt, "credential.file") {
		t.Fatalf("the management port's /health does not tell why: %s", mgmt)
	}
}

func get(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}
