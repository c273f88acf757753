package mockproviders

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/llmgw/llmgw/test/testutil"
)

func noEnv(string) string { return "" }

func TestMainHelp(t *testing.T) {
	var out testutil.SyncBuffer
	err := run(t.Context(), []string{"--help"}, &out, noEnv, nil)
	if !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("err %v, want flag.ErrHelp", err)
	}
	for _, f := range []string{"-flavor", "-addr", "-require-key-file", "-default-chunks", "-default-chunk-delay", "-default-delay", "-shutdown-grace", "-log-format", "-log-level", KeyFileEnv, "@mock"} {
		if !strings.Contains(out.String(), f) {
			t.Errorf("help does not mention %s", f)
		}
	}
}

func TestMainFlagErrors(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty")
	os.WriteFile(empty, []byte(" \n"), 0o600)
	tests := []struct {
		args []string
		want string
	}{
		{nil, "--flavor is required"},
		{[]string{"--flavor", "gamma"}, "want alpha, beta or otlp"},
		{[]string{"--flavor", "alpha", "extra"}, "unexpected arguments"},
		{[]string{"--flavor", "alpha", "--default-chunks", "0"}, "at least 1"},
		{[]string{"--flavor", "alpha", "--default-delay", "soon"}, "invalid value"},
		{[]string{"--flavor", "alpha", "--log-format", "xml"}, "text or json"},
		{[]string{"--flavor", "alpha", "--require-key-file", filepath.Join(dir, "missing")}, "no such file"},
		{[]string{"--flavor", "alpha", "--require-key-file", empty}, "is empty"},
		{[]string{"--flavor", "beta", "--addr", "256.0.0.1:bad"}, "listen"},
	}
	for _, tt := range tests {
		err := run(t.Context(), tt.args, io.Discard, noEnv, nil)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%q: err %v, want %q", tt.args, err, tt.want)
		}
	}
}

// startMain runs the CLI on a free port and returns its base URL and a stop
// function that cancels ctx (as SIGTERM would) and reports run's result.
func startMain(t *testing.T, args []string, getenv func(string) string, logs io.Writer) (string, func() error) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	ready := make(chan string, 1)
	errc := make(chan error, 1)
	go func() {
		errc <- run(ctx, append(args, "--addr", "127.0.0.1:0"), logs, getenv, func(a string) { ready <- a })
	}()
	select {
	case addr := <-ready:
		return "http://" + addr, func() error {
			cancel()
			select {
			case err := <-errc:
				return err
			case <-time.After(10 * time.Second):
				t.Fatal("run did not return after cancel")
				return nil
			}
		}
	case err := <-errc:
		cancel()
		t.Fatalf("run: %v", err)
	}
	return "", nil
}

func TestMainServesWithKeyFromEnv(t *testing.T) {
	const key = "provider-key-from-file"
	path := filepath.Join(t.TempDir(), "key")
	os.WriteFile(path, []byte("  "+key+"\n"), 0o600)
	var logs testutil.SyncBuffer
	env := func(k string) string {
		if k == KeyFileEnv {
			return path
		}
		return ""
	}
	base, stop := startMain(t, []string{"--flavor", "beta", "--log-format", "json", "--log-level", "debug"}, env, &logs)

	post := func(hdr string) int {
		req, _ := http.NewRequest(http.MethodPost, base+"/v1/messages", bytes.NewReader(reqSpec{user: "secretprompt words"}.body(Beta)))
		if hdr != "" {
			req.Header.Set("x-api-key", hdr)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	if got := post(key); got != 200 {
		t.Errorf("right key: %d", got)
	}
	if got := post("nope"); got != 401 {
		t.Errorf("wrong key: %d", got)
	}
	resp, err := http.Get(base + "/healthz")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("healthz: %v %v", resp, err)
	}
	resp.Body.Close()
	if err := stop(); err != nil {
		t.Fatalf("graceful stop: %v", err)
	}
	l := logs.String()
	if !strings.Contains(l, `"msg":"mock provider listening"`) || !strings.Contains(l, `"require_key":true`) || !strings.Contains(l, `"msg":"mock call"`) {
		t.Errorf("logs: %s", l)
	}
	if strings.Contains(l, key) || strings.Contains(l, "secretprompt") {
		t.Errorf("logs leak the key or the prompt: %s", l)
	}
}

// On SIGTERM an in-flight stall must not hold the process forever: after the
// grace period the stalled call is cut and run returns.
func TestMainShutdownCutsStallAfterGrace(t *testing.T) {
	base, stop := startMain(t, []string{"--flavor", "alpha", "--shutdown-grace", "200ms"}, noEnv, io.Discard)
	body := reqSpec{user: "x\n@mock alpha:stall_after=1", stream: true}.body(Alpha)
	resp, err := http.Post(base+"/v1/chat/completions", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	buf := make([]byte, 1)
	if _, err := resp.Body.Read(buf); err != nil {
		t.Fatalf("no stream bytes before stopping: %v", err)
	}
	start := time.Now()
	if err := stop(); err != nil {
		t.Fatalf("stop: %v", err)
	}
	if d := time.Since(start); d < 150*time.Millisecond || d > 5*time.Second {
		t.Errorf("shutdown took %v, want about the 200ms grace", d)
	}
	if _, err := io.ReadAll(resp.Body); err == nil {
		t.Error("stalled stream ended cleanly, want a cut")
	}
}
