package usage

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"time"

	"github.com/llmgw/llmgw/api/money"
)

// Totals sum final records: what a key used over a time range.
type Totals struct {
	Requests          int64
	InputTokens       int64
	CachedInputTokens int64
	OutputTokens      int64
	ReasoningTokens   int64
	// Costs is the spend per currency. Unpriced records (currency "") cost
	// nothing and have no entry. A snapshot has one currency, so there is
	// one entry unless the operator changed currency within the range.
	Costs map[string]money.Picos
}

// Add folds o into t. Costs are added exactly; a sum beyond money.Picos'
// range is an error rather than a wrapped number.
func (t *Totals) Add(o Totals) error {
	t.Requests += o.Requests
	t.InputTokens += o.InputTokens
	t.CachedInputTokens += o.CachedInputTokens
	t.OutputTokens += o.OutputTokens
	t.ReasoningTokens += o.ReasoningTokens
	for cur, c := range o.Costs {
		if t.Costs == nil {
			t.Costs = map[string]money.Picos{}
		}
		sum, err := money.Add(t.Costs[cur], c)
		if err != nil {
			return fmt.Errorf("usage: totals in %s: %w", cur, err)
		}
		t.Costs[cur] = sum
	}
	return nil
}

// Clone returns a copy that shares no map with t.
func (t Totals) Clone() Totals {
	t.Costs = maps.Clone(t.Costs)
	return t
}

// ErrBadRange is returned for a time range that ends before it starts.
var ErrBadRange = errors.New("usage: invalid time range")

// Summary totals keyID's final records created in [from, to). In-progress
// records are left out, as in List: a request counts once it has ended,
// with what it finally used. Records dropped by retention are gone from the
// totals too.
func (l *Ledger) Summary(ctx context.Context, keyID string, from, to time.Time) (Totals, error) {
	if err := l.sync(ctx); err != nil {
		return Totals{}, err
	}
	if keyID == "" {
		return Totals{}, errKeyRequired
	}
	if to.Before(from) {
		return Totals{}, fmt.Errorf("%w: to %s is before from %s", ErrBadRange, to.Format(time.RFC3339), from.Format(time.RFC3339))
	}
	rows, err := l.r.QueryContext(ctx, `SELECT currency, COUNT(*), SUM(input_tokens), SUM(cached_input_tokens),
		SUM(output_tokens), SUM(reasoning_tokens), SUM(cost_picos)
		FROM usage_records
		WHERE key_id = ? AND created_at_us >= ? AND created_at_us < ? AND status != 'in_progress'
		GROUP BY currency`, keyID, from.UnixMicro(), to.UnixMicro())
	if err != nil {
		return Totals{}, fmt.Errorf("usage: summary: %w", err)
	}
	defer rows.Close()
	var t Totals
	for rows.Next() {
		var (
			cur  string
			part Totals
			cost int64
		)
		if err := rows.Scan(&cur, &part.Requests, &part.InputTokens, &part.CachedInputTokens,
			&part.OutputTokens, &part.ReasoningTokens, &cost); err != nil {
			return Totals{}, fmt.Errorf("usage: summary: %w", err)
		}
		if cur != "" {
			part.Costs = map[string]money.Picos{cur: money.Picos(cost)}
		}
		if err := t.Add(part); err != nil {
			return Totals{}, err
		}
	}
	if err := rows.Err(); err != nil {
		// SQLite's SUM fails with "integer overflow" rather than wrap.
		return Totals{}, fmt.Errorf("usage: summary: %w", err)
	}
	return t, nil
}

// SpendSince is every key's spend on records created at or after since, by
// key id: what a budget period already used, for re-seeding budget
// counters after a restart. In-progress records are left out (recovery
// turns a crashed process's into interrupted, which cost what they
// recorded: nothing, as they never finished).
func (l *Ledger) SpendSince(ctx context.Context, since time.Time) (map[string]Totals, error) {
	if err := l.sync(ctx); err != nil {
		return nil, err
	}
	rows, err := l.r.QueryContext(ctx, `SELECT key_id, currency, COUNT(*), SUM(input_tokens), SUM(cached_input_tokens),
		SUM(output_tokens), SUM(reasoning_tokens), SUM(cost_picos)
		FROM usage_records
		WHERE created_at_us >= ? AND status != 'in_progress' AND key_id != ''
		GROUP BY key_id, currency`, since.UnixMicro())
	if err != nil {
		return nil, fmt.Errorf("usage: spend since: %w", err)
	}
	defer rows.Close()
	out := map[string]Totals{}
	for rows.Next() {
		var (
			key, cur string
			part     Totals
			cost     int64
		)
		if err := rows.Scan(&key, &cur, &part.Requests, &part.InputTokens, &part.CachedInputTokens,
			&part.OutputTokens, &part.ReasoningTokens, &cost); err != nil {
			return nil, fmt.Errorf("usage: spend since: %w", err)
		}
		if cur != "" {
			part.Costs = map[string]money.Picos{cur: money.Picos(cost)}
		}
		t := out[key]
		if err := t.Add(part); err != nil {
			return nil, fmt.Errorf("usage: spend since, key %s: %w", key, err)
		}
		out[key] = t
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("usage: spend since: %w", err)
	}
	return out, nil
}
