package localstack

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/llmgw/llmgw/api/snapshot"
)

// Standalone mode: the snapshot file is watched; a valid change is served
// without a restart, an invalid one is reported and the old config kept.
func TestRunReloadsSnapshotFile(t *testing.T) {
	st, err := Start(context.Background(), Options{Dir: t.TempDir(), ReloadInterval: 50 * time.Millisecond, DrainTimeout: time.Second,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := st.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	}()
	base, keyA, path := st.URL, st.KeyA, st.SnapshotPath
	snap, err := snapshot.LoadFile(path)
	if err != nil {
		t.Fatal(err)
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
	var h struct {
		Status string `json:"status"`
	}
	getJSON(t, base+"/health", &h)
	return h.Status
}

// getJSON decodes the JSON answer of GET url into v.
func getJSON(t *testing.T, url string, v any) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	_ = json.NewDecoder(resp.Body).Decode(v)
}
