package snapshot

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/llmgw/llmgw/api/money"
)

// Token limits and budgets. A key may have its own tokens-per-minute limit
// and budget, and may name a Group whose limits it shares with the group's
// other keys; a request must fit all of them (gateway/quota).

// Budget periods: UTC calendar days and months.
const (
	PeriodDay   = "day"
	PeriodMonth = "month"
)

// MaxTokensPerMinute bounds a token limit: far above any real one, far below
// int64 overflow in the limit store's arithmetic.
const MaxTokensPerMinute = 1_000_000_000_000

// MaxDefaultMaxTokens is the largest max_tokens a request may send (the
// gateway's own bound), so a default never reserves more than a request could.
const MaxDefaultMaxTokens = 1 << 20

// Budget is an amount of money the requests may cost per period.
type Budget struct {
	// Amount is a decimal string (money.DecimalPattern) in Currency.
	Amount string `json:"amount"`
	// Currency is an ISO-4217 code (default DefaultCurrency); it must be
	// the snapshot's one currency (see Snapshot.Currency).
	Currency string `json:"currency"`
	// Period is PeriodDay or PeriodMonth (default PeriodMonth).
	Period string `json:"period"`
}

// Group is a token limit and a budget several keys share.
//
// A key naming a group the snapshot does not carry is valid: the gateway
// refuses its chat requests (403 budget_group_missing), so a group that is
// deleted, or not accepted by the controller, never lifts its limits.
type Group struct {
	Name            string  `json:"name"`
	TokensPerMinute int64   `json:"tokensPerMinute,omitzero"`
	Budget          *Budget `json:"budget,omitempty"`
	// Owners are labels copied onto the usage records of the group's keys
	// (a key's own owner labels win over the group's); see Key.Owners.
	Owners map[string]string `json:"owners,omitempty"`
}

func (b *Budget) normalize() {
	if b == nil {
		return
	}
	if b.Currency == "" {
		b.Currency = DefaultCurrency
	}
	if b.Period == "" {
		b.Period = PeriodMonth
	}
}

// normalizeGroups fills defaults and sorts the groups by name; no groups
// stay nil, so the field is omitted.
func normalizeGroups(s *Snapshot) {
	if len(s.Groups) == 0 {
		s.Groups = nil
		return
	}
	for i := range s.Groups {
		s.Groups[i].Budget.normalize()
	}
	slices.SortStableFunc(s.Groups, func(a, b Group) int { return cmp.Compare(a.Name, b.Name) })
}

// Limit is the budget's amount in pico-units of its currency. It is valid
// for a budget that passed Validate.
func (b *Budget) Limit() (money.Picos, error) {
	return money.ParseAmount(b.Amount)
}

// Window is the budget period that contains at: its name (for example
// "2026-11" or "2026-11-05"), start and end (exclusive), in UTC.
func (b *Budget) Window(at time.Time) (name string, start, end time.Time) {
	at = at.UTC()
	if b.Period == PeriodDay {
		start = time.Date(at.Year(), at.Month(), at.Day(), 0, 0, 0, 0, time.UTC)
		return start.Format(time.DateOnly), start, start.AddDate(0, 0, 1)
	}
	start = time.Date(at.Year(), at.Month(), 1, 0, 0, 0, 0, time.UTC)
	return start.Format("2006-01"), start, start.AddDate(0, 1, 0)
}

// Group finds a budget group by name.
func (c *Compiled) Group(name string) (*Group, bool) {
	g, ok := c.groups[name]
	return g, ok
}

func indexGroups(s *Snapshot) map[string]*Group {
	m := make(map[string]*Group, len(s.Groups))
	for i := range s.Groups {
		m[s.Groups[i].Name] = &s.Groups[i]
	}
	return m
}

// validateQuotas checks the groups, and that every price and budget is in
// the snapshot's one currency (validateCurrencies).
func validateQuotas(s *Snapshot) []error {
	var errs []error
	if n := s.Limits.DefaultMaxTokens; n < 1 || n > MaxDefaultMaxTokens {
		errs = append(errs, fmt.Errorf("limits: defaultMaxTokens must be within 1..%d, got %d", MaxDefaultMaxTokens, n))
	}
	names := make(map[string]bool, len(s.Groups))
	for i := range s.Groups {
		g := &s.Groups[i]
		obj := "group " + label(g.Name, i)
		if err := validName(g.Name); err != nil {
			errs = append(errs, fmt.Errorf("%s: name %w", obj, err))
		}
		if names[g.Name] {
			errs = append(errs, fmt.Errorf("%s: duplicate group name", obj))
		}
		errs = append(errs, validateOwners(obj, g.Owners)...)
		names[g.Name] = true
		errs = append(errs, validateLimits(obj, g.TokensPerMinute, g.Budget)...)
	}
	return append(errs, validateCurrencies(s)...)
}

// validateKeyQuotas checks a key's own quotas (not whether its group exists:
// see Group).
func validateKeyQuotas(obj string, k *Key) []error {
	errs := validateLimits(obj, k.TokensPerMinute, k.Budget)
	if k.Group != "" {
		if err := validName(k.Group); err != nil {
			errs = append(errs, fmt.Errorf("%s: group %w", obj, err))
		}
	}
	return errs
}

func validateLimits(obj string, tpm int64, b *Budget) []error {
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf(obj+": "+format, args...)) }
	if tpm < 0 || tpm > MaxTokensPerMinute {
		add("tokensPerMinute must be within 0..%d (0: no limit), got %d", MaxTokensPerMinute, tpm)
	}
	if b == nil {
		return errs
	}
	// The parser's errors quote the value, which may be anything pasted.
	if _, err := b.Limit(); errors.Is(err, money.ErrOverflow) {
		add("budget.amount exceeds the largest amount, %s", money.MaxAmount)
	} else if err != nil {
		add("budget.amount must be a decimal like \"25\" or \"0.125\" (at most 9 integer and %d fractional digits)", money.MaxFractionDigits)
	}
	if !money.ValidCurrency(b.Currency) {
		add("budget.currency must be an ISO-4217 code like %q, got %s", DefaultCurrency, quote(b.Currency))
	}
	if b.Period != PeriodDay && b.Period != PeriodMonth {
		add("budget.period must be %q or %q, got %s", PeriodDay, PeriodMonth, quote(b.Period))
	}
	return errs
}
