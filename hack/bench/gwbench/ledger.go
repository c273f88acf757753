package main

import (
	"database/sql"
	"fmt"
	"net/url"

	_ "modernc.org/sqlite" // the database/sql driver "sqlite"
)

// RecordRow is the ledger check of one gateway after one part of a round:
// the gateway was stopped (SIGTERM) and its SQLite file read.
type RecordRow struct {
	Part     string         `json:"part"` // streams or load
	Target   string         `json:"target"`
	Requests int            `json:"requests"`
	Records  int            `json:"records"`
	ByStatus map[string]int `json:"by_status"`
	OK       bool           `json:"ok"`
	Error    string         `json:"error,omitempty"`
}

// countRecords compares a stopped gateway's records with the requests sent
// to it: exactly one final record a request, each a success (no error was
// expected anywhere).
func countRecords(t *target) RecordRow {
	row := RecordRow{Target: t.name, Requests: int(t.sent.Load())}
	by, err := statusCounts(t.db)
	if err != nil {
		row.Error = err.Error()
		return row
	}
	for _, n := range by {
		row.Records += n
	}
	row.ByStatus = by
	row.OK = row.Records == row.Requests && by["success"] == row.Records
	return row
}

// statusCounts reads the number of usage records by status from a ledger
// file, opened read-only.
func statusCounts(path string) (map[string]int, error) {
	db, err := sql.Open("sqlite", "file:"+(&url.URL{Path: path}).EscapedPath()+"?mode=ro")
	if err != nil {
		return nil, err
	}
	defer db.Close()
	rows, err := db.Query(`SELECT status, COUNT(*) FROM usage_records GROUP BY status`)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	defer rows.Close()
	by := map[string]int{}
	for rows.Next() {
		var s string
		var n int
		if err := rows.Scan(&s, &n); err != nil {
			return nil, err
		}
		by[s] = n
	}
	return by, rows.Err()
}
