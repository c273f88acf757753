package usage

import (
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/llmgw/llmgw/api/money"
)

// TestMigrateV1LedgerKeepsRecords opens a ledger written by a binary that
// knew only schema version 1: its rows survive, read as unpriced with no
// cached or reasoning tokens, and new rows carry the new columns.
func TestMigrateV1LedgerKeepsRecords(t *testing.T) {
	path := dbPath(t)
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		`CREATE TABLE schema_migrations (version INTEGER NOT NULL PRIMARY KEY, applied_at_us INTEGER NOT NULL)`,
		migrations[0],
		`INSERT INTO schema_migrations (version, applied_at_us) VALUES (1, 1)`,
		`INSERT INTO usage_records (request_id, key_id, status, input_tokens, output_tokens, created_at_us, finished_at_us)
			VALUES ('req_old', 'key-a', 'success', 11, 22, 1700000000000000, 1700000000000001)`,
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	l := openAt(t, path, Options{})
	if vs := schemaVersions(t, path); !reflect.DeepEqual(vs, []int{1, 2, 3, 4, 5}) {
		t.Fatalf("schema versions %v, want [1 2 3 4 5]", vs)
	}
	old, err := l.Get(ctxT(t), "req_old")
	if err != nil {
		t.Fatal(err)
	}
	if old.InputTokens != 11 || old.OutputTokens != 22 || old.CachedInputTokens != 0 || old.ReasoningTokens != 0 ||
		old.Cost != 0 || old.Currency != "" {
		t.Fatalf("migrated row = %+v", old)
	}
	r := finalRecord(NewRequestID(), "key-a")
	r.CachedInputTokens, r.ReasoningTokens, r.Cost, r.Currency = 3, 4, 123_456_789, "USD"
	if err := l.Finish(ctxT(t), r); err != nil {
		t.Fatal(err)
	}
	got, err := l.Get(ctxT(t), r.RequestID)
	if err != nil {
		t.Fatal(err)
	}
	if got.CachedInputTokens != 3 || got.ReasoningTokens != 4 || got.Cost != 123_456_789 || got.Currency != "USD" {
		t.Fatalf("new row read back as %+v", got)
	}
}

// TestSpendFieldsRoundTrip: the new fields survive Begin+Finish (update
// path) and Finish alone (insert path).
func TestSpendFieldsRoundTrip(t *testing.T) {
	l := openTest(t, Options{})
	for _, withBegin := range []bool{true, false} {
		r := finalRecord(NewRequestID(), "key-a")
		if withBegin {
			beginWait(t, l, Record{RequestID: r.RequestID, KeyID: "key-a"})
		}
		r.CachedInputTokens, r.ReasoningTokens, r.Cost, r.Currency = 2, 5, 7_500_000_000, "EUR"
		if err := l.Finish(ctxT(t), r); err != nil {
			t.Fatal(err)
		}
		recs, _, _, err := l.List(ctxT(t), "key-a", 1, "")
		if err != nil || len(recs) != 1 {
			t.Fatalf("List: %v, %v", recs, err)
		}
		g := recs[0]
		if g.CachedInputTokens != 2 || g.ReasoningTokens != 5 || g.Cost != 7_500_000_000 || g.Currency != "EUR" {
			t.Fatalf("begin=%v: read back %+v", withBegin, g)
		}
	}
}

func TestSummary(t *testing.T) {
	l := openTest(t, Options{})
	base := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	type row struct {
		key      string
		at       time.Duration // after base
		status   string
		in, cin  int
		out, rea int
		cost     money.Picos
		cur      string
	}
	rows := []row{
		{"key-a", 0, StatusSuccess, 100, 40, 50, 10, 1_000, "USD"},
		{"key-a", time.Minute, StatusPartial, 10, 0, 5, 0, 20, "USD"},
		{"key-a", 2 * time.Minute, StatusCanceled, 10, 0, 0, 0, 0, ""}, // unpriced route
		{"key-a", 3 * time.Minute, StatusRejected, 0, 0, 0, 0, 0, ""},
		{"key-a", time.Hour, StatusSuccess, 1, 0, 1, 0, 3, "USD"},    // at `to`: excluded
		{"key-a", -time.Second, StatusSuccess, 1, 0, 1, 0, 3, "USD"}, // before `from`: excluded
		{"key-b", time.Minute, StatusSuccess, 7, 0, 7, 0, 99, "USD"}, // another key
		{"key-a", 4 * time.Minute, StatusSuccess, 2, 1, 2, 1, 5, "EUR"},
	}
	for _, r := range rows {
		rec := finalRecord(NewRequestID(), r.key)
		rec.Status, rec.CreatedAt = r.status, base.Add(r.at)
		rec.InputTokens, rec.CachedInputTokens, rec.OutputTokens, rec.ReasoningTokens = r.in, r.cin, r.out, r.rea
		rec.Cost, rec.Currency = r.cost, r.cur
		if err := l.Finish(ctxT(t), rec); err != nil {
			t.Fatal(err)
		}
	}
	// An in-progress record is not counted.
	beginWait(t, l, Record{RequestID: NewRequestID(), KeyID: "key-a", CreatedAt: base.Add(5 * time.Minute)})

	got, err := l.Summary(ctxT(t), "key-a", base, base.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	want := Totals{Requests: 5, InputTokens: 122, CachedInputTokens: 41, OutputTokens: 57, ReasoningTokens: 11,
		Costs: map[string]money.Picos{"USD": 1_020, "EUR": 5}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Summary = %+v\nwant      %+v", got, want)
	}
	empty, err := l.Summary(ctxT(t), "key-c", base, base.Add(time.Hour))
	if err != nil || !reflect.DeepEqual(empty, Totals{}) {
		t.Fatalf("Summary of an unused key = %+v, %v", empty, err)
	}
	if _, err := l.Summary(ctxT(t), "key-a", base, base.Add(-time.Second)); !errors.Is(err, ErrBadRange) {
		t.Fatalf("reversed range: %v, want ErrBadRange", err)
	}
	if _, err := l.Summary(ctxT(t), "", base, base.Add(time.Hour)); !errors.Is(err, ErrInvalidRecord) {
		t.Fatalf("empty key: %v, want ErrInvalidRecord", err)
	}

	spend, err := l.SpendSince(ctxT(t), base)
	if err != nil {
		t.Fatal(err)
	}
	if c := spend["key-a"].Costs; !reflect.DeepEqual(c, map[string]money.Picos{"USD": 1_023, "EUR": 5}) {
		t.Errorf("SpendSince key-a costs = %v", c)
	}
	if c := spend["key-b"].Costs["USD"]; c != 99 || spend["key-b"].Requests != 1 {
		t.Errorf("SpendSince key-b = %+v", spend["key-b"])
	}
}

func TestTotalsAddOverflow(t *testing.T) {
	a := Totals{Costs: map[string]money.Picos{"USD": 1 << 62}}
	if err := a.Add(Totals{Costs: map[string]money.Picos{"USD": 1 << 62}}); !errors.Is(err, money.ErrOverflow) {
		t.Fatalf("Add past the range: %v, want ErrOverflow", err)
	}
	b := Totals{Requests: 1}
	c := b.Clone()
	if err := c.Add(Totals{Requests: 2, Costs: map[string]money.Picos{"USD": 5}}); err != nil {
		t.Fatal(err)
	}
	if b.Requests != 1 || b.Costs != nil || c.Requests != 3 || c.Costs["USD"] != 5 {
		t.Fatalf("Clone/Add: b=%+v c=%+v", b, c)
	}
}
