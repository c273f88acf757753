package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
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
// written as one final row). A stream's Begin is durable long before the
// provider's first byte: without the begin journal its row is written as
// soon as the request is known to be a stream; with it (the default) the
// journal holds it from the start and the database never sees an
// in_progress row.
func TestBeginHoldJSONWaitsStreamPersistsAtOnce(t *testing.T) {
	for _, journal := range []bool{false, true} {
		t.Run(map[bool]string{false: "row", true: "journal"}[journal], func(t *testing.T) {
			testBeginHold(t, journal)
		})
	}
}

func testBeginHold(t *testing.T, journal bool) {
	st, err := localstack.Start(context.Background(), localstack.Options{Dir: t.TempDir(), LedgerBeginHold: time.Hour,
		DrainTimeout: 2 * time.Second, LedgerNoBeginJournal: !journal})
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

	// Stream: the Begin must be durable well before the first byte (1.5 s).
	batches := st.Ledger.Stats().Batches
	done = post(true)
	deadline = time.Now().Add(time.Second)
	for !durableBegin(t, st, journal, id) {
		if time.Now().After(deadline) {
			t.Fatal("a stream's Begin was not made durable while the provider worked")
		}
		time.Sleep(10 * time.Millisecond)
	}
	got = <-done
	if !strings.HasSuffix(got, "200 OK") {
		t.Fatalf("stream answer: %s", got)
	}
	id, _, _ = strings.Cut(got, " ")
	if r, err := st.Ledger.Get(context.Background(), id); err != nil || r.Status != usage.StatusSuccess {
		t.Fatalf("stream record = %+v, %v", r, err)
	}
	if n := inProgress(t, st.Ledger); n != 0 {
		t.Fatalf("%d in_progress rows after the stream ended", n)
	}
	// With the journal the stream cost one transaction: its final row.
	if n := st.Ledger.Stats().Batches - batches; journal && n != 1 {
		t.Fatalf("the stream took %d transactions, want 1", n)
	}
}

// durableBegin: the open stream's in_progress row is in the database, or
// (journal) its Begin is in the begin journal file and not in the database.
// The journal still holds the line of the JSON request before it (done).
func durableBegin(t *testing.T, st *localstack.Stack, journal bool, done string) bool {
	t.Helper()
	if !journal {
		return inProgress(t, st.Ledger) == 1
	}
	if n := inProgress(t, st.Ledger); n != 0 {
		t.Fatalf("%d in_progress rows with the journal on", n)
	}
	b, err := os.ReadFile(st.Ledger.Path() + "-begins")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range bytes.Split(b, []byte("\n")) {
		var l struct {
			ID string `json:"id"`
		}
		if json.Unmarshal(line, &l) == nil && l.ID != "" && l.ID != done {
			return true
		}
	}
	return false
}
