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
	dec2, jan := dec.AddDate(0, 0, 1), dec.AddDate(0, 1, 0)
	usd := func(s string) int64 { p, _ := money.ParseAmount(s); return int64(p) }
	five := 5
	withKey := func(f func(k *snapshot.Key)) func(*snapshot.Snapshot) {
		return func(s *snapshot.Snapshot) { f(&s.Keys[0]) }
	}
	inTeam := func(g snapshot.Group) func(*snapshot.Snapshot) {
		return func(s *snapshot.Snapshot) {
			s.Keys[0].Group = g.Name
			s.Groups = []snapshot.Group{g}
		}
	}
	tally := func(counter string, end time.Time, amount int64) Limit {
		return Limit{Counter: counter, Kind: Tally, End: end, Amount: amount}
	}
	// 200 input × $4/M + 5 output × max($10, $20 reasoning)/M on beta
	// = 800 + 100 µ$; alpha: 200 × max($3, $1 cached) + 5 × $10 = 650 µ$:
	// the fallback is the worst case in November.
	novFive := usd("0.0009")
	// The default 1000 output tokens: beta 800 + 20,000 µ$, alpha 600 +
	// 10,000 µ$.
	novDefault := usd("0.0208")
	keyMoney, groupMoney := Need{Unit: Money, Scope: ScopeKey}, Need{Unit: Money, Scope: ScopeGroup}
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
		{"no budget, priced alias: the day and the month are tallied", nil, "chat", nil, nov,
			[]Limit{tally("k/k/budget/2026-11-30", dec, novDefault), tally("k/k/budget/2026-11", dec, novDefault)},
			[]Need{keyMoney, keyMoney}, nil},
		{"unpriced alias without limits: nothing to reserve", nil, "free", nil, nov, nil, nil, nil},
		{"unpriced alias with key tpm: the tokens only", withKey(func(k *snapshot.Key) { k.TokensPerMinute = 10_000 }), "free", nil, nov,
			[]Limit{{Counter: "k/k/tpm", Kind: Bucket, Capacity: 10_000, Period: time.Minute, Amount: 1200}},
			[]Need{KeyTokens}, nil},
		{"request larger than the bucket takes the bucket", withKey(func(k *snapshot.Key) { k.TokensPerMinute = 500 }), "free", nil, nov,
			[]Limit{{Counter: "k/k/tpm", Kind: Bucket, Capacity: 500, Period: time.Minute, Amount: 500}},
			[]Need{KeyTokens}, nil},
		{"key tpm on a priced alias: tokens and tallies", withKey(func(k *snapshot.Key) { k.TokensPerMinute = 10_000 }), "chat", &five, nov,
			[]Limit{
				{Counter: "k/k/tpm", Kind: Bucket, Capacity: 10_000, Period: time.Minute, Amount: 205},
				tally("k/k/budget/2026-11-30", dec, novFive), tally("k/k/budget/2026-11", dec, novFive),
			},
			[]Need{KeyTokens, keyMoney, keyMoney}, nil},
		{"day budget: the day's window, the month tallied", withKey(func(k *snapshot.Key) {
			k.Budget = &snapshot.Budget{Amount: "2", Currency: "USD", Period: snapshot.PeriodDay}
		}), "chat", &five, nov,
			[]Limit{
				{Counter: "k/k/budget/2026-11-30", Kind: Window, Capacity: usd("2"), End: dec, Amount: novFive},
				tally("k/k/budget/2026-11", dec, novFive),
			},
			[]Need{KeyBudget, keyMoney}, nil},
		// In December alpha's new output price applies: 600 + 500 µ$.
		{"month budget at the price of the request's start: the day tallied", withKey(func(k *snapshot.Key) {
			k.Budget = &snapshot.Budget{Amount: "2", Currency: "USD", Period: snapshot.PeriodMonth}
		}), "chat", &five, dec,
			[]Limit{
				tally("k/k/budget/2026-12-01", dec2, usd("0.0011")),
				{Counter: "k/k/budget/2026-12", Kind: Window, Capacity: usd("2"), End: jan, Amount: usd("0.0011")},
			},
			[]Need{keyMoney, KeyBudget}, nil},
		{"unpriced alias: the budget reserves 0, nothing is tallied", withKey(func(k *snapshot.Key) {
			k.Budget = &snapshot.Budget{Amount: "2", Currency: "USD", Period: snapshot.PeriodMonth}
		}), "free", &five, nov,
			[]Limit{{Counter: "k/k/budget/2026-11", Kind: Window, Capacity: usd("2"), End: dec, Amount: 0}},
			[]Need{KeyBudget}, nil},
		{"key and group, every limit", func(s *snapshot.Snapshot) {
			k := &s.Keys[0]
			k.TokensPerMinute, k.Group = 10_000, "team"
			k.Budget = &snapshot.Budget{Amount: "1", Currency: "USD", Period: snapshot.PeriodDay}
			s.Groups = []snapshot.Group{{Name: "team", TokensPerMinute: 50_000, Budget: &snapshot.Budget{Amount: "30", Currency: "USD"}}}
		}, "chat", &five, nov,
			[]Limit{
				{Counter: "k/k/tpm", Kind: Bucket, Capacity: 10_000, Period: time.Minute, Amount: 205},
				{Counter: "k/k/budget/2026-11-30", Kind: Window, Capacity: usd("1"), End: dec, Amount: novFive},
				tally("k/k/budget/2026-11", dec, novFive),
				{Counter: "g/team/tpm", Kind: Bucket, Capacity: 50_000, Period: time.Minute, Amount: 205},
				tally("g/team/budget/2026-11-30", dec, novFive),
				{Counter: "g/team/budget/2026-11", Kind: Window, Capacity: usd("30"), End: dec, Amount: novFive},
			},
			[]Need{KeyTokens, KeyBudget, keyMoney, GroupTokens, groupMoney, GroupBudget}, nil},
		{"group tpm without a budget: the group's spend is tallied too", inTeam(snapshot.Group{Name: "team", TokensPerMinute: 50_000}), "chat", &five, nov,
			[]Limit{
				tally("k/k/budget/2026-11-30", dec, novFive), tally("k/k/budget/2026-11", dec, novFive),
				{Counter: "g/team/tpm", Kind: Bucket, Capacity: 50_000, Period: time.Minute, Amount: 205},
				tally("g/team/budget/2026-11-30", dec, novFive), tally("g/team/budget/2026-11", dec, novFive),
			},
			[]Need{keyMoney, keyMoney, GroupTokens, groupMoney, groupMoney}, nil},
		{"group without limits: key and group tallies", inTeam(snapshot.Group{Name: "team"}), "chat", &five, nov,
			[]Limit{
				tally("k/k/budget/2026-11-30", dec, novFive), tally("k/k/budget/2026-11", dec, novFive),
				tally("g/team/budget/2026-11-30", dec, novFive), tally("g/team/budget/2026-11", dec, novFive),
			},
			[]Need{keyMoney, keyMoney, groupMoney, groupMoney}, nil},
		{"group without limits, unpriced alias: nothing", inTeam(snapshot.Group{Name: "team"}), "free", &five, nov, nil, nil, nil},
		{"group tpm only, unpriced alias: the group's tokens only", inTeam(snapshot.Group{Name: "team", TokensPerMinute: 50_000}), "free", &five, nov,
			[]Limit{{Counter: "g/team/tpm", Kind: Bucket, Capacity: 50_000, Period: time.Minute, Amount: 205}},
			[]Need{GroupTokens}, nil},
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
			// Every spend counter is named as SpendWindows names it.
			for i, l := range p.Limits {
				if l.Kind == Bucket {
					continue
				}
				id, group := k.ID, p.Needs[i].Scope == ScopeGroup
				if group {
					id = k.Group
				}
				day, month := SpendWindows(id, group, c.at)
				if (l.Counter != day.Counter || !l.End.Equal(day.End)) && (l.Counter != month.Counter || !l.End.Equal(month.End)) {
					t.Errorf("limit %d, %s ending %v, is neither SpendWindow %+v nor %+v", i, l.Counter, l.End, day, month)
				}
			}
		})
	}
}

func TestPlanFind(t *testing.T) {
	p := Plan{Needs: []Need{KeyTokens, {Unit: Money, Scope: ScopeKey}, KeyBudget, GroupTokens, {Unit: Money, Scope: ScopeGroup}, {Unit: Money, Scope: ScopeGroup}}}
	for _, c := range []struct {
		n    Need
		want int
	}{{KeyTokens, 0}, {KeyBudget, 2}, {GroupTokens, 3}, {GroupBudget, -1}} {
		if got := p.Find(c.n); got != c.want {
			t.Errorf("Find(%+v) = %d, want %d", c.n, got, c.want)
		}
	}
	if got := (&Plan{}).Find(KeyTokens); got != -1 {
		t.Errorf("Find in an empty plan = %d", got)
	}
}

func TestPlanActual(t *testing.T) {
	p := Plan{Needs: []Need{KeyTokens, KeyBudget, {Unit: Money, Scope: ScopeKey}, GroupTokens, GroupBudget}}
	if got := p.Actual(42, 7); !reflect.DeepEqual(got, []int64{42, 7, 7, 42, 7}) {
		t.Fatalf("Actual = %v", got)
	}
	if got := p.Actual(-1, -1); !reflect.DeepEqual(got, []int64{0, 0, 0, 0, 0}) {
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
	b := p.Find(KeyBudget)
	if b < 0 || p.Limits[b].Amount <= p.Limits[b].Capacity {
		t.Fatalf("budget at %d of %+v: the estimate fits the largest budget", b, p.Limits)
	}
	// The day's tally reserves a bounded amount: several absurd estimates
	// must not overflow its counter.
	for i, l := range p.Limits {
		if l.Kind == Tally && (l.Amount != maxTally || p.Needs[i].Budget) {
			t.Fatalf("tally %d: %+v, need %+v; want Amount %d", i, l, p.Needs[i], int64(maxTally))
		}
	}
}

func TestSpendWindows(t *testing.T) {
	utc := func(y int, m time.Month, d int) time.Time { return time.Date(y, m, d, 0, 0, 0, 0, time.UTC) }
	// 23:30 on Dec 31 in UTC-2 is Jan 1 in UTC: the windows are UTC's.
	newYear := time.Date(2026, 12, 31, 23, 30, 0, 0, time.FixedZone("UTC-2", -2*3600))
	for _, c := range []struct {
		id         string
		group      bool
		at         time.Time
		day, month SpendWindow
	}{
		{"k1", false, time.Date(2026, 11, 5, 1, 0, 0, 0, time.UTC),
			SpendWindow{"k/k1/budget/2026-11-05", utc(2026, 11, 5), utc(2026, 11, 6)},
			SpendWindow{"k/k1/budget/2026-11", utc(2026, 11, 1), utc(2026, 12, 1)}},
		{"team", true, newYear,
			SpendWindow{"g/team/budget/2027-01-01", utc(2027, 1, 1), utc(2027, 1, 2)},
			SpendWindow{"g/team/budget/2027-01", utc(2027, 1, 1), utc(2027, 2, 1)}},
	} {
		day, month := SpendWindows(c.id, c.group, c.at)
		if day != c.day || month != c.month {
			t.Errorf("SpendWindows(%s, %v, %v) = %+v, %+v; want %+v, %+v", c.id, c.group, c.at, day, month, c.day, c.month)
		}
	}
}
