package usage

import (
	"context"
	"database/sql"
	"encoding/base64"
	"errors"
	"fmt"

	"github.com/llmgw/llmgw/api/money"
)

// Listing limits.
const (
	DefaultListLimit = 50
	MaxListLimit     = 500
)

const cursorVersion byte = 1

const selectCols = `request_id, client_request_id, key_id, key_fingerprint, alias, provider, provider_model,
	status, http_status, error_type, fallbacks, attempts, stream,
	input_tokens, output_tokens, cached_input_tokens, reasoning_tokens, cost_picos, currency,
	latency_ms, endpoint, session, key_group, owners, created_at_us, finished_at_us`

// listQuery is the listing's statement and arguments: keyID's final
// records matching f, older than the request id after when it is not "",
// newest first. Without a session it walks the (key_id, request_id) index
// backwards, with one the session's partial index, and never sorts
// (TestListWalksAnIndexBackwards).
func listQuery(keyID string, f Filter, after string, limit int) (string, []any) {
	args := make([]any, 0, 5)
	args = append(args, keyID)
	where, args := f.where(args)
	if after != "" {
		where += ` AND request_id < ?`
		args = append(args, after)
	}
	return `SELECT ` + selectCols + ` FROM usage_records
		WHERE key_id = ?` + where + ` AND status != 'in_progress'
		ORDER BY request_id DESC LIMIT ?`, append(args, limit)
}

// List is ListFiltered without a filter: every one of keyID's final
// records (the form callers that never filter keep using).
func (l *Ledger) List(ctx context.Context, keyID string, limit int, cursor string) (recs []Record, next string, hasMore bool, err error) {
	return l.ListFiltered(ctx, keyID, Filter{}, limit, cursor)
}

// ListFiltered returns keyID's final records that match f, newest first (by
// RequestID, which is time-ordered), at most limit of them (0 means
// DefaultListLimit; others are clamped to 1..MaxListLimit). cursor is ""
// for the first page or a next value from an earlier call; a malformed
// cursor is ErrBadCursor, an invalid filter ErrBadFilter.
//
// A cursor is a position in time, "older than this request", and holds no
// filter: a cursor from a listing with one filter, used with another,
// lists the second filter's records older than that position. Paging with
// the same filter throughout sees each of its records exactly once.
//
// In-progress records are left out: a listing shows each request once, in
// its final state, and never a row that is still going to change. (Such a
// request shows up once finished; a page already fetched is not revisited.)
// An empty keyID is refused rather than listing unauthenticated traffic.
func (l *Ledger) ListFiltered(ctx context.Context, keyID string, f Filter, limit int, cursor string) (recs []Record, next string, hasMore bool, err error) {
	if err = l.sync(ctx); err != nil {
		return nil, "", false, err
	}
	if keyID == "" {
		return nil, "", false, errKeyRequired
	}
	if err = f.Validate(); err != nil {
		return nil, "", false, err
	}
	limit = ClampLimit(limit)
	after := ""
	if cursor != "" {
		if after, err = DecodeCursor(cursor); err != nil {
			return nil, "", false, err
		}
	}
	q, args := listQuery(keyID, f, after, limit+1)
	rows, err := l.r.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, "", false, fmt.Errorf("usage: list: %w", err)
	}
	defer rows.Close()
	recs = make([]Record, 0, min(limit+1, 64))
	for rows.Next() {
		r, err := scanRecord(rows)
		if err != nil {
			return nil, "", false, fmt.Errorf("usage: list: %w", err)
		}
		recs = append(recs, r)
	}
	if err := rows.Err(); err != nil {
		return nil, "", false, fmt.Errorf("usage: list: %w", err)
	}
	if len(recs) > limit {
		recs = recs[:limit]
		hasMore = true
		next = EncodeCursor(recs[limit-1].RequestID)
	}
	return recs, next, hasMore, nil
}

// ClampLimit applies List's limit rules, for callers that merge several
// ledgers' pages and must cut the merged page the same way.
func ClampLimit(limit int) int {
	switch {
	case limit == 0:
		return DefaultListLimit
	case limit < 1:
		return 1
	case limit > MaxListLimit:
		return MaxListLimit
	}
	return limit
}

// EncodeCursor makes the opaque cursor meaning "records older than
// requestID". Request ids are globally time-ordered, so the same cursor is
// valid on every gateway replica's ledger (a fan-out can pass it on as is).
func EncodeCursor(requestID string) string {
	b := make([]byte, 0, 1+len(requestID))
	b = append(b, cursorVersion)
	b = append(b, requestID...)
	return base64.RawURLEncoding.EncodeToString(b)
}

// DecodeCursor returns the request id inside a cursor, or ErrBadCursor.
func DecodeCursor(cursor string) (string, error) {
	b, err := base64.RawURLEncoding.DecodeString(cursor)
	if err != nil || len(b) < 2 || len(b) > 129 || b[0] != cursorVersion {
		return "", ErrBadCursor
	}
	for _, c := range b[1:] {
		if c <= ' ' || c > '~' {
			return "", ErrBadCursor
		}
	}
	return string(b[1:]), nil
}

// Get returns one record in whatever state it is, or ErrNotFound.
func (l *Ledger) Get(ctx context.Context, requestID string) (Record, error) {
	if err := l.sync(ctx); err != nil {
		return Record{}, err
	}
	row := l.r.QueryRowContext(ctx, `SELECT `+selectCols+` FROM usage_records WHERE request_id = ?`, requestID)
	r, err := scanRecord(row)
	if errors.Is(err, sql.ErrNoRows) {
		return Record{}, fmt.Errorf("%w: %s", ErrNotFound, requestID)
	}
	if err != nil {
		return Record{}, fmt.Errorf("usage: get %s: %w", requestID, err)
	}
	return r, nil
}

// Count returns the number of records, in total and per status. It scans
// the whole table: fine for tests and occasional checks, but a /health
// handler polled often should cache it (Ping and Stats are the cheap probes).
func (l *Ledger) Count(ctx context.Context) (total int, byStatus map[string]int, err error) {
	if err = l.sync(ctx); err != nil {
		return 0, nil, err
	}
	rows, err := l.r.QueryContext(ctx, `SELECT status, COUNT(*) FROM usage_records GROUP BY status`)
	if err != nil {
		return 0, nil, fmt.Errorf("usage: count: %w", err)
	}
	defer rows.Close()
	byStatus = make(map[string]int)
	for rows.Next() {
		var s string
		var n int
		if err := rows.Scan(&s, &n); err != nil {
			return 0, nil, fmt.Errorf("usage: count: %w", err)
		}
		byStatus[s] = n
		total += n
	}
	if err := rows.Err(); err != nil {
		return 0, nil, fmt.Errorf("usage: count: %w", err)
	}
	return total, byStatus, nil
}

type scanner interface{ Scan(dest ...any) error }

func scanRecord(s scanner) (Record, error) {
	var (
		r               Record
		attempts        string
		owners          string
		created         int64
		finished        sql.NullInt64
		stream          int64
		httpStatus, fbk int64
		inTok, outTok   int64
		cached, reason  int64
		cost            int64
		latency         int64
	)
	err := s.Scan(&r.RequestID, &r.ClientRequestID, &r.KeyID, &r.KeyFingerprint, &r.Alias, &r.Provider, &r.ProviderModel,
		&r.Status, &httpStatus, &r.ErrorType, &fbk, &attempts, &stream,
		&inTok, &outTok, &cached, &reason, &cost, &r.Currency, &latency, &r.Endpoint, &r.Session, &r.Group, &owners, &created, &finished)
	if err != nil {
		return Record{}, err
	}
	if r.Attempts, err = decodeAttempts(attempts); err != nil {
		return Record{}, err
	}
	if r.Owners, err = decodeOwners(owners); err != nil {
		return Record{}, err
	}
	r.HTTPStatus, r.Fallbacks, r.Stream = int(httpStatus), int(fbk), stream != 0
	r.InputTokens, r.OutputTokens, r.LatencyMs = int(inTok), int(outTok), latency
	r.CachedInputTokens, r.ReasoningTokens, r.Cost = int(cached), int(reason), money.Picos(cost)
	r.CreatedAt = fromMicros(created)
	if finished.Valid {
		r.FinishedAt = fromMicros(finished.Int64)
	}
	return r, nil
}
