package usage

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"
	"time"

	"github.com/llmgw/llmgw/api/money"
	"github.com/llmgw/llmgw/api/snapshot"
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

// The columns a summary can be broken down by (SummaryGroups); an owner
// label is named GroupByOwnerPrefix + the label (GroupByOwner).
const (
	GroupByEndpoint = "endpoint"
	GroupBySession  = "session"
	// GroupByOwnerPrefix starts a group_by that breaks the summary down by
	// the value of one owner label (Record.Owners): "owner.team",
	// "owner.example.com/cost-center". The label is what follows it, a
	// Kubernetes label key (snapshot.ValidOwnerLabel).
	GroupByOwnerPrefix = "owner."
)

// GroupByOwner is the group_by that breaks a summary down by owner label
// label.
func GroupByOwner(label string) string { return GroupByOwnerPrefix + label }

// MaxSummaryGroups bounds the groups of one SummaryGroups answer: a key's
// sessions over a long range can be many thousands, and an answer that
// size is a bulk export, not a summary.
const MaxSummaryGroups = 1000

// ErrTooManyGroups is returned when a grouped summary would have more than
// MaxSummaryGroups groups; a shorter range or a filter has fewer.
var ErrTooManyGroups = errors.New("usage: too many groups in the summary")

// ErrBadGroup is returned for a group_by that is none of GroupByEndpoint,
// GroupBySession and GroupByOwner of a valid label.
var ErrBadGroup = errors.New("usage: invalid group")

// ValidateGroupBy returns nil when by is a group_by SummaryGroups takes,
// and otherwise an error wrapping ErrBadGroup that says what is (for the
// server to check a query parameter before it asks any ledger).
func ValidateGroupBy(by string) error {
	if by == "" {
		return fmt.Errorf("%w: empty", ErrBadGroup)
	}
	_, err := groupTerm(by)
	return err
}

// groupTerm is the SQL expression of a summary's group column for by, and
// its argument: "" for no breakdown, a column for endpoint and session,
// and for an owner label the label's value in the owners column, the
// empty string when the record has no such label (or no owners). The label reaches SQLite
// only as a bound JSON path, never in the statement's text; it was checked
// as a label key first, which holds no '"', so the quoted path names
// exactly that key, dots and slashes included.
func groupTerm(by string) (groupExpr, error) {
	switch by {
	case "":
		return groupExpr{sql: "''"}, nil
	case GroupByEndpoint, GroupBySession:
		return groupExpr{sql: by}, nil
	}
	label, ok := strings.CutPrefix(by, GroupByOwnerPrefix)
	if !ok {
		return groupExpr{}, fmt.Errorf("%w: %q: want %s, %s or %s<label>", ErrBadGroup, by, GroupByEndpoint, GroupBySession, GroupByOwnerPrefix)
	}
	if !snapshot.ValidOwnerLabel(label) {
		return groupExpr{}, fmt.Errorf("%w: %q: %q is not a Kubernetes label key", ErrBadGroup, by, label)
	}
	// NULLIF: json_extract fails on '' (not JSON), the column of a record
	// without owners; on NULL it is NULL, and COALESCE makes that ''.
	return groupExpr{sql: `COALESCE(json_extract(NULLIF(owners, ''), ?), '')`, arg: `$."` + label + `"`}, nil
}

// groupExpr is a summary's group column: SQL and, when it has a
// placeholder, its argument.
type groupExpr struct {
	sql string
	arg any
}

// SummaryGroups is SummaryFiltered broken down by by (GroupByEndpoint,
// GroupBySession or GroupByOwner(label)): the totals of each of its
// values, by value. Records without one ("" endpoint: written before the
// ledger stored it; "" session: the caller sent none; "" owner: the
// record carries no such label) are the "" group. The groups add up to
// SummaryFiltered's totals. More than MaxSummaryGroups groups is
// ErrTooManyGroups; another by is ErrBadGroup.
func (l *Ledger) SummaryGroups(ctx context.Context, keyID string, f Filter, by string, from, to time.Time) (map[string]Totals, error) {
	if err := ValidateGroupBy(by); err != nil {
		return nil, err
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
// of by's group term (groupTerm; by must be valid). The range is searched
// in the (key_id, created_at_us) index, except with a session filter: a
// session's rows are few, so they are read through the session's index
// and tested against the range ("+" keeps SQLite from choosing the range,
// which would read all of the key's records in it) (TestSummaryPlans).
func summaryQuery(keyID string, f Filter, by string, from, to time.Time) (string, []any, error) {
	g, err := groupTerm(by)
	if err != nil {
		return "", nil, err
	}
	var args []any
	if g.arg != nil {
		args = append(args, g.arg)
	}
	created := "created_at_us"
	if f.Session != "" {
		created = "+created_at_us"
	}
	where, args := f.where(append(args, keyID, from.UnixMicro(), to.UnixMicro()))
	return `SELECT ` + g.sql + ` AS grp, currency, COUNT(*), SUM(input_tokens), SUM(cached_input_tokens),
		SUM(output_tokens), SUM(reasoning_tokens), SUM(cost_picos)
		FROM usage_records
		WHERE key_id = ? AND ` + created + ` >= ? AND ` + created + ` < ? AND status != 'in_progress'` + where + `
		GROUP BY grp, currency`, args, nil
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
	q, args, err := summaryQuery(keyID, f, by, from, to)
	if err != nil {
		return err
	}
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
	return l.spendSince(ctx, "key_id", since, "spend since", "key")
}

// GroupSpendSince is SpendSince by budget group: the spend of the records
// created at or after since that were made while their key belonged to a
// group (Record.Group), by group name. A key that joined a group brings
// none of its earlier spend, and one that left takes none of it away, so a
// group's budget re-seeded after a restart is what its members spent as
// members. Records without a group are in no total.
func (l *Ledger) GroupSpendSince(ctx context.Context, since time.Time) (map[string]Totals, error) {
	return l.spendSince(ctx, "key_group", since, "group spend since", "group")
}

// spendSince totals final records created at or after since by column col
// (a constant of the callers, never input), leaving out those where it is
// empty. what and unit name the query and a value in errors.
func (l *Ledger) spendSince(ctx context.Context, col string, since time.Time, what, unit string) (map[string]Totals, error) {
	if err := l.sync(ctx); err != nil {
		return nil, err
	}
	rows, err := l.r.QueryContext(ctx, `SELECT `+col+`, currency, COUNT(*), SUM(input_tokens), SUM(cached_input_tokens),
		SUM(output_tokens), SUM(reasoning_tokens), SUM(cost_picos)
		FROM usage_records
		WHERE created_at_us >= ? AND status != 'in_progress' AND `+col+` != ''
		GROUP BY `+col+`, currency`, since.UnixMicro())
	if err != nil {
		return nil, fmt.Errorf("usage: %s: %w", what, err)
	}
	defer rows.Close()
	out := map[string]Totals{}
	for rows.Next() {
		var (
			name, cur string
			part      Totals
			cost      int64
		)
		if err := rows.Scan(&name, &cur, &part.Requests, &part.InputTokens, &part.CachedInputTokens,
			&part.OutputTokens, &part.ReasoningTokens, &cost); err != nil {
			return nil, fmt.Errorf("usage: %s: %w", what, err)
		}
		if cur != "" {
			part.Costs = map[string]money.Picos{cur: money.Picos(cost)}
		}
		t := out[name]
		if err := t.Add(part); err != nil {
			return nil, fmt.Errorf("usage: %s, %s %s: %w", what, unit, name, err)
		}
		out[name] = t
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("usage: %s: %w", what, err)
	}
	return out, nil
}
