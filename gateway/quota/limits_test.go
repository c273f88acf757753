package quota

import (
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/llmgw/llmgw/api/money"
	"github.com/llmgw/llmgw/api/snapshot"
)

func TestRateLimitLimit(t *testing.T) {
	cases := []struct {
		rpm, burst int
		period     time.Duration
	}{
		{60, 10, 10 * time.Second},
		{6000, 1000, 10 * time.Second},
		{1, 1, time.Minute},
		{7, 3, 3 * time.Minute / 7},
	}
	for _, c := range cases {
		l := RateLimit(&snapshot.Key{ID: "k1", RateLimit: snapshot.RateLimit{RPM: c.rpm, Burst: c.burst}})
		want := Limit{Counter: "k/k1/rpm", Kind: Bucket, Capacity: int64(c.burst), Period: c.period, Amount: 1}
		if l != want {
			t.Errorf("rpm %d burst %d: %+v, want %+v", c.rpm, c.burst, l, want)
		}
	}
}

// quotaSnapshot: alias "chat" over alpha/big (fallback beta/small), priced
// so that beta is the more expensive on output; key "k" in group "team".
func quotaSnapshot(mutate func(*snapshot.Snapshot)) *snapshot.Compiled {
	from := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	s := &snapshot.Snapshot{
		Providers: []snapshot.Provider{
			{Name: "alpha", Protocol: snapshot.ProtocolOpenAI, BaseURL: "http://a", Prices: []snapshot.Price{
				{Model: "big", InputPerMillion: "3", CachedInputPerMillion: "1", OutputPerMillion: "10"},
				// From December on, alpha is the expensive one.
				{Model: "big", InputPerMillion: "3", OutputPerMillion: "100", EffectiveFrom: &from},
			}},
			{Name: "beta", Protocol: snapshot.ProtocolAnthropic, BaseURL: "http://b", Prices: []snapshot.Price{
				{Model: "small", InputPerMillion: "4", OutputPerMillion: "10", ReasoningPerMillion: "20"},
			}},
			{Name: "gamma", Protocol: snapshot.ProtocolOpenAI, BaseURL: "http://c"},
		},
		Aliases: []snapshot.Alias{
			{Name: "chat", Primary: snapshot.Route{Provider: "alpha", Model: "big"}, Fallbacks: []snapshot.Route{{Provider: "beta", Model: "small"}}},
			{Name: "free", Primary: snapshot.Route{Provider: "gamma", Model: "any"}},
		},
		Keys: []snapshot.Key{{ID: "k", Prefix: "lgw_keyaaaaaaa", Hash: "sha256:1182f96fbcb6f5113c26c1ba36783f43a446dc772e4e8e066cdc2325beee24eb",
			Models: []string{"*"}}},
		Limits: snapshot.Limits{DefaultMaxTokens: 1000},
	}
	if mutate != nil {
		mutate(s)
	}
	if _, err := snapshot.Encode(s); err != nil {
		panic(err)
	}
	return snapshot.Compile(s)
}

func TestBuild(t *testing.T) {
	nov := time.Date(2026, 11, 30, 23, 0, 0, 0, time.UTC)
	dec := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	usd := func(s string) int64 { p, _ := money.ParseAmount(s); return int64(p) }
	five := 5
	withKey := func(f func(k *snapshot.Key)) func(*snapshot.Snapshot) {
		return func(s *snapshot.Snapshot) { f(&s.Keys[0]) }
	}
	cases := []struct {
		name   string
		mutate func(*snapshot.Snapshot)
		alias  string
		max    *int
		at     time.Time
		want   []Limit
		needs  []Need
		err    error
	}{
		{"no quota, nothing to reserve", nil, "chat", nil, nov, nil, nil, nil},
		{"key tpm, default max tokens", withKey(func(k *snapshot.Key) { k.TokensPerMinute = 10_000 }), "chat", nil, nov,
			[]Limit{{Counter: "k/k/tpm", Kind: Bucket, Capacity: 10_000, Period: time.Minute, Amount: 1200}},
			[]Need{{Tokens, ScopeKey}}, nil},
		{"request larger than the bucket takes the bucket", withKey(func(k *snapshot.Key) { k.TokensPerMinute = 500 }), "chat", nil, nov,
			[]Limit{{Counter: "k/k/tpm", Kind: Bucket, Capacity: 500, Period: time.Minute, Amount: 500}},
			[]Need{{Tokens, ScopeKey}}, nil},
		// 200 input × $4/M + 5 output × max($10, $20 reasoning)/M on beta
		// = 800 + 100 µ$; alpha: 200 × max($3, $1 cached) + 5 × $10 = 650 µ$:
		// the fallback is the worst case in November.
		{"key budget: worst route, max_tokens", withKey(func(k *snapshot.Key) {
			k.Budget = &snapshot.Budget{Amount: "2", Currency: "USD", Period: snapshot.PeriodDay}
		}), "chat", &five, nov,
			[]Limit{{Counter: "k/k/budget/2026-11-30", Kind: Window, Capacity: usd("2"), End: dec, Amount: usd("0.0009")}},
			[]Need{{Money, ScopeKey}}, nil},
		// In December alpha's new output price applies: 600 + 500 µ$.
		{"the price of the request's start", withKey(func(k *snapshot.Key) {
			k.Budget = &snapshot.Budget{Amount: "2", Currency: "USD", Period: snapshot.PeriodMonth}
		}), "chat", &five, dec,
			[]Limit{{Counter: "k/k/budget/2026-12", Kind: Window, Capacity: usd("2"), End: dec.AddDate(0, 1, 0), Amount: usd("0.0011")}},
			[]Need{{Money, ScopeKey}}, nil},
		{"unpriced alias reserves 0", withKey(func(k *snapshot.Key) {
			k.Budget = &snapshot.Budget{Amount: "2", Currency: "USD", Period: snapshot.PeriodMonth}
		}), "free", &five, nov,
			[]Limit{{Counter: "k/k/budget/2026-11", Kind: Window, Capacity: usd("2"), End: dec, Amount: 0}},
			[]Need{{Money, ScopeKey}}, nil},
		{"key and group, every limit", func(s *snapshot.Snapshot) {
			k := &s.Keys[0]
			k.TokensPerMinute, k.Group = 10_000, "team"
			k.Budget = &snapshot.Budget{Amount: "1", Currency: "USD", Period: snapshot.PeriodDay}
			s.Groups = []snapshot.Group{{Name: "team", TokensPerMinute: 50_000, Budget: &snapshot.Budget{Amount: "30", Currency: "USD"}}}
		}, "chat", &five, nov,
			[]Limit{
				{Counter: "k/k/tpm", Kind: Bucket, Capacity: 10_000, Period: time.Minute, Amount: 205},
				{Counter: "k/k/budget/2026-11-30", Kind: Window, Capacity: usd("1"), End: dec, Amount: usd("0.0009")},
				{Counter: "g/team/tpm", Kind: Bucket, Capacity: 50_000, Period: time.Minute, Amount: 205},
				{Counter: "g/team/budget/2026-11", Kind: Window, Capacity: usd("30"), End: dec, Amount: usd("0.0009")},
			},
			[]Need{{Tokens, ScopeKey}, {Money, ScopeKey}, {Tokens, ScopeGroup}, {Money, ScopeGroup}}, nil},
		{"group only", func(s *snapshot.Snapshot) {
			s.Keys[0].Group = "team"
			s.Groups = []snapshot.Group{{Name: "team", TokensPerMinute: 50_000}}
		}, "chat", &five, nov,
			[]Limit{{Counter: "g/team/tpm", Kind: Bucket, Capacity: 50_000, Period: time.Minute, Amount: 205}},
			[]Need{{Tokens, ScopeGroup}}, nil},
		{"group without limits", func(s *snapshot.Snapshot) {
			s.Keys[0].Group = "team"
			s.Groups = []snapshot.Group{{Name: "team"}}
		}, "chat", &five, nov, nil, nil, nil},
		{"missing group fails closed", withKey(func(k *snapshot.Key) { k.Group = "gone" }), "chat", nil, nov, nil, nil, ErrGroupMissing},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cs := quotaSnapshot(c.mutate)
			k, _ := cs.KeyByPrefix("lgw_keyaaaaaaa")
			a, _ := cs.Alias(c.alias)
			p, err := Build(cs, Request{Key: k, Alias: a, InputTokens: 200, MaxTokens: c.max, At: c.at})
			if !errors.Is(err, c.err) {
				t.Fatalf("err %v, want %v", err, c.err)
			}
			if !reflect.DeepEqual(p.Limits, c.want) || !reflect.DeepEqual(p.Needs, c.needs) {
				t.Fatalf("limits\n%+v\nneeds %+v\nwant\n%+v\nneeds %+v", p.Limits, p.Needs, c.want, c.needs)
			}
			if p.Empty() != (len(c.want) == 0) {
				t.Fatal("Empty disagrees with the limits")
			}
		})
	}
}

func TestPlanActual(t *testing.T) {
	p := Plan{Needs: []Need{{Tokens, ScopeKey}, {Money, ScopeKey}, {Tokens, ScopeGroup}, {Money, ScopeGroup}}}
	if got := p.Actual(42, 7); !reflect.DeepEqual(got, []int64{42, 7, 42, 7}) {
		t.Fatalf("Actual = %v", got)
	}
	if got := p.Actual(-1, -1); !reflect.DeepEqual(got, []int64{0, 0, 0, 0}) {
		t.Fatalf("negative use settles as %v", got)
	}
}

// An absurd price saturates the estimate: the budget refuses the request
// instead of an overflow admitting it for free.
func TestWorstCostSaturates(t *testing.T) {
	cs := quotaSnapshot(func(s *snapshot.Snapshot) {
		s.Providers[0].Prices = []snapshot.Price{{Model: "big", InputPerMillion: "999999999", OutputPerMillion: "999999999"}}
		s.Keys[0].Budget = &snapshot.Budget{Amount: "9223372", Currency: "USD"}
	})
	k, _ := cs.KeyByPrefix("lgw_keyaaaaaaa")
	a, _ := cs.Alias("chat")
	max := 1 << 20
	p, err := Build(cs, Request{Key: k, Alias: a, InputTokens: 1 << 20, MaxTokens: &max, At: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	if p.Limits[0].Amount <= p.Limits[0].Capacity {
		t.Fatalf("estimate %d fits the largest budget", p.Limits[0].Amount)
	}
}

func TestBudgetWindowCounter(t *testing.T) {
	b := &snapshot.Budget{Amount: "1", Currency: "USD", Period: snapshot.PeriodMonth}
	at := time.Date(2026, 11, 5, 1, 0, 0, 0, time.UTC)
	name, start, end := BudgetWindow("team", true, b, at)
	if name != "g/team/budget/2026-11" || !start.Equal(time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)) || !end.Equal(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)) {
		t.Fatalf("%s [%v, %v)", name, start, end)
	}
	if name, _, _ := BudgetWindow("k", false, b, at); name != "k/k/budget/2026-11" {
		t.Fatal(name)
	}
}
