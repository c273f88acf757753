package main

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"os"

	_ "modernc.org/sqlite" // registers driver "sqlite"
)

// ledgerSample is what the ledger holds at one moment, read through a
// read-only connection beside the gateway's own (WAL allows it).
type ledgerSample struct {
	records    int64
	inProgress int64
	livePages  int64 // pages in use (page_count − freelist_count)
	pageSize   int64
	dbBytes    int64 // the main file on disk
	walBytes   int64
	shmBytes   int64
}

func (s ledgerSample) liveBytes() int64 { return s.livePages * s.pageSize }
func (s ledgerSample) diskBytes() int64 { return s.dbBytes + s.walBytes + s.shmBytes }

type ledgerReader struct {
	db   *sql.DB
	path string
}

func openLedgerReader(path string) (*ledgerReader, error) {
	u := url.URL{Scheme: "file", Path: path}
	q := url.Values{"mode": {"ro"}, "_pragma": {"busy_timeout(5000)", "query_only(1)"}}
	db, err := sql.Open("sqlite", "file:"+u.EscapedPath()+"?"+q.Encode())
	if err != nil {
		return nil, fmt.Errorf("opening the ledger read-only: %w", err)
	}
	db.SetMaxOpenConns(1)
	return &ledgerReader{db: db, path: path}, nil
}

func (r *ledgerReader) close() error { return r.db.Close() }

func (r *ledgerReader) sample(ctx context.Context) (ledgerSample, error) {
	var s ledgerSample
	var pages, free int64
	for _, q := range []struct {
		sql  string
		into *int64
	}{
		{"SELECT count(*) FROM usage_records", &s.records},
		{"SELECT count(*) FROM usage_records WHERE status = 'in_progress'", &s.inProgress},
		{"PRAGMA page_count", &pages},
		{"PRAGMA freelist_count", &free},
		{"PRAGMA page_size", &s.pageSize},
	} {
		if err := r.db.QueryRowContext(ctx, q.sql).Scan(q.into); err != nil {
			return s, fmt.Errorf("sampling the ledger (%s): %w", q.sql, err)
		}
	}
	s.livePages = pages - free
	s.dbBytes, s.walBytes, s.shmBytes = fileSize(r.path), fileSize(r.path+"-wal"), fileSize(r.path+"-shm")
	return s, nil
}

// recordsByOutcome counts the final records per status and HTTP status.
func (r *ledgerReader) recordsByOutcome(ctx context.Context) (map[string]int64, error) {
	rows, err := r.db.QueryContext(ctx,
		"SELECT status || ' ' || http_status || ' ' || error_type, count(*) FROM usage_records GROUP BY 1 ORDER BY 1")
	if err != nil {
		return nil, fmt.Errorf("counting records by outcome: %w", err)
	}
	defer rows.Close()
	out := map[string]int64{}
	for rows.Next() {
		var k string
		var n int64
		if err := rows.Scan(&k, &n); err != nil {
			return nil, fmt.Errorf("counting records by outcome: %w", err)
		}
		out[k] = n
	}
	return out, rows.Err()
}

func fileSize(p string) int64 {
	fi, err := os.Stat(p)
	if err != nil {
		return 0
	}
	return fi.Size()
}
