package gateway_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/llmgw/llmgw/api/snapshot"
	"github.com/llmgw/llmgw/gateway"
	"github.com/llmgw/llmgw/gateway/source"
)

// startGateway runs a gateway on an empty snapshot with both ports on
// loopback; it stops with the test.
func startGateway(t *testing.T, p gateway.Profiling) *gateway.Gateway {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "snapshot.json")
	if err := snapshot.WriteFile(path, &snapshot.Snapshot{}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	g, err := gateway.Start(ctx, gateway.Config{Addr: "127.0.0.1:0", MgmtAddr: "127.0.0.1:0", Profiling: p,
		Source: source.File{Path: path}, DBPath: filepath.Join(dir, "usage.db"), DrainTimeout: time.Second,
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- g.Wait(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return g
}

func fetch(t *testing.T, url string) (*http.Response, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(b)
}

// Profiles are served on the management port, every one of net/http/pprof's
// endpoints, and on the data port none is: there every /debug/pprof path is
// an unknown endpoint in the API's error shape.
func TestProfilesOnTheManagementPortOnly(t *testing.T) {
	g := startGateway(t, gateway.Profiling{})
	cases := []struct {
		path, want string // want: a substring of the management port's answer
	}{
		{"/debug/pprof/", "goroutine"},
		{"/debug/pprof/goroutine?debug=1", "goroutine profile:"},
		{"/debug/pprof/heap?debug=1", "heap profile:"},
		{"/debug/pprof/allocs?debug=1", "heap profile:"},
		{"/debug/pprof/block?debug=1", "--- contention"},
		{"/debug/pprof/mutex?debug=1", "--- mutex"},
		{"/debug/pprof/threadcreate?debug=1", "threadcreate profile:"},
		{"/debug/pprof/cmdline", ""},
		{"/debug/pprof/symbol", "num_symbols"},
		{"/debug/pprof/profile?seconds=1", ""},
		{"/debug/pprof/trace?seconds=0.1", ""},
	}
	for _, tc := range cases {
		t.Run(tc.path, func(t *testing.T) {
			resp, body := fetch(t, "http://"+g.MgmtAddr+tc.path)
			if resp.StatusCode != http.StatusOK || !strings.Contains(body, tc.want) || len(body) == 0 {
				t.Fatalf("management port: %d %q", resp.StatusCode, truncate(body))
			}
			resp, body = fetch(t, "http://"+g.Addr+tc.path)
			var e struct {
				Error struct {
					Code      string `json:"code"`
					RequestID string `json:"request_id"`
				} `json:"error"`
			}
			if err := json.Unmarshal([]byte(body), &e); err != nil || resp.StatusCode != http.StatusNotFound {
				t.Fatalf("data port: %d %q (%v)", resp.StatusCode, truncate(body), err)
			}
			if e.Error.Code != "unknown_endpoint" || e.Error.RequestID == "" || e.Error.RequestID != resp.Header.Get("X-Request-Id") {
				t.Fatalf("data port: not the API's error shape: %s", body)
			}
		})
	}
	// go tool pprof resolves addresses with a POST.
	resp, err := http.Post("http://"+g.MgmtAddr+"/debug/pprof/symbol", "text/plain", strings.NewReader("0x0"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("POST /debug/pprof/symbol: %d", resp.StatusCode)
	}
}

func TestProfilesCanBeTurnedOff(t *testing.T) {
	g := startGateway(t, gateway.Profiling{Disabled: true})
	if resp, _ := fetch(t, "http://"+g.MgmtAddr+"/debug/pprof/goroutine?debug=1"); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("with profiling off: %d", resp.StatusCode)
	}
	if resp, _ := fetch(t, "http://"+g.MgmtAddr+"/metrics"); resp.StatusCode != http.StatusOK {
		t.Fatalf("/metrics with profiling off: %d", resp.StatusCode)
	}
}

// The block and mutex profiles sample only when asked to (process-wide).
func TestBlockAndMutexProfileRates(t *testing.T) {
	prevMutex := runtime.SetMutexProfileFraction(-1)
	t.Cleanup(func() {
		runtime.SetBlockProfileRate(0)
		runtime.SetMutexProfileFraction(prevMutex)
	})
	g := startGateway(t, gateway.Profiling{BlockRate: 1, MutexFraction: 3})
	if got := runtime.SetMutexProfileFraction(-1); got != 3 {
		t.Fatalf("mutex profile fraction %d, want 3", got)
	}
	// One blocking event of this test's own must show in the block profile.
	ch := make(chan struct{})
	go func() { time.Sleep(20 * time.Millisecond); close(ch) }()
	<-ch
	if _, body := fetch(t, "http://"+g.MgmtAddr+"/debug/pprof/block?debug=1"); !strings.Contains(body, "TestBlockAndMutexProfileRates") {
		t.Fatalf("the block profile has not sampled a blocking receive:\n%s", truncate(body))
	}
}

func TestProfilingFlagsAreChecked(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "snapshot.json")
	if err := snapshot.WriteFile(path, &snapshot.Snapshot{}); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"negative rate", []string{"--profile-block-rate=-1"}, "≥ 0"},
		{"negative fraction", []string{"--profile-mutex-fraction=-5"}, "≥ 0"},
		{"no management port", []string{"--mgmt-addr=", "--profile-block-rate=1000"}, "management port"},
		{"profiles off", []string{"--pprof=false", "--profile-mutex-fraction=10"}, "management port"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"--snapshot", path, "--db", filepath.Join(dir, "usage.db"),
				"--addr", "127.0.0.1:0", "--log-level", "error"}, tc.args...)
			err := gateway.Main(context.Background(), args)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Main(%v): %v", tc.args, err)
			}
		})
	}
}

func truncate(s string) string {
	if len(s) > 400 {
		return s[:400] + "…"
	}
	return s
}
