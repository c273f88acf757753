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

// inProgress counts the ledger's in_progress records.
func inProgress(t *testing.T, l *usage.Ledger) int {
	t.Helper()
	_, by, err := l.Count(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return by[usage.StatusInProgress]
}

// While the provider works (1.5 s here, as a real model takes seconds), a
// request's in_progress record is durable, JSON and stream alike, so a
// crash then leaves a record that recovery finalizes; once the answer is
// out, the final record has replaced it.
func TestInProgressRecordWhileTheProviderWorks(t *testing.T) {
	st, err := localstack.Start(context.Background(), localstack.Options{Dir: t.TempDir(), DrainTimeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	for _, stream := range []bool{false, true} {
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
		deadline := time.Now().Add(time.Second)
		for inProgress(t, st.Ledger) != 1 {
			if time.Now().After(deadline) {
				t.Fatalf("stream=%v: no in_progress record while the provider works", stream)
			}
			time.Sleep(10 * time.Millisecond)
		}
		got := <-done
		id, status, _ := strings.Cut(got, " ")
		if status != "200 OK" {
			t.Fatalf("stream=%v: %s", stream, got)
		}
		if r, err := st.Ledger.Get(context.Background(), id); err != nil || r.Status != usage.StatusSuccess || r.Stream != stream {
			t.Fatalf("stream=%v: record = %+v, %v", stream, r, err)
		}
		if n := inProgress(t, st.Ledger); n != 0 {
			t.Fatalf("stream=%v: %d in_progress records after the answer", stream, n)
		}
	}
}
