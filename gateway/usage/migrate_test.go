package usage

import (
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func schemaVersions(t *testing.T, path string) []int {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query(`SELECT version FROM schema_migrations ORDER BY version`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var vs []int
	for rows.Next() {
		var v int
		if err := rows.Scan(&v); err != nil {
			t.Fatal(err)
		}
		vs = append(vs, v)
	}
	return vs
}

func TestMigrateFromEmptyAndReopen(t *testing.T) {
	path := dbPath(t)
	l := openAt(t, path, Options{})
	if l.Recovered() != 0 {
		t.Fatalf("fresh ledger recovered %d", l.Recovered())
	}
	beginWait(t, l, Record{RequestID: NewRequestID()})
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	want := len(migrations)
	for round := range 3 {
		vs := schemaVersions(t, path)
		if len(vs) != want || vs[len(vs)-1] != want {
			t.Fatalf("round %d: schema_migrations = %v, want 1..%d", round, vs, want)
		}
		l := openAt(t, path, Options{})
		if n, _, err := l.Count(ctxT(t)); err != nil || n != 1 {
			t.Fatalf("round %d: Count = %d, %v; want 1 (data kept across re-open)", round, n, err)
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
	}
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Errorf("database mode = %v, want 0600", st.Mode().Perm())
	}
}

func TestOpenRefusesNewerSchema(t *testing.T) {
	path := dbPath(t)
	l := openAt(t, path, Options{})
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`INSERT INTO schema_migrations (version, applied_at_us) VALUES (999, 0)`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	_, err = Open(ctxT(t), path, Options{Logger: testLogger(t)})
	if !errors.Is(err, ErrSchemaTooNew) {
		t.Fatalf("Open on a newer schema: %v, want ErrSchemaTooNew", err)
	}
}

func TestOpenIsExclusive(t *testing.T) {
	path := dbPath(t)
	l := openAt(t, path, Options{})
	if _, err := Open(ctxT(t), path, Options{Logger: testLogger(t)}); !errors.Is(err, ErrLocked) {
		t.Fatalf("second Open: %v, want ErrLocked", err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	openAt(t, path, Options{}) // the lock is released by Close
}

func TestOpenRejectsMemory(t *testing.T) {
	if _, err := Open(ctxT(t), ":memory:", Options{}); err == nil {
		t.Fatal("Open(:memory:) succeeded; the ledger needs a file")
	}
}

// openMigrated writes n rows as a binary of schema version from would,
// opens the file with this one, and checks that it went through every
// version and that each of cols is NOT NULL with an empty default; the ledger and the
// old rows' ids.
func openMigrated(t *testing.T, from, n int, cols ...string) (*Ledger, []string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "usage.db")
	db := rawLedgerDB(t, path, from)
	var old []string
	for range n {
		old = append(old, insertOldRow(ctxT(t), t, db, "key-a", "USD"))
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	l := openAt(t, path, Options{})
	if vs := schemaVersions(t, path); !slices.Equal(vs, []int{1, 2, 3, 4, 5}) {
		t.Fatalf("schema versions %v, want [1 2 3 4 5]", vs)
	}
	for _, col := range cols {
		var notNull int
		var def sql.NullString
		if err := l.r.QueryRowContext(ctxT(t), `SELECT "notnull", dflt_value FROM pragma_table_info('usage_records') WHERE name = ?`, col).
			Scan(&notNull, &def); err != nil {
			t.Fatalf("column %s: %v", col, err)
		}
		if notNull != 1 || def.String != "''" {
			t.Fatalf("column %s: notnull %d default %v, want NOT NULL DEFAULT ''", col, notNull, def)
		}
	}
	return l, old
}
