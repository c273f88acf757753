package localstack

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/llmgw/llmgw/gateway/keys"
)

// Standalone mode: `llmgw keys rotate --into` the watched snapshot file
// rotates a key without a restart; both keys are served as one during the
// grace window, and a second rotation with --grace 0 ends it at once: the
// previous key is then refused with key_rotated, and the one before it is
// not known at all (invalid_api_key).
func TestRotateIntoTheWatchedSnapshot(t *testing.T) {
	dir := t.TempDir()
	st, err := Start(context.Background(), Options{Dir: dir, ReloadInterval: 50 * time.Millisecond, DrainTimeout: time.Second,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := st.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	}()
	chat := func(key string) (int, string) {
		req, _ := http.NewRequest(http.MethodPost, st.URL+"/v1/chat/completions",
			strings.NewReader(`{"model":"chat-alpha","messages":[{"role":"user","content":"hi"}]}`))
		req.Header.Set("Authorization", "Bearer "+key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var e struct {
			Error struct{ Code string } `json:"error"`
		}
		_ = json.NewDecoder(resp.Body).Decode(&e)
		return resp.StatusCode, e.Error.Code
	}
	rotate := func(grace, keyFile string) string {
		t.Helper()
		if err := keys.Main(context.Background(), []string{"rotate", "--id", "key-a", "--grace", grace,
			"--into", st.SnapshotPath, "--key-out", keyFile}); err != nil {
			t.Fatalf("llmgw keys rotate: %v", err)
		}
		b, err := os.ReadFile(keyFile)
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(string(b))
	}
	served := func(key string) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			status, code := chat(key)
			if status == http.StatusOK {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("the rotated key is not served: %d %s", status, code)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	first := st.KeyA
	second := rotate("1h", filepath.Join(dir, "second.key"))
	served(second)
	if status, code := chat(first); status != http.StatusOK {
		t.Fatalf("the previous key in its grace: %d %s", status, code)
	}
	third := rotate("0s", filepath.Join(dir, "third.key"))
	served(third)
	if status, code := chat(second); status != http.StatusUnauthorized || code != "key_rotated" {
		t.Fatalf("the previous key after --grace 0: %d %s", status, code)
	}
	if status, code := chat(first); status != http.StatusUnauthorized || code != "invalid_api_key" {
		t.Fatalf("the key before it: %d %s", status, code)
	}
}
