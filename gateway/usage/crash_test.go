//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package usage

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

const crashEnv = "LLMGW_USAGE_CRASH_CHILD"

// crashSession is the session of the records the child reports.
const crashSession = "codex-session-7"

// crashModes are the writer settings the crash test runs under. "rows"
// commits rows as the gateway does, with a journal small enough to be
// rewritten many times during the churn. In "journal-only" the writer
// gathers rows for an hour into a batch that never fills: no row is ever
// committed, so every record must come back from the journal.
var crashModes = map[string]Options{
	"rows":         {JournalSize: 8 << 10},
	"journal-only": {BatchDelay: time.Hour, MaxBatch: 1 << 30},
}

// crashChild runs in a re-executed test binary: it leaves records in every
// state, reports their ids, and keeps writing until the parent SIGKILLs it.
func crashChild(path string, opts Options) {
	ctx := context.Background()
	fail := func(err error) { fmt.Println("ERROR", err); os.Exit(3) }
	time.AfterFunc(2*time.Minute, func() { fail(errors.New("parent never killed the child")) })
	opts.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	l, err := Open(ctx, path, opts)
	if err != nil {
		fail(err)
	}
	for range 10 {
		id := NewRequestID()
		if err := l.Begin(Record{RequestID: id}); err != nil {
			fail(err)
		}
		r := finalRecord(id, "crash-key")
		r.Session = crashSession
		if err := l.Finish(ctx, r); err != nil {
			fail(err)
		}
		fmt.Println("finished", id)
	}
	for range 50 {
		id := NewRequestID()
		if err := l.Begin(Record{RequestID: id, KeyID: "crash-key", Stream: true, Endpoint: EndpointResponses, Session: crashSession}); err != nil {
			fail(err)
		}
		fmt.Println("begun", id)
	}
	fmt.Println("READY")
	// Keep the writer busy so the kill lands mid-batch.
	for i := 0; ; i++ {
		id := NewRequestID()
		_ = l.Begin(Record{RequestID: id, KeyID: "crash-key"})
		if i%2 == 0 {
			_ = l.Finish(ctx, finalRecord(id, "crash-key"))
		}
	}
}

func TestCrashRecovery(t *testing.T) {
	if p := os.Getenv(crashEnv); p != "" {
		mode, path, _ := strings.Cut(p, ":")
		crashChild(path, crashModes[mode])
		return
	}
	for mode := range crashModes {
		t.Run(mode, func(t *testing.T) { testCrashRecovery(t, mode) })
	}
}

func testCrashRecovery(t *testing.T, mode string) {
	path := dbPath(t)
	cmd := exec.Command(os.Args[0], "-test.run=^TestCrashRecovery$", "-test.count=1")
	cmd.Env = append(os.Environ(), crashEnv+"="+mode+":"+path)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	killed := false
	defer func() {
		if !killed {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	}()
	want := map[string]string{}
	sc := bufio.NewScanner(out)
	deadline := time.AfterFunc(2*time.Minute, func() { _ = cmd.Process.Kill() })
	defer deadline.Stop()
	for sc.Scan() {
		line := sc.Text()
		if line == "READY" {
			break
		}
		kind, id, ok := strings.Cut(line, " ")
		switch {
		case ok && kind == "finished":
			want[id] = StatusSuccess
		case ok && kind == "begun":
			want[id] = StatusInterrupted
		default:
			t.Fatalf("child: %s", line)
		}
	}
	if len(want) != 60 {
		t.Fatalf("child reported %d records before READY (scan err %v)", len(want), sc.Err())
	}
	time.Sleep(100 * time.Millisecond) // let the churn run so the kill lands mid-write
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	killed = true
	_ = cmd.Wait()
	if ws := cmd.ProcessState.String(); !strings.Contains(ws, "killed") {
		t.Fatalf("child did not die by SIGKILL: %s", ws)
	}

	l := openAt(t, path, Options{})
	ctx := ctxT(t)
	total, by, err := l.Count(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("after kill (%s): %d records %v, recovered %d", mode, total, by, l.Recovered())
	if by[StatusInProgress] != 0 {
		t.Fatalf("%d records still in_progress after recovery", by[StatusInProgress])
	}
	if l.Recovered() != by[StatusInterrupted] || l.Recovered() < 50 {
		t.Fatalf("Recovered = %d, interrupted = %d; want equal and >= 50", l.Recovered(), by[StatusInterrupted])
	}
	// The ids handed to the gateway (which releases their quota
	// reservations) are exactly the interrupted records.
	ids := l.RecoveredIDs()
	if len(ids) != l.Recovered() {
		t.Fatalf("RecoveredIDs has %d ids, Recovered %d", len(ids), l.Recovered())
	}
	for _, id := range ids {
		if r, err := l.Get(ctx, id); err != nil || r.Status != StatusInterrupted {
			t.Fatalf("recovered id %s: %v status %q", id, err, r.Status)
		}
	}
	for id, status := range want {
		r, err := l.Get(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if r.Status != status || r.FinishedAt.IsZero() {
			t.Fatalf("%s: status %s finished %v, want %s", id, r.Status, r.FinishedAt, status)
		}
		if status == StatusSuccess && (r.InputTokens != 5 || r.OutputTokens != 7 || len(r.Attempts) != 1 ||
			r.Endpoint != EndpointChat || r.Session != crashSession) {
			t.Fatalf("%s: final record lost its fields: %+v", id, r)
		}
		// An interrupted record keeps what its Begin said.
		if status == StatusInterrupted && (r.Endpoint != EndpointResponses || r.Session != crashSession || !r.Stream) {
			t.Fatalf("%s: interrupted record lost its Begin's fields: %+v", id, r)
		}
	}
	// Each request id exactly once, and the listing sees every one.
	listed := map[string]int{}
	for _, r := range listAll(t, l, "crash-key", 500) {
		listed[r.RequestID]++
	}
	for id, n := range listed {
		if n != 1 {
			t.Fatalf("%s listed %d times", id, n)
		}
	}
	if len(listed) != total {
		t.Fatalf("listed %d distinct ids, Count %d", len(listed), total)
	}
	for id := range want {
		if listed[id] != 1 {
			t.Fatalf("%s missing from the listing", id)
		}
	}
	// The session's listing (its partial index) holds exactly the
	// reported records, each once.
	inSession := map[string]int{}
	for _, r := range listAllFiltered(t, l, "crash-key", Filter{Session: crashSession}, 7) {
		inSession[r.RequestID]++
	}
	if len(inSession) != len(want) {
		t.Fatalf("session listing has %d records, want the %d reported", len(inSession), len(want))
	}
	for id := range want {
		if inSession[id] != 1 {
			t.Fatalf("%s listed %d times in its session", id, inSession[id])
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if l2 := openAt(t, path, Options{}); l2.Recovered() != 0 {
		t.Fatalf("second reopen recovered %d, want 0", l2.Recovered())
	}
}
