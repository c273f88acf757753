package usage

import (
	"context"
	"database/sql"
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

// TestListUsesTheKeyIndexBackwards: the listing, newest first, is served by
// walking the ascending (key_id, request_id) index backwards, never by
// sorting a key's whole history.
func TestListUsesTheKeyIndexBackwards(t *testing.T) {
	db := rawLedgerDB(t, filepath.Join(t.TempDir(), "usage.db"), len(migrations))
	for _, c := range []struct {
		name, q string
		args    []any
	}{{"first page", listSQL, []any{"k", 10}}, {"after a cursor", listAfterSQL, []any{"k", "req_x", 10}}} {
		var plan []string
		r, err := db.QueryContext(ctxT(t), "EXPLAIN QUERY PLAN "+c.q, c.args...)
		if err != nil {
			t.Fatal(err)
		}
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
		r.Close()
		got := strings.Join(plan, "; ")
		if !strings.Contains(got, "USING INDEX usage_records_key ") || strings.Contains(got, "TEMP B-TREE") {
			t.Errorf("%s: plan %q, want a search of usage_records_key and no sort", c.name, got)
		}
	}
}

// insertFinalRow inserts a final record of key, created now, with the
// writer's statement, and returns its request id.
func insertFinalRow(ctx context.Context, t *testing.T, db interface {
	ExecContext(context.Context, string, ...any) (sql.Result, error)
}, key string) string {
	t.Helper()
	o := &op{kind: opFinish, rec: finalRecord(NewRequestID(), key)}
	o.rec.CreatedAt = time.Now()
	o.attempts = encodeAttempts(o.rec.Attempts)
	if _, err := db.ExecContext(ctx, insertSQL, argValues(insertArgs(nil, o, toMicros(o.rec.CreatedAt)))...); err != nil {
		t.Fatal(err)
	}
	return o.rec.RequestID
}

// walFramesPerCommit inserts rows of one key, perCommit to a transaction,
// as the writer's batches do, and returns the WAL frames (pages written) a
// commit cost once the trees are a few levels deep.
func walFramesPerCommit(t *testing.T, path string, migrated, commits, perCommit int) float64 {
	t.Helper()
	db := rawLedgerDB(t, path, migrated)
	ctx := ctxT(t)
	insert := func(n int) {
		for range n {
			tx, err := db.BeginTx(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			for range perCommit {
				insertFinalRow(ctx, t, tx, "key-a")
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
func TestHotKeyRowsAppendToTheKeyIndex(t *testing.T) {
	const commits, perCommit, most = 400, 10, 10.0
	got := walFramesPerCommit(t, filepath.Join(t.TempDir(), "usage.db"), len(migrations), commits, perCommit)
	t.Logf("%.2f WAL frames per commit of %d rows", got, perCommit)
	if got > most {
		t.Errorf("%.2f WAL frames per commit of %d rows of one key, want at most %.1f: an index no longer appends", got, perCommit, most)
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
		ids = append(ids, insertFinalRow(ctxT(t), t, db, "key-a"))
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
