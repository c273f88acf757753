// Package testutil holds the small helpers several test packages share:
// a goroutine-safe log buffer, the envtest gate (RequireEnvtest, the one
// every envtest suite goes through), the probes of the hot-load tests (one
// chat call, wait until served, a steady load) and the live heap of the
// memory tests.
package testutil

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// SyncBuffer lets a test read logs while server goroutines write them.
type SyncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *SyncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *SyncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// ChatStatus sends one minimal chat request and returns its HTTP status
// (-1 when the request could not be sent).
func ChatStatus(base, key, model string) int {
	req, _ := http.NewRequest(http.MethodPost, base+"/v1/chat/completions",
		strings.NewReader(`{"model":"`+model+`","messages":[{"role":"user","content":"hi"}]}`))
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return -1
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// WaitServed polls cond every 5 ms and returns how long it took to hold;
// the test fails when it does not hold within timeout.
func WaitServed(t *testing.T, what string, timeout time.Duration, cond func() bool) time.Duration {
	t.Helper()
	start := time.Now()
	for !cond() {
		if time.Since(start) > timeout {
			t.Fatalf("%s: not served within %v", what, timeout)
		}
		time.Sleep(5 * time.Millisecond)
	}
	return time.Since(start)
}
