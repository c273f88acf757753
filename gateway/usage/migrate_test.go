package usage

import (
	"database/sql"
	"errors"
	"os"
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
