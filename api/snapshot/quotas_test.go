package snapshot

import (
	"testing"
	"time"
)

func TestValidateQuotas(t *testing.T) {
	budget := func(amount, currency, period string) *Budget {
		return &Budget{Amount: amount, Currency: currency, Period: period}
	}
	cases := []struct {
		name   string
		mutate func(s *Snapshot)
		want   []string // nil: valid
	}{
		{"key with every quota", func(s *Snapshot) {
			s.Keys[0].TokensPerMinute, s.Keys[0].Budget, s.Keys[0].Group = 1000, budget("0.000001", "USD", PeriodDay), "team"
			s.Groups = []Group{{Name: "team", TokensPerMinute: 5000, Budget: budget("9223372", "USD", PeriodMonth)}}
		}, nil},
		{"dangling group is valid (the gateway refuses the key)", func(s *Snapshot) { s.Keys[0].Group = "gone" }, nil},
		{"group without limits", func(s *Snapshot) { s.Groups = []Group{{Name: "just-a-team"}} }, nil},
		{"negative tpm", func(s *Snapshot) { s.Keys[0].TokensPerMinute = -1 },
			[]string{`key "key-a": tokensPerMinute must be within 0..1000000000000 (0: no limit), got -1`}},
		{"tpm too large", func(s *Snapshot) { s.Groups = []Group{{Name: "g", TokensPerMinute: MaxTokensPerMinute + 1}} },
			[]string{`group "g": tokensPerMinute must be within`}},
		{"bad amount", func(s *Snapshot) { s.Keys[1].Budget = budget("1e3", "USD", PeriodDay) },
			[]string{`key "key-b": budget.amount must be a decimal`}},
		{"amount too large", func(s *Snapshot) { s.Keys[1].Budget = budget("9223372.000001", "USD", PeriodDay) },
			[]string{`key "key-b": budget.amount exceeds the largest amount, 9223372`}},
		{"amount with 7 decimals", func(s *Snapshot) { s.Keys[1].Budget = budget("0.0000001", "USD", PeriodDay) },
			[]string{`budget.amount must be a decimal`}},
		{"plaintext key as amount is not echoed", func(s *Snapshot) { s.Keys[1].Budget = budget(plainA, "USD", PeriodDay) },
			[]string{`budget.amount must be a decimal`}},
		{"bad currency", func(s *Snapshot) { s.Keys[1].Budget = budget("1", "usd", PeriodDay) },
			[]string{`key "key-b": budget.currency must be an ISO-4217 code like "USD", got "usd"`}},
		{"bad period", func(s *Snapshot) { s.Keys[1].Budget = budget("1", "USD", "week") },
			[]string{`key "key-b": budget.period must be "day" or "month", got "week"`}},
		{"two currencies", func(s *Snapshot) {
			s.Keys[0].Budget = budget("1", "EUR", PeriodDay)
			s.Keys[1].Budget = budget("1", "USD", PeriodDay)
		}, []string{`key "key-b": budget.currency USD differs from EUR (the currency of key "key-a"; as many use USD, and EUR comes first): a snapshot has one currency`}},
		{"budget differs from the prices", func(s *Snapshot) {
			s.Providers[0].Prices = []Price{{Model: "alpha-large", Currency: "USD", InputPerMillion: "1", OutputPerMillion: "2"}}
			s.Groups = []Group{{Name: "g", Budget: budget("1", "EUR", PeriodMonth)}}
		}, []string{`group "g": budget.currency EUR differs from USD (the currency of provider "alpha": price of model "alpha-large"; as many use EUR, and USD comes first)`}},
		{"duplicate group", func(s *Snapshot) { s.Groups = []Group{{Name: "g"}, {Name: "g"}} },
			[]string{`group "g": duplicate group name`}},
		{"group without name", func(s *Snapshot) { s.Groups = []Group{{}} }, []string{`group #0: name is empty`}},
		{"bad group reference", func(s *Snapshot) { s.Keys[0].Group = "a b" },
			[]string{`key "key-a": group "a b" contains whitespace`}},
		{"defaultMaxTokens too large", func(s *Snapshot) { s.Limits.DefaultMaxTokens = MaxDefaultMaxTokens + 1 },
			[]string{`limits: defaultMaxTokens must be within 1..1048576, got 1048577`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := validSnapshot()
			c.mutate(s)
			s.Normalize()
			err := s.Validate()
			if c.want == nil {
				if err != nil {
					t.Fatalf("want valid, got %v", err)
				}
				return
			}
			mustContainAll(t, err, c.want...)
		})
	}
}

func TestQuotaDefaults(t *testing.T) {
	s := validSnapshot()
	s.Keys[0].Budget = &Budget{Amount: "5"}
	s.Groups = []Group{{Name: "z", Budget: &Budget{Amount: "1"}}, {Name: "a"}}
	s.Normalize()
	if b := s.Keys[0].Budget; b.Currency != "USD" || b.Period != PeriodMonth {
		t.Errorf("key budget defaults: %+v", b)
	}
	if s.Groups[0].Name != "a" || s.Groups[1].Budget.Period != PeriodMonth {
		t.Errorf("groups not sorted or not defaulted: %+v", s.Groups)
	}
	if s.Limits.DefaultMaxTokens != DefaultMaxTokens {
		t.Errorf("defaultMaxTokens = %d", s.Limits.DefaultMaxTokens)
	}
	empty := &Snapshot{Groups: []Group{}}
	empty.Normalize()
	if empty.Groups != nil {
		t.Error("an empty group list must normalize to nil (omitted from the encoding)")
	}
	c := Compile(s)
	if g, ok := c.Group("z"); !ok || g.Budget.Amount != "1" {
		t.Errorf("Compiled.Group(z) = %+v, %v", g, ok)
	}
	if _, ok := c.Group("missing"); ok {
		t.Error("Compiled.Group finds a group that does not exist")
	}
	// Clone is deep: a caller editing the original cannot reach the compiled view.
	s.Groups[1].Budget.Amount = "2"
	s.Keys[0].Budget.Amount = "6"
	if g, _ := c.Group("z"); g.Budget.Amount != "1" {
		t.Error("Compile shares a group's budget with its input")
	}
	if k, _ := c.KeyByPrefix(s.Keys[0].Prefix); k.Budget.Amount != "5" {
		t.Error("Compile shares a key's budget with its input")
	}
}

func TestBudgetWindow(t *testing.T) {
	cases := []struct {
		period     string
		at         time.Time
		name       string
		start, end time.Time
	}{
		{PeriodDay, time.Date(2026, 11, 5, 23, 59, 59, 999, time.UTC), "2026-11-05",
			time.Date(2026, 11, 5, 0, 0, 0, 0, time.UTC), time.Date(2026, 11, 6, 0, 0, 0, 0, time.UTC)},
		{PeriodDay, time.Date(2026, 12, 31, 12, 0, 0, 0, time.UTC), "2026-12-31",
			time.Date(2026, 12, 31, 0, 0, 0, 0, time.UTC), time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)},
		{PeriodMonth, time.Date(2028, 2, 29, 10, 0, 0, 0, time.UTC), "2028-02",
			time.Date(2028, 2, 1, 0, 0, 0, 0, time.UTC), time.Date(2028, 3, 1, 0, 0, 0, 0, time.UTC)},
		// A local time is placed in its UTC period.
		{PeriodMonth, time.Date(2026, 12, 1, 0, 30, 0, 0, time.FixedZone("CET", 3600)), "2026-11",
			time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC), time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)},
	}
	for _, c := range cases {
		b := Budget{Amount: "1", Currency: "USD", Period: c.period}
		name, start, end := b.Window(c.at)
		if name != c.name || !start.Equal(c.start) || !end.Equal(c.end) {
			t.Errorf("%s window at %v = %s [%v, %v), want %s [%v, %v)", c.period, c.at, name, start, end, c.name, c.start, c.end)
		}
	}
}
