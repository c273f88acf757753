package usage

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// migrations are applied in order; version N is migrations[N-1]. They are
// forward-only: never edit or reorder a released entry, append a new one.
var migrations = []string{
	// 1: the ledger. request_id is the primary key so a request can never
	// have two rows; finished_at_us is NULL exactly while in_progress.
	`CREATE TABLE usage_records (
		request_id        TEXT    NOT NULL PRIMARY KEY,
		client_request_id TEXT    NOT NULL DEFAULT '',
		key_id            TEXT    NOT NULL DEFAULT '',
		key_fingerprint   TEXT    NOT NULL DEFAULT '',
		alias             TEXT    NOT NULL DEFAULT '',
		provider          TEXT    NOT NULL DEFAULT '',
		provider_model    TEXT    NOT NULL DEFAULT '',
		status            TEXT    NOT NULL,
		http_status       INTEGER NOT NULL DEFAULT 0,
		error_type        TEXT    NOT NULL DEFAULT '',
		fallbacks         INTEGER NOT NULL DEFAULT 0,
		attempts          TEXT    NOT NULL DEFAULT '[]',
		stream            INTEGER NOT NULL DEFAULT 0,
		input_tokens      INTEGER NOT NULL DEFAULT 0,
		output_tokens     INTEGER NOT NULL DEFAULT 0,
		latency_ms        INTEGER NOT NULL DEFAULT 0,
		created_at_us     INTEGER NOT NULL,
		finished_at_us    INTEGER
	);
	CREATE INDEX usage_records_key ON usage_records (key_id, request_id DESC);
	-- recovery scans only the few unfinished rows, not the whole history
	CREATE INDEX usage_records_open ON usage_records (request_id) WHERE status = 'in_progress';
	CREATE TABLE ledger_meta (
		k TEXT NOT NULL PRIMARY KEY,
		v TEXT NOT NULL
	);`,
	// 2: spend. Cached input tokens are part of input_tokens and reasoning
	// tokens part of output_tokens; cost is exact, in pico-units of
	// currency ('' with cost 0 for an unpriced route). Old rows read as
	// unpriced with no cached or reasoning tokens, which is what they were.
	// The (key_id, created_at_us) index serves per-key totals over a time
	// range.
	`ALTER TABLE usage_records ADD COLUMN cached_input_tokens INTEGER NOT NULL DEFAULT 0;
	ALTER TABLE usage_records ADD COLUMN reasoning_tokens INTEGER NOT NULL DEFAULT 0;
	ALTER TABLE usage_records ADD COLUMN cost_picos INTEGER NOT NULL DEFAULT 0;
	ALTER TABLE usage_records ADD COLUMN currency TEXT NOT NULL DEFAULT '';
	CREATE INDEX usage_records_key_created ON usage_records (key_id, created_at_us);`,
	// 3: the per-key listing index ascending. Request ids grow with time, so
	// in a DESC index every new row of a key lands at the left end of the
	// key's range: each leaf that fills is rebalanced with its two siblings
	// (three leaves and their parent rewritten), where an ascending index
	// appends at the right end and splits off one new leaf. SQLite walks
	// the ascending index backwards for ORDER BY request_id DESC
	// (TestListUsesTheKeyIndexBackwards).
	`DROP INDEX usage_records_key;
	CREATE INDEX usage_records_key ON usage_records (key_id, request_id);`,
	// 4: the endpoint a request came in on ("chat", "embeddings",
	// "messages", "responses") and the caller's agent session id ("" when
	// none). Adding a column with a constant default rewrites no row.
	//
	// Old rows are not backfilled: they keep endpoint ''. Before this
	// version a record could be a chat or an embeddings request, and no
	// column tells them apart (an embeddings record is a success with no
	// output tokens, and so is many a chat record); a record refused
	// before its body was read could have been either. Writing "chat" into
	// every old row would count embeddings spend as chat spend, silently,
	// and rewrite the whole table inside Open. '' says what is known: the
	// record predates the column.
	//
	// The partial index serves a key's listing and totals of one session:
	// sessions are many and each holds a small part of a key's records, so
	// walking usage_records_key would read a key's whole history to find
	// one session's page. Only rows with a session enter it, so a request
	// without one costs no extra index write (BenchmarkBeginFinish: no
	// change in CPU a record); a record with one costs the ledger about 6
	// µs of CPU more (BenchmarkBeginFinishSessions: 38 against 32 µs a
	// record at 8 callers, each its own session). It ends in request_id so a
	// session's page is walked newest first without a sort. The endpoint
	// filter has no index of its own: an index on it would cost every row
	// a write, and with four values a page of one endpoint is found by
	// walking the key's index and skipping the others' rows (more of them
	// for an endpoint a key rarely uses).
	`ALTER TABLE usage_records ADD COLUMN endpoint TEXT NOT NULL DEFAULT '';
	ALTER TABLE usage_records ADD COLUMN session TEXT NOT NULL DEFAULT '';
	CREATE INDEX usage_records_key_session ON usage_records (key_id, session, request_id) WHERE session != '';`,
	// 5: the key's budget group at request time ('' for none) and the
	// owner labels the record carries (a JSON object with sorted keys, ''
	// for none). The group is the record's own, not looked up from the
	// key later: a key that changes group takes none of its past spend
	// with it, so a group's budget, re-counted after a restart
	// (GroupSpendSince), is what its members spent while they were
	// members. Old rows keep '' for both, as they were written without
	// them: their spend counts for their key, not for any group.
	//
	// No index: GroupSpendSince reads the period's rows once at start, as
	// SpendSince does, and an owner breakdown is one key's range of the
	// (key_id, created_at_us) index; an index would cost every row a write.
	`ALTER TABLE usage_records ADD COLUMN key_group TEXT NOT NULL DEFAULT '';
	ALTER TABLE usage_records ADD COLUMN owners TEXT NOT NULL DEFAULT '';`,
}

// migrate brings the schema to the newest version in one IMMEDIATE
// transaction, so two processes racing on a fresh file cannot both apply
// version 1, and a failure leaves the previous version intact.
func migrate(ctx context.Context, db *sql.DB) (from, to int, err error) {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return 0, 0, fmt.Errorf("usage: migrate: begin: %w", err)
	}
	defer func() {
		if err != nil {
			_ = tx.Rollback()
		}
	}()
	if _, err = tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		version       INTEGER NOT NULL PRIMARY KEY,
		applied_at_us INTEGER NOT NULL
	)`); err != nil {
		return 0, 0, fmt.Errorf("usage: migrate: create schema_migrations: %w", err)
	}
	if err = tx.QueryRowContext(ctx, `SELECT COALESCE(MAX(version), 0) FROM schema_migrations`).Scan(&from); err != nil {
		return 0, 0, fmt.Errorf("usage: migrate: read version: %w", err)
	}
	if from > len(migrations) {
		return from, from, fmt.Errorf("%w: database at version %d, binary knows %d", ErrSchemaTooNew, from, len(migrations))
	}
	now := time.Now().UnixMicro()
	for v := from + 1; v <= len(migrations); v++ {
		if _, err = tx.ExecContext(ctx, migrations[v-1]); err != nil {
			return from, 0, fmt.Errorf("usage: migrate to version %d: %w", v, err)
		}
		if _, err = tx.ExecContext(ctx, `INSERT INTO schema_migrations (version, applied_at_us) VALUES (?, ?)`, v, now); err != nil {
			return from, 0, fmt.Errorf("usage: migrate: record version %d: %w", v, err)
		}
	}
	if err = tx.Commit(); err != nil {
		return from, 0, fmt.Errorf("usage: migrate: commit: %w", err)
	}
	return from, len(migrations), nil
}
