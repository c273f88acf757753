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

// Summary is SummaryFiltered without a filter: every one of keyID's final
// records in [from, to).
func (l *Ledger) Summary(ctx context.Context, keyID string, from, to time.Time) (Totals, error) {
	return l.SummaryFiltered(ctx, keyID, Filter{}, from, to)
}

// SummaryFiltered totals keyID's final records matching f created in
// [from, to). In-progress records are left out, as in List: a request
// counts once it has ended, with what it finally used. Records dropped by
// retention are gone from the totals too.
func (l *Ledger) SummaryFiltered(ctx context.Context, keyID string, f Filter, from, to time.Time) (Totals, error) {
	var t Totals
	err := l.summarize(ctx, keyID, f, "", from, to, func(_ string, part Totals) error { return t.Add(part) })
	if err != nil {
		return Totals{}, err
	}
	return t, nil
}

// The columns a summary can be broken down by (SummaryGroups).
const (
	GroupByEndpoint = "endpoint"
	GroupBySession  = "session"
)

// MaxSummaryGroups bounds the groups of one SummaryGroups answer: a key's
// sessions over a long range can be many thousands, and an answer that
// size is a bulk export, not a summary.
const MaxSummaryGroups = 1000

// ErrTooManyGroups is returned when a grouped summary would have more than
// MaxSummaryGroups groups; a shorter range or a filter has fewer.
var ErrTooManyGroups = errors.New("usage: too many groups in the summary")

// ErrBadGroup is returned for a group column other than GroupByEndpoint and
// GroupBySession.
var ErrBadGroup = errors.New("usage: invalid group")

// SummaryGroups is SummaryFiltered broken down by the column by
// (GroupByEndpoint or GroupBySession): the totals of each of its values,
// by value. Records without one ("" endpoint: written before the ledger
// stored it; "" session: the caller sent none) are the "" group. The
// groups add up to SummaryFiltered's totals. More than MaxSummaryGroups
// groups is ErrTooManyGroups.
func (l *Ledger) SummaryGroups(ctx context.Context, keyID string, f Filter, by string, from, to time.Time) (map[string]Totals, error) {
	if by != GroupByEndpoint && by != GroupBySession {
		return nil, fmt.Errorf("%w: %q", ErrBadGroup, by)
	}
	out := map[string]Totals{}
	err := l.summarize(ctx, keyID, f, by, from, to, func(g string, part Totals) error {
		t, ok := out[g]
		if !ok && len(out) == MaxSummaryGroups {
			return fmt.Errorf("%w: more than %d values of %s", ErrTooManyGroups, MaxSummaryGroups, by)
		}
		if err := t.Add(part); err != nil {
			return err
		}
		out[g] = t
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// summaryQuery is the totals statement of keyID's final records matching
// f in [from, to), one row per currency and, when by is not "", per value
// of column by (which must be GroupByEndpoint or GroupBySession). The
// range is searched in the (key_id, created_at_us) index, except with a
// session filter: a session's rows are few, so they are read through the
// session's index and tested against the range ("+" keeps SQLite from
// choosing the range, which would read all of the key's records in it)
// (TestSummaryPlans).
func summaryQuery(keyID string, f Filter, by string, from, to time.Time) (string, []any) {
	group, groupBy := "''", ""
	if by != "" {
		group, groupBy = by, by+", "
	}
	created := "created_at_us"
	if f.Session != "" {
		created = "+created_at_us"
	}
	where, args := f.where([]any{keyID, from.UnixMicro(), to.UnixMicro()})
	return `SELECT ` + group + `, currency, COUNT(*), SUM(input_tokens), SUM(cached_input_tokens),
		SUM(output_tokens), SUM(reasoning_tokens), SUM(cost_picos)
		FROM usage_records
		WHERE key_id = ? AND ` + created + ` >= ? AND ` + created + ` < ? AND status != 'in_progress'` + where + `
		GROUP BY ` + groupBy + `currency`, args
}

// summarize runs the totals query of keyID's final records matching f in
// [from, to), one row per group (the value of column by; "" and one group
// when by is "") and currency, and hands each to add.
func (l *Ledger) summarize(ctx context.Context, keyID string, f Filter, by string, from, to time.Time, add func(group string, part Totals) error) error {
	if err := l.sync(ctx); err != nil {
		return err
	}
	if keyID == "" {
		return errKeyRequired
	}
	if to.Before(from) {
		return fmt.Errorf("%w: to %s is before from %s", ErrBadRange, to.Format(time.RFC3339), from.Format(time.RFC3339))
	}
	if err := f.Validate(); err != nil {
		return err
	}
	q, args := summaryQuery(keyID, f, by, from, to)
	rows, err := l.r.QueryContext(ctx, q, args...)
	if err != nil {
		return fmt.Errorf("usage: summary: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var (
			g, cur string
			part   Totals
			cost   int64
		)
		if err := rows.Scan(&g, &cur, &part.Requests, &part.InputTokens, &part.CachedInputTokens,
			&part.OutputTokens, &part.ReasoningTokens, &cost); err != nil {
			return fmt.Errorf("usage: summary: %w", err)
		}
		if cur != "" {
			part.Costs = map[string]money.Picos{cur: money.Picos(cost)}
		}
		if err := add(g, part); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		// SQLite's SUM fails with "integer overflow" rather than wrap.
		return fmt.Errorf("usage: summary: %w", err)
	}
	return nil
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
