package snapshot

import (
	"bytes"
	"testing"
	"time"

	"github.com/llmgw/llmgw/api/money"
)

func at(s string) *time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return &t
}

func pricedSnapshot() *Snapshot {
	s := validSnapshot()
	s.Providers[0].Prices = []Price{
		{Model: "alpha-large", InputPerMillion: "2.5", OutputPerMillion: "10", EffectiveFrom: at("2026-03-01T00:00:00Z")},
		{Model: "alpha-large", InputPerMillion: "3", CachedInputPerMillion: "1.5", OutputPerMillion: "12", ReasoningPerMillion: "15"},
		{Model: "alpha-small", Currency: "USD", InputPerMillion: "0.15", OutputPerMillion: "0.6"},
	}
	s.Providers[1].Prices = []Price{{Model: "beta-large", InputPerMillion: "1", OutputPerMillion: "2"}}
	s.Normalize()
	return s
}

func TestPriceNormalize(t *testing.T) {
	s := pricedSnapshot()
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	got := s.Providers[0].Prices
	// Sorted by model, then effectiveFrom with "since forever" first.
	if got[0].EffectiveFrom != nil || got[1].EffectiveFrom == nil || got[2].Model != "alpha-small" {
		t.Fatalf("prices not in canonical order: %+v", got)
	}
	if got[0].Currency != "USD" || got[1].CachedInputPerMillion != "2.5" || got[1].ReasoningPerMillion != "10" {
		t.Errorf("defaults not filled: %+v", got[1])
	}
	if got[0].CachedInputPerMillion != "1.5" || got[0].ReasoningPerMillion != "15" {
		t.Errorf("explicit rates overwritten: %+v", got[0])
	}
	if s.Currency() != "USD" {
		t.Errorf("Currency() = %q", s.Currency())
	}
	if (&Snapshot{}).Currency() != "" {
		t.Error("an unpriced snapshot has a currency")
	}
}

func TestPriceFor(t *testing.T) {
	c := Compile(pricedSnapshot())
	before, change := time.Date(2026, 2, 28, 23, 59, 59, 0, time.UTC), *at("2026-03-01T00:00:00Z")
	for _, tc := range []struct {
		name            string
		provider, model string
		at              time.Time
		want            money.Price
		ok              bool
	}{
		{"before the change", "alpha", "alpha-large", before,
			money.Price{Currency: "USD", Input: 3_000_000, CachedInput: 1_500_000, Output: 12_000_000, Reasoning: 15_000_000}, true},
		{"at the change", "alpha", "alpha-large", change,
			money.Price{Currency: "USD", Input: 2_500_000, CachedInput: 2_500_000, Output: 10_000_000, Reasoning: 10_000_000}, true},
		{"long after", "alpha", "alpha-large", change.AddDate(5, 0, 0),
			money.Price{Currency: "USD", Input: 2_500_000, CachedInput: 2_500_000, Output: 10_000_000, Reasoning: 10_000_000}, true},
		{"other provider", "beta", "beta-large", before,
			money.Price{Currency: "USD", Input: 1_000_000, CachedInput: 1_000_000, Output: 2_000_000, Reasoning: 2_000_000}, true},
		{"unpriced model", "beta", "beta-small", before, money.Price{}, false},
		{"model priced at another provider", "beta", "alpha-large", before, money.Price{}, false},
	} {
		got, ok := c.PriceFor(tc.provider, tc.model, tc.at)
		if ok != tc.ok || got != tc.want {
			t.Errorf("%s: PriceFor = %+v, %v; want %+v, %v", tc.name, got, ok, tc.want, tc.ok)
		}
	}
	if c.Currency() != "USD" {
		t.Errorf("Compiled.Currency() = %q", c.Currency())
	}
}

func TestPriceForOnlyLaterPrices(t *testing.T) {
	s := validSnapshot()
	s.Providers[0].Prices = []Price{{Model: "m", InputPerMillion: "1", OutputPerMillion: "1", EffectiveFrom: at("2030-01-01T00:00:00Z")}}
	s.Normalize()
	if p, ok := Compile(s).PriceFor("alpha", "m", time.Date(2029, 1, 1, 0, 0, 0, 0, time.UTC)); ok {
		t.Fatalf("a price effective only later applied: %+v", p)
	}
}

func TestValidatePrices(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mutate func(s *Snapshot)
		want   []string
	}{
		{"duplicate since forever", func(s *Snapshot) {
			s.Providers[1].Prices = append(s.Providers[1].Prices, Price{Model: "beta-large", InputPerMillion: "9", OutputPerMillion: "9"})
		}, []string{`provider "beta": price of model "beta-large": duplicate price with no effectiveFrom`}},
		{"duplicate dated", func(s *Snapshot) {
			s.Providers[0].Prices = append(s.Providers[0].Prices, Price{Model: "alpha-large", InputPerMillion: "9",
				OutputPerMillion: "9", EffectiveFrom: at("2026-03-01T01:00:00+01:00")})
		}, []string{`provider "alpha": price of model "alpha-large": duplicate price effective from 2026-03-01T00:00:00Z`}},
		{"two currencies", func(s *Snapshot) { s.Providers[1].Prices[0].Currency = "EUR" },
			[]string{`provider "beta": price of model "beta-large": currency EUR differs from USD`, "a snapshot has one currency"}},
		{"bad currency", func(s *Snapshot) { s.Providers[1].Prices[0].Currency = "usd" },
			[]string{`provider "beta": price of model "beta-large": currency must be an ISO-4217 code like "USD", got "usd"`}},
		{"bad decimal", func(s *Snapshot) { s.Providers[1].Prices[0].OutputPerMillion = "1e3" },
			[]string{`provider "beta": price of model "beta-large": outputPerMillion: money: "1e3" is not a decimal`}},
		{"too many fractional digits", func(s *Snapshot) { s.Providers[1].Prices[0].InputPerMillion = "0.0000001" },
			[]string{`inputPerMillion: money: "0.0000001" is not a decimal`}},
		{"negative", func(s *Snapshot) { s.Providers[1].Prices[0].InputPerMillion = "-1" },
			[]string{`inputPerMillion: money: "-1" is not a decimal`}},
		{"missing input", func(s *Snapshot) { s.Providers[1].Prices[0].InputPerMillion = "" },
			[]string{`inputPerMillion: money: "" is not a decimal`}},
		{"empty model", func(s *Snapshot) { s.Providers[1].Prices[0].Model = "" },
			[]string{`provider "beta": prices[0]: model is empty`}},
		{"plaintext key as model", func(s *Snapshot) { s.Providers[1].Prices[0].Model = plainA },
			[]string{`looks like a plaintext gateway key`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := pricedSnapshot()
			tc.mutate(s)
			s.Normalize()
			mustContainAll(t, s.Validate(), tc.want...)
		})
	}
}

// TestPricesOmittedWhenEmpty: snapshots written before prices existed keep
// their canonical bytes, and so their version.
func TestPricesOmittedWhenEmpty(t *testing.T) {
	b, err := Encode(validSnapshot())
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(b, []byte(`"prices"`)) {
		t.Fatalf("an unpriced snapshot encodes a prices field:\n%s", b)
	}
	b, err = Encode(pricedSnapshot())
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(b, []byte(`"inputPerMillion": "2.5"`)) {
		t.Fatalf("prices missing from the encoding:\n%s", b)
	}
	back, err := Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	if p, ok := Compile(back).PriceFor("alpha", "alpha-small", time.Now()); !ok || p.Output != 600_000 {
		t.Fatalf("price lost in the round trip: %+v, %v", p, ok)
	}
}

func TestClonePricesIsDeep(t *testing.T) {
	s := pricedSnapshot()
	c := s.Clone()
	*c.Providers[0].Prices[1].EffectiveFrom = time.Time{}
	c.Providers[0].Prices[0].Model = "changed"
	if s.Providers[0].Prices[1].EffectiveFrom.IsZero() || s.Providers[0].Prices[0].Model == "changed" {
		t.Fatal("Clone shares prices with the original")
	}
}
