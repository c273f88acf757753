package usage

import (
	"database/sql"
	"errors"
	"testing"
)

// A statement that fails inside a batch can leave SQLite's transaction
// open (RAISE(ABORT) undoes only that statement). The writer runs BEGIN and
// COMMIT as its own prepared statements, so it must roll such a batch back
// itself: otherwise every later batch fails to begin ("cannot start a
// transaction within a transaction") and no record commits again. And a
// row SQLite refuses is given up alone: tried again, it would fail every
// later batch.
func TestAFailedStatementRollsItsBatchBack(t *testing.T) {
	path := dbPath(t)
	l := openAt(t, path, Options{})
	ctx := ctxT(t)

	side, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err = side.ExecContext(ctx, `CREATE TRIGGER refuse_key BEFORE INSERT ON usage_records
		WHEN NEW.key_id = 'refused' BEGIN SELECT RAISE(ABORT, 'refused by the test'); END`); err != nil {
		t.Fatal(err)
	}
	if err = side.Close(); err != nil {
		t.Fatal(err)
	}

	refusedID := NewRequestID()
	if err := l.Finish(ctx, finalRecord(refusedID, "refused")); err != nil {
		t.Fatal(err) // journaled: its row is refused later, by the writer
	}
	for i := range 3 {
		id := NewRequestID()
		if err := l.Finish(ctx, finalRecord(id, "k")); err != nil {
			t.Fatalf("batch %d after the failed one: %v", i, err)
		}
		rec, err := l.Get(ctx, id)
		if err != nil || rec.Status != StatusSuccess {
			t.Fatalf("batch %d after the failed one: record %+v, %v", i, rec, err)
		}
	}
	// The refused row alone was given up, and counted.
	if _, err := l.Get(ctx, refusedID); !errors.Is(err, ErrNotFound) {
		t.Fatalf("refused record: %v, want ErrNotFound", err)
	}
	if s := l.Stats(); s.Unrecorded != 1 || s.FailedBatches == 0 {
		t.Fatalf("Stats = %+v, want one unrecorded request and a failed batch", s)
	}
}
