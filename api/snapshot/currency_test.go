package snapshot

import (
	"slices"
	"strings"
	"testing"
)

// TestCurrencyMajority: a snapshot in more than one currency names the
// prices and budgets in a currency other than the one most of them use (a
// tie goes to the one seen first: prices, groups, keys), each once, and
// only them: the many that agree are never reported for differing from a
// stray first one.
func TestCurrencyMajority(t *testing.T) {
	eur := func(amount string) *Budget { return &Budget{Amount: amount, Currency: "EUR", Period: PeriodMonth} }
	usd := func(amount string) *Budget { return &Budget{Amount: amount, Currency: "USD", Period: PeriodMonth} }
	const one = ": a snapshot has one currency"
	cases := []struct {
		name   string
		mutate func(s *Snapshot) // of pricedSnapshot: four prices, all USD
		want   []string          // every currency error, exactly; nil: valid
	}{
		{"one currency", func(s *Snapshot) {
			s.Keys[0].Budget = usd("5")
			s.Groups = []Group{{Name: "g", Budget: usd("50")}}
		}, nil},
		{"budgets only, one currency", func(s *Snapshot) {
			for i := range s.Providers {
				s.Providers[i].Prices = nil
			}
			s.Keys[0].Budget, s.Keys[1].Budget = eur("1"), eur("2")
		}, nil},
		{"one price differs", func(s *Snapshot) { s.Providers[1].Prices[0].Currency = "EUR" }, []string{
			`provider "beta": price of model "beta-large": currency EUR differs from USD (the currency of 3 prices)` + one,
		}},
		{"the first price is the odd one out", func(s *Snapshot) { s.Providers[0].Prices[0].Currency = "EUR" }, []string{
			`provider "alpha": price of model "alpha-large": currency EUR differs from USD (the currency of 3 prices)` + one,
		}},
		{"a dated price is named with its start", func(s *Snapshot) { s.Providers[0].Prices[1].Currency = "EUR" }, []string{
			`provider "alpha": price of model "alpha-large" effective from 2026-03-01T00:00:00Z: currency EUR differs from USD (the currency of 3 prices)` + one,
		}},
		{"budgets outnumber the prices", func(s *Snapshot) {
			s.Groups = []Group{{Name: "g1", Budget: eur("1")}, {Name: "g2", Budget: eur("1")}, {Name: "g3", Budget: eur("1")}}
			s.Keys[0].Budget, s.Keys[1].Budget = eur("1"), eur("1")
		}, []string{
			`provider "alpha": price of model "alpha-large": currency USD differs from EUR (the currency of 5 budgets)` + one,
			`provider "alpha": price of model "alpha-large" effective from 2026-03-01T00:00:00Z: currency USD differs from EUR (the currency of 5 budgets)` + one,
			`provider "alpha": price of model "alpha-small": currency USD differs from EUR (the currency of 5 budgets)` + one,
			`provider "beta": price of model "beta-large": currency USD differs from EUR (the currency of 5 budgets)` + one,
		}},
		{"prices and budgets together", func(s *Snapshot) {
			s.Providers[1].Prices[0].Currency = "EUR"
			s.Groups = []Group{{Name: "g", Budget: usd("1")}}
			s.Keys[0].Budget, s.Keys[1].Budget = usd("1"), eur("1")
		}, []string{
			`provider "beta": price of model "beta-large": currency EUR differs from USD (the currency of 3 prices and 2 budgets)` + one,
			`key "key-b": budget.currency EUR differs from USD (the currency of 3 prices and 2 budgets)` + one,
		}},
		{"three currencies", func(s *Snapshot) {
			s.Providers[0].Prices[2].Currency = "CHF"
			s.Providers[1].Prices[0].Currency = "EUR"
			s.Keys[0].Budget = eur("1")
		}, []string{
			`provider "alpha": price of model "alpha-small": currency CHF differs from USD (the currency of 2 prices; as many use EUR, and USD comes first)` + one,
			`provider "beta": price of model "beta-large": currency EUR differs from USD (the currency of 2 prices; as many use EUR, and USD comes first)` + one,
			`key "key-a": budget.currency EUR differs from USD (the currency of 2 prices; as many use EUR, and USD comes first)` + one,
		}},
		{"a tie of one each names the first", func(s *Snapshot) {
			for i := range s.Providers {
				s.Providers[i].Prices = nil
			}
			s.Groups = []Group{{Name: "g", Budget: usd("1")}}
			s.Keys[1].Budget = eur("1")
		}, []string{
			`key "key-b": budget.currency EUR differs from USD (the currency of group "g"; as many use EUR, and USD comes first)` + one,
		}},
		{"a single user of the majority is named", func(s *Snapshot) {
			s.Providers[0].Prices = nil
			s.Keys[0].Budget = eur("1")
		}, []string{
			`key "key-a": budget.currency EUR differs from USD (the currency of provider "beta": price of model "beta-large"; as many use EUR, and USD comes first)` + one,
		}},
		{"an invalid code is not counted", func(s *Snapshot) {
			s.Providers[1].Prices[0].Currency = "usd"
			s.Keys[0].Budget = &Budget{Amount: "1", Currency: "eur", Period: PeriodDay}
		}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := pricedSnapshot()
			c.mutate(s)
			s.Normalize()
			var got []string
			if err := s.Validate(); err != nil {
				for line := range strings.SplitSeq(err.Error(), "\n") {
					if strings.Contains(line, "one currency") {
						got = append(got, line)
					}
				}
			}
			if !slices.Equal(got, c.want) {
				t.Fatalf("currency errors:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(c.want, "\n"))
			}
		})
	}
}
