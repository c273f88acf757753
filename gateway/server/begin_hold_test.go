package server_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/llmgw/llmgw/gateway/localstack"
	"github.com/llmgw/llmgw/gateway/usage"
)

// inProgress counts the ledger's in_progress rows.
func inProgress(t *testing.T, l *usage.Ledger) int {
	t.Helper()
	_, by, err := l.Count(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return by[usage.StatusInProgress]
}

// With a Begin hold far longer than the request, a JSON request leaves no
// in_progress row while it runs (its Begin waits for its Finish and they are
// written as one final row), but a stream's row is written as soon as the
// request is known to be a stream, long before the provider's first byte.
func TestBeginHoldJSONWaitsStreamPersistsAtOnce(t *testing.T) {
	st, err := localstack.Start(context.Background(), localstack.Options{Dir: t.TempDir(), LedgerBeginHold: time.Hour,
		DrainTimeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	post := func(stream bool) <-chan string {
		done := make(chan string, 1)
		body := `{"model":"chat-alpha","stream":` + map[bool]string{true: "true", false: "false"}[stream] +
			`,"messages":[{"role":"user","content":"hi\n@mock alpha:first_byte_delay_ms=1500"}]}`
		go func() {
			req, _ := http.NewRequest(http.MethodPost, st.URL+"/v1/chat/completions", strings.NewReader(body))
			req.Header.Set("Authorization", "Bearer "+st.KeyA)
			req.Header.Set("Content-Type", "application/json")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				done <- "error: " + err.Error()
				return
			}
			defer resp.Body.Close()
			_, _ = io.Copy(io.Discard, resp.Body)
			done <- resp.Header.Get("X-Request-Id") + " " + resp.Status
		}()
		return done
	}

	// JSON: the provider takes 1.5 s; no row may appear meanwhile.
	done := post(false)
	deadline := time.Now().Add(1200 * time.Millisecond)
	for time.Now().Before(deadline) {
		if n := inProgress(t, st.Ledger); n != 0 {
			t.Fatalf("a JSON request's held Begin was written (%d in_progress rows)", n)
		}
		time.Sleep(50 * time.Millisecond)
	}
	got := <-done
	id, status, _ := strings.Cut(got, " ")
	if status != "200 OK" {
		t.Fatalf("JSON answer: %s", got)
	}
	if r, err := st.Ledger.Get(context.Background(), id); err != nil || r.Status != usage.StatusSuccess {
		t.Fatalf("JSON record = %+v, %v", r, err)
	}

	// Stream: the row must be there well before the first byte (1.5 s).
	done = post(true)
	deadline = time.Now().Add(time.Second)
	for inProgress(t, st.Ledger) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("a stream's in_progress row was not written while the provider worked")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if got := <-done; !strings.HasSuffix(got, "200 OK") {
		t.Fatalf("stream answer: %s", got)
	}
	if n := inProgress(t, st.Ledger); n != 0 {
		t.Fatalf("%d in_progress rows after the stream ended", n)
	}
}
