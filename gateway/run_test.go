package gateway

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/llmgw/llmgw/gateway/keys/keyformat"
	"github.com/llmgw/llmgw/gateway/snapshot"
	"github.com/llmgw/llmgw/mockproviders"
)

// Standalone mode: the snapshot file is watched; a valid change is served
// without a restart, an invalid one is reported and the old config kept.
func TestRunReloadsSnapshotFile(t *testing.T) {
	dir := t.TempDir()
	alpha, _ := mockproviders.NewHandler(mockproviders.Options{Flavor: mockproviders.Alpha})
	beta, _ := mockproviders.NewHandler(mockproviders.Options{Flavor: mockproviders.Beta, RequireKey: "beta-secret-for-test"})
	as, bs := httptest.NewServer(alpha), httptest.NewServer(beta)
	defer as.Close()
	defer bs.Close()
	if err := os.WriteFile(filepath.Join(dir, betaKeyFile), []byte("beta-secret-for-test\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	keyA, _, _, _ := keyformat.Generate()
	keyB, _, _, _ := keyformat.Generate()
	snap := demoSnapshot(as.URL, bs.URL, keyA, keyB)
	path := filepath.Join(dir, snapshotFile)
	if err := snapshot.WriteFile(path, snap); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	addrc := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, Config{Addr: "127.0.0.1:0", SnapshotFile: path, ReloadInterval: 50 * time.Millisecond,
			DBPath: filepath.Join(dir, "usage.db"), DrainTimeout: time.Second,
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Ready: func(a string) { addrc <- a }})
	}()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}()
	var base string
	select {
	case a := <-addrc:
		base = "http://" + a
	case err := <-done:
		t.Fatalf("Run ended: %v", err)
	}
	chat := func(model string) int {
		req, _ := http.NewRequest(http.MethodPost, base+"/v1/chat/completions",
			strings.NewReader(`{"model":"`+model+`","messages":[{"role":"user","content":"hi"}]}`))
		req.Header.Set("Authorization", "Bearer "+keyA)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	// chat-beta goes to mock beta, which only answers with the key read from
	// the credential file: the gateway injected it.
	if c := chat("chat-beta"); c != 200 {
		t.Fatalf("chat-beta: %d", c)
	}
	snap.Aliases = append(snap.Aliases, snapshot.Alias{Name: "chat-late", Primary: snapshot.Route{Provider: "alpha", Model: "m"}})
	snap.Keys[0].Models = append(snap.Keys[0].Models, "chat-late")
	if err := snapshot.WriteFile(path, snap); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for chat("chat-late") != 200 {
		if time.Now().After(deadline) {
			t.Fatal("new alias not served after the file changed")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := os.WriteFile(path, []byte(`{"version":"broken"`), 0o644); err != nil {
		t.Fatal(err)
	}
	deadline = time.Now().Add(5 * time.Second)
	for {
		resp, err := http.Get(base + "/health")
		if err != nil {
			t.Fatal(err)
		}
		var h struct {
			Status   string `json:"status"`
			Snapshot struct {
				LastReloadError string `json:"last_reload_error"`
			} `json:"snapshot"`
		}
		_ = json.NewDecoder(resp.Body).Decode(&h)
		resp.Body.Close()
		if h.Status == "degraded" && h.Snapshot.LastReloadError != "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("invalid snapshot file not reported in /health")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if c := chat("chat-late"); c != 200 {
		t.Fatalf("running config lost after an invalid file: %d", c)
	}
	// Putting the running content back clears the reported error.
	if err := snapshot.WriteFile(path, snap); err != nil {
		t.Fatal(err)
	}
	deadline = time.Now().Add(5 * time.Second)
	for healthStatus(t, base) != "ok" {
		if time.Now().After(deadline) {
			t.Fatal("/health still degraded after the valid file was restored")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func healthStatus(t *testing.T, base string) string {
	resp, err := http.Get(base + "/health")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var h struct {
		Status string `json:"status"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&h)
	return h.Status
}
