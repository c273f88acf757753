package usage

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// rawLedgerDB opens path the way the writer does (WAL, no automatic
// checkpoint) on one connection, migrated through the first n migrations.
func rawLedgerDB(t *testing.T, path string, n int) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", dsn(path, url.Values{"_pragma": {"journal_mode(WAL)", "synchronous(NORMAL)", "wal_autocheckpoint(0)"}}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	db.SetMaxOpenConns(1)
	all := migrations
	migrations = migrations[:n]
	defer func() { migrations = all }()
	if _, _, err := migrate(ctxT(t), db); err != nil {
		t.Fatal(err)
	}
	return db
}

// queryPlan is SQLite's plan of q, its steps joined by "; ".
func queryPlan(t *testing.T, db *sql.DB, q string, args ...any) string {
	t.Helper()
	var plan []string
	r, err := db.QueryContext(ctxT(t), "EXPLAIN QUERY PLAN "+q, args...)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for r.Next() {
		var id, parent, unused int
		var detail string
		if err := r.Scan(&id, &parent, &unused, &detail); err != nil {
			t.Fatal(err)
		}
		plan = append(plan, detail)
	}
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	return strings.Join(plan, "; ")
}

// TestListWalksAnIndexBackwards: the listing, newest first, is served by
// walking an ascending index backwards, never by sorting a key's whole
// history: the (key_id, request_id) index, or with a session filter the
// session's partial index, whatever else the filter holds.
func TestListWalksAnIndexBackwards(t *testing.T) {
	db := rawLedgerDB(t, filepath.Join(t.TempDir(), "usage.db"), len(migrations))
	for _, c := range []struct {
		f     Filter
		index string
	}{
		{Filter{}, "usage_records_key"},
		{Filter{Endpoint: EndpointMessages}, "usage_records_key"},
		{Filter{Session: "s-1"}, "usage_records_key_session"},
		{Filter{Endpoint: EndpointResponses, Session: "s-1"}, "usage_records_key_session"},
	} {
		for _, after := range []string{"", "req_x"} {
			q, args := listQuery("k", c.f, after, 10)
			got := queryPlan(t, db, q, args...)
			if !strings.Contains(got, "USING INDEX "+c.index+" ") || strings.Contains(got, "TEMP B-TREE") {
				t.Errorf("filter %+v, after %q: plan %q, want a search of %s and no sort", c.f, after, got, c.index)
			}
		}
	}
}

// TestSummaryPlans: totals over a range search the (key_id, created_at_us)
// index, except with a session filter, whose few rows the session's index
// finds; whatever the breakdown (an owner label's too).
func TestSummaryPlans(t *testing.T) {
	db := rawLedgerDB(t, filepath.Join(t.TempDir(), "usage.db"), len(migrations))
	from, to := time.Now().Add(-time.Hour), time.Now()
	for _, f := range []Filter{{}, {Endpoint: EndpointChat}, {Session: "s-1"}, {Endpoint: EndpointMessages, Session: "s-1"}} {
		index := "usage_records_key_created"
		if f.Session != "" {
			index = "usage_records_key_session"
		}
		for _, by := range []string{"", GroupByEndpoint, GroupBySession, GroupByOwner("team"), GroupByOwner("example.com/cost-center")} {
			q, args, err := summaryQuery("k", f, by, from, to)
			if err != nil {
				t.Fatal(err)
			}
			if got := queryPlan(t, db, q, args...); !strings.Contains(got, "USING INDEX "+index+" ") {
				t.Errorf("filter %+v by %q: plan %q, want a search of %s", f, by, got, index)
			}
		}
	}
}

// insertFinalRow inserts a final record of key and session, created now,
// with the writer's statement, and returns its request id.
func insertFinalRow(ctx context.Context, t *testing.T, db interface {
	ExecContext(context.Context, string, ...any) (sql.Result, error)
}, key, session string) string {
	t.Helper()
	o := &op{kind: opFinish, rec: finalRecord(NewRequestID(), key)}
	o.rec.Session = session
	o.rec.CreatedAt = time.Now()
	o.attempts = encodeAttempts(o.rec.Attempts)
	if _, err := db.ExecContext(ctx, insertSQL, argValues(insertArgs(nil, o, toMicros(o.rec.CreatedAt)))...); err != nil {
		t.Fatal(err)
	}
	return o.rec.RequestID
}

// insertOldRow inserts a final record of key, created now, with only the
// columns every schema version has (and a cost, from version 2 on, when
// currency is not ""), as an older binary would; it returns its request
// id.
func insertOldRow(ctx context.Context, t *testing.T, db interface {
	ExecContext(context.Context, string, ...any) (sql.Result, error)
}, key, currency string) string {
	t.Helper()
	id, now := NewRequestID(), time.Now().UnixMicro()
	q, args := `INSERT INTO usage_records (request_id, key_id, status, http_status, attempts, input_tokens, output_tokens,
		created_at_us, finished_at_us) VALUES (?, ?, 'success', 200, '[]', 5, 7, ?, ?)`, []any{id, key, now, now}
	if currency != "" {
		q, args = `INSERT INTO usage_records (request_id, key_id, status, http_status, attempts, input_tokens, output_tokens,
			cost_picos, currency, created_at_us, finished_at_us) VALUES (?, ?, 'success', 200, '[]', 5, 7, 1000, ?, ?, ?)`,
			[]any{id, key, currency, now, now}
	}
	if _, err := db.ExecContext(ctx, q, args...); err != nil {
		t.Fatal(err)
	}
	return id
}

// walFramesPerCommit inserts rows of one key, perCommit to a transaction,
// as the writer's batches do, and returns the WAL frames (pages written) a
// commit cost once the trees are a few levels deep. With sessions > 0 the
// rows take turns among that many agent sessions' ids; with 0 they have
// none.
func walFramesPerCommit(t *testing.T, path string, migrated, commits, perCommit, sessions int) float64 {
	t.Helper()
	db := rawLedgerDB(t, path, migrated)
	ctx := ctxT(t)
	row := 0
	insert := func(n int) {
		for range n {
			tx, err := db.BeginTx(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			for range perCommit {
				session := ""
				if sessions > 0 {
					session = fmt.Sprintf("0f9c2d1e-5a6b-4c3d-8e7f-%012d", row%sessions)
				}
				row++
				insertFinalRow(ctx, t, tx, "key-a", session)
			}
			if err := tx.Commit(); err != nil {
				t.Fatal(err)
			}
		}
	}
	insert(commits) // warm-up: leaves full, siblings in place
	if _, err := db.ExecContext(ctx, "PRAGMA wal_checkpoint(TRUNCATE)"); err != nil {
		t.Fatal(err)
	}
	insert(commits)
	var busy, frames, done int
	if err := db.QueryRowContext(ctx, "PRAGMA wal_checkpoint(PASSIVE)").Scan(&busy, &frames, &done); err != nil {
		t.Fatal(err)
	}
	return float64(frames) / float64(commits)
}

// TestHotKeyRowsAppendToTheKeyIndex: a busy key's new rows go to the end of
// every index they enter. SQLite splits an index leaf by rebalancing it
// with its siblings (only a rowid table's last leaf splits off alone), so a
// commit of ten rows writes each index's last leaves and, often, their
// parent. The descending index of schema version 2 put every new row at
// the front of the key's range, where the rebalancing touched more: 10.9
// WAL frames a commit here against 9.2 with the ascending index (a
// frame is a page, two write(2)s).
//
// Rows without a session do not enter the session index (partial), so
// schema version 4 left that figure as it was. One agent session's rows
// append to the end of the session's range in it: 12.9 frames a commit
// here. (Rows of many sessions interleaved each touch their session's
// leaf: 18.7 frames with 4 sessions, 26 with 32.)
func TestHotKeyRowsAppendToTheKeyIndex(t *testing.T) {
	const commits, perCommit = 400, 10
	for _, c := range []struct {
		sessions int
		most     float64
	}{{0, 10}, {1, 14}} {
		got := walFramesPerCommit(t, filepath.Join(t.TempDir(), "usage.db"), len(migrations), commits, perCommit, c.sessions)
		t.Logf("%d sessions: %.2f WAL frames per commit of %d rows", c.sessions, got, perCommit)
		if got > c.most {
			t.Errorf("%.2f WAL frames per commit of %d rows of one key and %d sessions, want at most %.1f: an index no longer appends",
				got, perCommit, c.sessions, c.most)
		}
	}
}

// TestMigrationToTheAscendingKeyIndexKeepsTheListing: a ledger written with
// schema version 2 opens at the newest version with the ascending index,
// and its listing pages through every record newest first.
func TestMigrationToTheAscendingKeyIndexKeepsTheListing(t *testing.T) {
	path := filepath.Join(t.TempDir(), "usage.db")
	db := rawLedgerDB(t, path, 2)
	var ids []string
	for range 25 {
		ids = append(ids, insertOldRow(ctxT(t), t, db, "key-a", ""))
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	l := openAt(t, path, Options{})
	var def string
	if err := l.r.QueryRowContext(ctxT(t), `SELECT sql FROM sqlite_master WHERE name = 'usage_records_key'`).Scan(&def); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(strings.ToUpper(def), "DESC") {
		t.Fatalf("usage_records_key after migration: %s, want ascending", def)
	}
	var got []string
	cursor := ""
	for {
		recs, next, more, err := l.List(ctxT(t), "key-a", 10, cursor)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			got = append(got, r.RequestID)
		}
		if !more {
			break
		}
		cursor = next
	}
	slices.Reverse(ids)
	if !slices.Equal(got, ids) {
		t.Fatalf("listing after migration:\n got %v\nwant %v (newest first)", got, ids)
	}
}
