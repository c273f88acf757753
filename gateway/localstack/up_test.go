package localstack

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/llmgw/llmgw/gateway/usage"
)

// The child process mode of this test binary: a real `llmgw up` that the
// parent can kill -9.
func TestMain(m *testing.M) {
	if dir := os.Getenv("LLMGW_TEST_UP_STATE_DIR"); dir != "" {
		err := Up(context.Background(), UpConfig{StateDir: dir, Addr: "127.0.0.1:0", AlphaAddr: "127.0.0.1:0",
			BetaAddr: "127.0.0.1:0", Out: io.Discard, Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))})
		if err != nil {
			os.Stderr.WriteString(err.Error() + "\n")
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

type stack struct {
	cmd *exec.Cmd
	env map[string]string
}

func startStack(t *testing.T, dir string) *stack {
	t.Helper()
	envPath := filepath.Join(dir, envFile)
	before, _ := os.Stat(envPath)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "LLMGW_TEST_UP_STATE_DIR="+dir)
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _, _ = cmd.Process.Wait() })
	// The env file is (re)written once the gateway serves.
	deadline := time.Now().Add(20 * time.Second)
	for {
		st, err := os.Stat(envPath)
		if err == nil && (before == nil || st.ModTime().After(before.ModTime()) || !os.SameFile(st, before)) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("stack did not come up")
		}
		time.Sleep(20 * time.Millisecond)
	}
	env, err := readEnv(envPath)
	if err != nil {
		t.Fatal(err)
	}
	if st, _ := os.Stat(envPath); st.Mode().Perm() != 0o600 {
		t.Fatalf("env file mode %v, want 0600", st.Mode().Perm())
	}
	return &stack{cmd: cmd, env: env}
}

func (s *stack) post(ctx context.Context, key, body string) (*http.Response, error) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, s.env["LLMGW_URL"]+"/v1/chat/completions", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	return http.DefaultClient.Do(req)
}

// 10. kill -9 during in-flight streams and slow requests, restart: every
// request has exactly one final record; keys and history are reused.
func TestKillDuringRequestsThenRestart(t *testing.T) {
	dir := t.TempDir()
	s := startStack(t, dir)
	keyA := s.env["LLMGW_KEY_A"]
	const streams, slow = 5, 4 // within the demo keys' burst of 10
	var wg sync.WaitGroup
	var mu sync.Mutex
	var streamIDs []string
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for i := 0; i < streams; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := s.post(ctx, keyA, `{"model":"chat-alpha","stream":true,"messages":[{"role":"user","content":"go\n@mock alpha:chunks=50 alpha:chunk_delay_ms=200"}]}`)
			if err != nil {
				t.Errorf("stream: %v", err)
				return
			}
			// Headers and the first event arrived: the stream is established.
			line, err := bufio.NewReader(resp.Body).ReadString('\n')
			if err != nil || !strings.HasPrefix(line, "data: ") {
				t.Errorf("first stream line %q: %v", line, err)
			}
			mu.Lock()
			streamIDs = append(streamIDs, resp.Header.Get("X-Request-Id"))
			mu.Unlock()
			go func() { _, _ = io.Copy(io.Discard, resp.Body); resp.Body.Close() }()
		}()
	}
	for i := 0; i < slow; i++ {
		go func() {
			resp, err := s.post(ctx, keyA, `{"model":"chat-restricted","messages":[{"role":"user","content":"go\n@mock alpha:delay_ms=10000"}]}`)
			if err == nil {
				resp.Body.Close()
			}
		}()
	}
	wg.Wait()
	// Wait until the mock has seen every request: each was admitted and its
	// record opened before the provider call.
	deadline := time.Now().Add(10 * time.Second)
	for mockTotal(t, s.env["LLMGW_MOCK_ALPHA_URL"]) < streams+slow {
		if time.Now().After(deadline) {
			t.Fatal("mock did not see all requests")
		}
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(100 * time.Millisecond)
	if err := s.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_, _ = s.cmd.Process.Wait()
	cancel()

	// Restart on the same state directory.
	s2 := startStack(t, dir)
	if s2.env["LLMGW_KEY_A"] != keyA {
		t.Fatal("second start did not reuse key A")
	}
	req, _ := http.NewRequest(http.MethodGet, s2.env["LLMGW_URL"]+"/v1/usage?limit=500", nil)
	req.Header.Set("Authorization", "Bearer "+keyA)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var list struct {
		Data []struct {
			RequestID string `json:"request_id"`
			Status    string `json:"status"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&list); err != nil {
		t.Fatal(err)
	}
	if len(list.Data) != streams+slow {
		t.Fatalf("%d records after restart, want %d", len(list.Data), streams+slow)
	}
	byID := map[string]int{}
	for _, d := range list.Data {
		byID[d.RequestID]++
		if d.Status != "interrupted" {
			t.Fatalf("record %s status %s, want interrupted", d.RequestID, d.Status)
		}
	}
	for _, id := range streamIDs {
		if byID[id] != 1 {
			t.Fatalf("stream %s has %d records", id, byID[id])
		}
	}
	_ = s2.cmd.Process.Signal(syscall.SIGTERM)
	_, _ = s2.cmd.Process.Wait()
	// After a clean stop nothing is left in progress.
	l, err := usage.Open(context.Background(), filepath.Join(dir, usageDBFile), usage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if l.Recovered() != 0 {
		t.Fatalf("%d records left in progress after a clean stop", l.Recovered())
	}
}

func mockTotal(t *testing.T, base string) int {
	var c struct {
		Total int `json:"total"`
	}
	getJSON(t, base+"/mock/calls", &c)
	return c.Total
}
