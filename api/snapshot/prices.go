package snapshot

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/llmgw/llmgw/api/money"
)

// DefaultCurrency is the currency of a price that names none.
const DefaultCurrency = "USD"

// Price is what one model of a provider costs from EffectiveFrom on. Amounts
// are decimal strings per million tokens (money.DecimalPattern) so that the
// snapshot carries them exactly; the gateway parses them once per snapshot.
// Cached input tokens are part of the input tokens and reasoning tokens part
// of the output tokens; each part is charged at its own rate.
type Price struct {
	Model    string `json:"model"`
	Currency string `json:"currency"`
	// CachedInputPerMillion defaults to InputPerMillion and
	// ReasoningPerMillion to OutputPerMillion (Normalize fills them).
	InputPerMillion       string `json:"inputPerMillion"`
	CachedInputPerMillion string `json:"cachedInputPerMillion"`
	OutputPerMillion      string `json:"outputPerMillion"`
	ReasoningPerMillion   string `json:"reasoningPerMillion"`
	// EffectiveFrom is when this price starts to apply; nil means since
	// forever. A request is charged the price with the latest EffectiveFrom
	// at or before the request's start, so adding a price never rewrites the
	// cost of requests already made.
	EffectiveFrom *time.Time `json:"effectiveFrom"`
}

// Parse turns a normalized price into exact integers (pico-units per token).
func (p *Price) Parse() (money.Price, error) {
	out := money.Price{Currency: p.Currency}
	for _, f := range []struct {
		name string
		s    string
		dst  *int64
	}{
		{"inputPerMillion", p.InputPerMillion, &out.Input},
		{"cachedInputPerMillion", p.CachedInputPerMillion, &out.CachedInput},
		{"outputPerMillion", p.OutputPerMillion, &out.Output},
		{"reasoningPerMillion", p.ReasoningPerMillion, &out.Reasoning},
	} {
		v, err := money.ParsePrice(f.s)
		if err != nil {
			return money.Price{}, fmt.Errorf("%s: %w", f.name, err)
		}
		*f.dst = v
	}
	return out, nil
}

func (p *Price) normalize() {
	if p.Currency == "" {
		p.Currency = DefaultCurrency
	}
	if p.CachedInputPerMillion == "" {
		p.CachedInputPerMillion = p.InputPerMillion
	}
	if p.ReasoningPerMillion == "" {
		p.ReasoningPerMillion = p.OutputPerMillion
	}
	if p.EffectiveFrom != nil {
		t := p.EffectiveFrom.Round(0).UTC()
		p.EffectiveFrom = &t
	}
}

// normalizePrices fills defaults and sorts by model, then EffectiveFrom (nil
// first), so a price list has one canonical order.
func normalizePrices(ps []Price) {
	for i := range ps {
		ps[i].normalize()
	}
	slices.SortStableFunc(ps, func(a, b Price) int {
		if c := cmp.Compare(a.Model, b.Model); c != 0 {
			return c
		}
		return effectiveFrom(a).Compare(effectiveFrom(b))
	})
}

func effectiveFrom(p Price) time.Time {
	if p.EffectiveFrom == nil {
		return time.Time{}
	}
	return *p.EffectiveFrom
}

// Currency is the one currency every price (and budget) of the snapshot is
// in, "" when nothing is priced. Validate guarantees there is at most one.
func (s *Snapshot) Currency() string {
	for i := range s.Providers {
		for j := range s.Providers[i].Prices {
			if c := s.Providers[i].Prices[j].Currency; c != "" {
				return c
			}
		}
	}
	return ""
}

// validatePrices checks every price of every provider and a (model,
// effectiveFrom) pair appearing once per provider. That the snapshot has
// one currency is validateCurrencies' to check, prices and budgets
// together.
func validatePrices(s *Snapshot) []error {
	var errs []error
	for i := range s.Providers {
		pr := &s.Providers[i]
		type slot struct {
			model string
			from  time.Time
		}
		seen := map[slot]bool{}
		for j := range pr.Prices {
			p := &pr.Prices[j]
			obj := fmt.Sprintf("provider %s: prices[%d]", label(pr.Name, i), j)
			add := func(format string, args ...any) { errs = append(errs, fmt.Errorf(obj+": "+format, args...)) }
			if err := validName(p.Model); err != nil {
				add("model %v", err)
			} else {
				obj = fmt.Sprintf("provider %s: price of model %s", label(pr.Name, i), quote(p.Model))
			}
			k := slot{p.Model, effectiveFrom(*p)}
			if seen[k] {
				when := "with no effectiveFrom"
				if p.EffectiveFrom != nil {
					when = "effective from " + p.EffectiveFrom.Format(time.RFC3339Nano)
				}
				add("duplicate price %s (one price per model and effectiveFrom)", when)
			}
			seen[k] = true
			if !money.ValidCurrency(p.Currency) {
				add("currency must be an ISO-4217 code like %q, got %s", DefaultCurrency, quote(p.Currency))
			}
			if _, err := p.Parse(); err != nil {
				add("%v", err)
			}
		}
	}
	return errs
}

// validateCurrencies checks that every price and budget is in one
// currency. When they are not, the currency most of them use is taken for
// the snapshot's (on a tie, the one seen first: prices, then groups, then
// keys, in the snapshot's order), and each price or budget in another one
// is reported, with the currency it should have and who uses it: the odd
// ones out are named, not the many that agree with each other. Invalid
// codes are left to validatePrices and validateLimits.
func validateCurrencies(s *Snapshot) []error {
	type tally struct{ prices, budgets int }
	counts := map[string]*tally{}
	var order []string // currencies as first seen
	eachCurrency(s, func(u currencyUse) bool {
		t := counts[u.currency]
		if t == nil {
			t = &tally{}
			counts[u.currency] = t
			order = append(order, u.currency)
		}
		if u.what == usePrice {
			t.prices++
		} else {
			t.budgets++
		}
		return true
	})
	if len(order) < 2 {
		return nil
	}
	total := func(c string) int { return counts[c].prices + counts[c].budgets }
	major := order[0]
	for _, c := range order[1:] {
		if total(c) > total(major) {
			major = c
		}
	}
	// who uses the majority currency, in words.
	var who string
	if t := counts[major]; total(major) == 1 {
		eachCurrency(s, func(u currencyUse) bool {
			if u.currency == major {
				who = u.obj(s)
				return false
			}
			return true
		})
	} else {
		var parts []string
		for _, n := range []struct {
			n    int
			what string
		}{{t.prices, "price"}, {t.budgets, "budget"}} {
			switch {
			case n.n == 1:
				parts = append(parts, "1 "+n.what)
			case n.n > 1:
				parts = append(parts, strconv.Itoa(n.n)+" "+n.what+"s")
			}
		}
		who = strings.Join(parts, " and ")
	}
	for _, c := range order {
		if c != major && total(c) == total(major) {
			who += fmt.Sprintf("; as many use %s, and %s comes first", c, major)
			break
		}
	}
	var errs []error
	eachCurrency(s, func(u currencyUse) bool {
		if u.currency != major {
			errs = append(errs, fmt.Errorf("%s: %s %s differs from %s (the currency of %s): a snapshot has one currency",
				u.obj(s), u.field(), u.currency, major, who))
		}
		return true
	})
	return errs
}

// currencyUse is one price or budget in a valid currency: the j-th price
// of the i-th provider, or the budget of the i-th group or key.
type currencyUse struct {
	currency string
	what     useKind
	i, j     int
}

type useKind uint8

const (
	usePrice useKind = iota
	useGroupBudget
	useKeyBudget
)

// field is the use's field in errors.
func (u currencyUse) field() string {
	if u.what == usePrice {
		return "currency"
	}
	return "budget.currency"
}

// obj names the use's object in errors, as validation does.
func (u currencyUse) obj(s *Snapshot) string {
	switch u.what {
	case usePrice:
		return priceObj(&s.Providers[u.i], u.i, u.j)
	case useGroupBudget:
		return "group " + label(s.Groups[u.i].Name, u.i)
	}
	return "key " + label(s.Keys[u.i].ID, u.i)
}

// eachCurrency calls fn with each price's and budget's currency that is a
// valid code (prices, then groups, then keys, in order) until fn returns
// false.
func eachCurrency(s *Snapshot, fn func(currencyUse) bool) {
	for i := range s.Providers {
		for j := range s.Providers[i].Prices {
			if c := s.Providers[i].Prices[j].Currency; money.ValidCurrency(c) && !fn(currencyUse{c, usePrice, i, j}) {
				return
			}
		}
	}
	for i := range s.Groups {
		if b := s.Groups[i].Budget; b != nil && money.ValidCurrency(b.Currency) && !fn(currencyUse{b.Currency, useGroupBudget, i, 0}) {
			return
		}
	}
	for i := range s.Keys {
		if b := s.Keys[i].Budget; b != nil && money.ValidCurrency(b.Currency) && !fn(currencyUse{b.Currency, useKeyBudget, i, 0}) {
			return
		}
	}
}

// priceObj names the j-th price of provider pr (the i-th) as validatePrices'
// errors do, by model (and start, as a model can have several prices) when
// the model is a valid name, else by index.
func priceObj(pr *Provider, i, j int) string {
	p := &pr.Prices[j]
	if validName(p.Model) != nil {
		return fmt.Sprintf("provider %s: prices[%d]", label(pr.Name, i), j)
	}
	obj := fmt.Sprintf("provider %s: price of model %s", label(pr.Name, i), quote(p.Model))
	if p.EffectiveFrom != nil {
		obj += " effective from " + p.EffectiveFrom.Format(time.RFC3339Nano)
	}
	return obj
}

// routeKey names a route in the compiled price index.
type routeKey struct{ provider, model string }

// datedPrice is one parsed price of a route and when it starts.
type datedPrice struct {
	from  time.Time // zero: since forever
	price money.Price
}

// indexPrices parses every valid price into per-route lists sorted by start.
// A price that does not parse (the snapshot skipped Validate) is left out:
// its route is unpriced rather than the whole snapshot unusable.
func indexPrices(s *Snapshot) map[routeKey][]datedPrice {
	idx := map[routeKey][]datedPrice{}
	for i := range s.Providers {
		pr := &s.Providers[i]
		for j := range pr.Prices {
			p := &pr.Prices[j]
			mp, err := p.Parse()
			if err != nil {
				continue
			}
			k := routeKey{pr.Name, p.Model}
			idx[k] = append(idx[k], datedPrice{effectiveFrom(*p), mp})
		}
	}
	for _, l := range idx {
		slices.SortStableFunc(l, func(a, b datedPrice) int { return a.from.Compare(b.from) })
	}
	return idx
}

// PriceFor is the price of the route (provider, model) at time at: the one
// with the latest EffectiveFrom not after at. ok is false for an unpriced
// route (no price, or every price starts later), which costs nothing.
func (c *Compiled) PriceFor(provider, model string, at time.Time) (money.Price, bool) {
	l := c.prices[routeKey{provider, model}]
	for i := len(l) - 1; i >= 0; i-- {
		if !l[i].from.After(at) {
			return l[i].price, true
		}
	}
	return money.Price{}, false
}

// Currency is the snapshot's one currency, "" when nothing is priced.
func (c *Compiled) Currency() string { return c.snap.Currency() }
