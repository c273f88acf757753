package usage

import (
	"context"
	"log/slog"
	"path/filepath"
	"testing"
	"time"
)

func testLogger(t testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelDebug}))
}

func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func dbPath(t testing.TB) string {
	return filepath.Join(t.TempDir(), "state", "usage.db")
}

func openAt(t testing.TB, path string, opts Options) *Ledger {
	t.Helper()
	if opts.Logger == nil {
		opts.Logger = testLogger(t)
	}
	l, err := Open(ctxT(t), path, opts)
	if err != nil {
		t.Fatalf("Open(%s): %v", path, err)
	}
	t.Cleanup(func() { _ = l.Close() })
	return l
}

func openTest(t testing.TB, opts Options) *Ledger {
	t.Helper()
	return openAt(t, dbPath(t), opts)
}

// beginWait begins r and fails the test unless the Begin is durable.
func beginWait(t testing.TB, l *Ledger, r Record) {
	t.Helper()
	if err := l.Begin(r); err != nil {
		t.Fatalf("Begin(%s): %v", r.RequestID, err)
	}
}

func finalRecord(id, key string) Record {
	return Record{
		RequestID:      id,
		Endpoint:       EndpointChat,
		KeyID:          key,
		KeyFingerprint: "0123456789ab",
		Alias:          "chat-alpha",
		Provider:       "alpha",
		ProviderModel:  "alpha-large",
		Status:         StatusSuccess,
		HTTPStatus:     200,
		Attempts:       []Attempt{{Provider: "alpha", Model: "alpha-large", Outcome: OutcomeOK, StatusCode: 200, LatencyMs: 3}},
		InputTokens:    5,
		OutputTokens:   7,
		LatencyMs:      4,
	}
}

// wantSuccessCreatedAt fails unless request id's record is final with
// success and keeps created, its Begin's time.
func wantSuccessCreatedAt(t testing.TB, l *Ledger, id string, created time.Time) {
	t.Helper()
	got, err := l.Get(ctxT(t), id)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != StatusSuccess || !got.CreatedAt.Equal(created) {
		t.Fatalf("record = status %q created %v; want success created at the Begin's %v", got.Status, got.CreatedAt, created)
	}
}
