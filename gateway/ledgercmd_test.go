package gateway

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/llmgw/llmgw/gateway/peers"
	"github.com/llmgw/llmgw/gateway/usage"
)

const ledgerTestToken = "ledger-import-test-token"

func ledgerCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// ledgerReceiver is a running gateway's management port as far as the
// hand-off goes: peers.ImportHandler over a real ledger.
func ledgerReceiver(t *testing.T) (*usage.Ledger, *httptest.Server) {
	t.Helper()
	l, err := usage.Open(ledgerCtx(t), filepath.Join(t.TempDir(), "receiver.db"), usage.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	mux := http.NewServeMux()
	mux.Handle(peers.RecordsPath, peers.ImportHandler(l, ledgerTestToken, slog.New(slog.DiscardHandler)))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return l, srv
}

// strandedLedger is a closed ledger file with finished records of key "k"
// and open ones a crash left behind; it returns the path and every id.
func strandedLedger(t *testing.T, finished, open int) (string, []string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "data", "usage.db")
	l, err := usage.Open(ledgerCtx(t), path, usage.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for i := range finished + open {
		id := usage.NewRequestID()
		ids = append(ids, id)
		if err := l.Begin(usage.Record{RequestID: id, KeyID: "k"}); err != nil {
			t.Fatal(err)
		}
		if i >= finished {
			continue // in progress when the replica went away
		}
		if err := l.Finish(ledgerCtx(t), usage.Record{RequestID: id, KeyID: "k", Alias: "a", Status: usage.StatusSuccess,
			InputTokens: 3, OutputTokens: 4, Cost: 5, Currency: "USD"}); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return path, ids
}

func tokenFile(t *testing.T, token string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "peer-token")
	if err := os.WriteFile(p, []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func runLedger(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	var out, errb bytes.Buffer
	err = ledgerRun(ledgerCtx(t), args, &out, &errb)
	return out.String(), errb.String(), err
}

func TestLedgerImportHandsEveryRecordOnce(t *testing.T) {
	rl, srv := ledgerReceiver(t)
	db, ids := strandedLedger(t, 5, 2)
	tf := tokenFile(t, ledgerTestToken)

	out, errs, err := runLedger(t, "import", "--db", db, "--to", srv.URL, "--peer-token-file", tf, "--batch", "3")
	if err != nil {
		t.Fatalf("ledger import: %v\n%s", err, errs)
	}
	want := fmt.Sprintf("ledger import: %s to %s: 7 records sent, 7 added, 0 already present (3 batches)\n", db, srv.URL)
	if out != want {
		t.Fatalf("output %q, want %q", out, want)
	}
	got, err := rl.ExportBatch(ledgerCtx(t), "", 100)
	if err != nil {
		t.Fatal(err)
	}
	var gotIDs []string
	statuses := map[string]int{}
	for _, r := range got {
		gotIDs = append(gotIDs, r.RequestID)
		statuses[r.Status]++
	}
	if !slices.Equal(gotIDs, ids) {
		t.Fatalf("receiver holds %v, want %v", gotIDs, ids)
	}
	// The two a crash left open arrive closed as interrupted.
	if statuses[usage.StatusSuccess] != 5 || statuses[usage.StatusInterrupted] != 2 {
		t.Fatalf("statuses at the receiver %v", statuses)
	}

	// Run again: nothing left, nothing sent, success.
	out, errs, err = runLedger(t, "import", "--db", db, "--to", srv.URL+"/", "--peer-token-file", tf)
	if err != nil {
		t.Fatalf("second run: %v\n%s", err, errs)
	}
	if !strings.Contains(out, ": 0 records sent, 0 added, 0 already present (0 batches)") {
		t.Fatalf("second run output %q", out)
	}
	if n, _, _ := rl.Count(ledgerCtx(t)); n != len(ids) {
		t.Fatalf("receiver holds %d records after the second run, want %d", n, len(ids))
	}
}

// A run interrupted after the receiver committed a batch is finished by the
// next run, to that receiver only.
func TestLedgerImportResumesToTheSameReceiver(t *testing.T) {
	rl, srv := ledgerReceiver(t)
	db, ids := strandedLedger(t, 4, 0)
	tf := tokenFile(t, ledgerTestToken)
	// What an interrupted run leaves: its marker, and the first records
	// already at the receiver but not yet deleted here.
	l, err := usage.Open(ledgerCtx(t), db, usage.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	first, err := l.ExportBatch(ledgerCtx(t), "", 2)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.SetHandoff(ledgerCtx(t), srv.URL); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := rl.Import(ledgerCtx(t), first); err != nil {
		t.Fatal(err)
	}

	_, _, err = runLedger(t, "import", "--db", db, "--to", "http://llmgw-gateway-1.peers:9090", "--peer-token-file", tf)
	if !errors.Is(err, peers.ErrHandoffElsewhere) || !strings.Contains(err.Error(), srv.URL) {
		t.Fatalf("import to another receiver: %v; want ErrHandoffElsewhere naming %s", err, srv.URL)
	}
	out, errs, err := runLedger(t, "import", "--db", db, "--to", srv.URL, "--peer-token-file", tf)
	if err != nil {
		t.Fatalf("resume: %v\n%s", err, errs)
	}
	if !strings.Contains(out, "resuming the interrupted hand-off") || !strings.Contains(out, "4 records sent, 2 added, 2 already present") {
		t.Fatalf("resume output %q", out)
	}
	if n, _, _ := rl.Count(ledgerCtx(t)); n != len(ids) {
		t.Fatalf("receiver holds %d records, want %d", n, len(ids))
	}
}

func TestLedgerImportErrors(t *testing.T) {
	_, srv := ledgerReceiver(t)
	db, _ := strandedLedger(t, 2, 0)
	tf := tokenFile(t, ledgerTestToken)
	wrong := tokenFile(t, "not-the-token")
	empty := tokenFile(t, "  ")
	missing := filepath.Join(t.TempDir(), "nope.db")
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"no subcommand", nil, "missing subcommand"},
		{"unknown subcommand", []string{"export"}, `unknown subcommand "export"`},
		{"no --db", []string{"import", "--to", srv.URL, "--peer-token-file", tf}, "--db is required"},
		{"no --to", []string{"import", "--db", db, "--peer-token-file", tf}, "--to is required"},
		{"no token file", []string{"import", "--db", db, "--to", srv.URL}, "--peer-token-file is required"},
		{"empty token file", []string{"import", "--db", db, "--to", srv.URL, "--peer-token-file", empty}, "is empty"},
		{"missing ledger", []string{"import", "--db", missing, "--to", srv.URL, "--peer-token-file", tf}, "no such file"},
		{"bad URL", []string{"import", "--db", db, "--to", "gw-0:9090", "--peer-token-file", tf}, "not an http(s) base URL"},
		{"wrong token", []string{"import", "--db", db, "--to", srv.URL, "--peer-token-file", wrong}, "HTTP 401"},
		{"bad batch", []string{"import", "--db", db, "--to", srv.URL, "--peer-token-file", tf, "--batch", "0"}, "--batch"},
		{"stray argument", []string{"import", "--db", db, "--to", srv.URL, "--peer-token-file", tf, "extra"}, "unexpected arguments"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := runLedger(t, tc.args...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want one with %q", err, tc.want)
			}
		})
	}
	if _, err := os.Stat(missing); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a missing --db was created: %v", err)
	}
	// The failed runs moved nothing.
	l, err := usage.Open(ledgerCtx(t), db, usage.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if n, _, _ := l.Count(ledgerCtx(t)); n != 2 {
		t.Fatalf("the stranded ledger has %d records after failed runs, want 2", n)
	}
}

func TestLedgerHelp(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--help"}, "Usage: llmgw ledger <subcommand>"},
		{[]string{"help"}, "import   hand every usage record"},
		{[]string{"import", "--help"}, "-peer-token-file"},
	} {
		_, errs, err := runLedger(t, tc.args...)
		if !errors.Is(err, flag.ErrHelp) || !strings.Contains(errs, tc.want) {
			t.Errorf("%v: err = %v, output %q; want flag.ErrHelp and %q", tc.args, err, errs, tc.want)
		}
	}
}
