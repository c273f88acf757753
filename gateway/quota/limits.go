package quota

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/llmgw/llmgw/api/money"
	"github.com/llmgw/llmgw/api/snapshot"
)

// ErrGroupMissing is returned when the key names a budget group the snapshot does not carry.
// Its requests are refused (fail closed): a deleted or invalid group must
// not lift the limits it stood for.
var ErrGroupMissing = errors.New("quota: the key's budget group does not exist")

// Unit is what a limit counts.
type Unit int

const (
	// Tokens counts input plus output tokens.
	Tokens Unit = iota + 1
	// Money counts pico-units of the snapshot's currency (money.Picos).
	Money
)

// Scope says whose limit it is.
type Scope int

// The scopes a limit can have: one key, or a budget group of keys.
const (
	ScopeKey Scope = iota + 1
	ScopeGroup
)

// Need is one limit of a Plan with what the gateway needs to explain a
// refusal, to settle it, and to find the limits its headers report (see
// Plan.Find).
type Need struct {
	Unit  Unit
	Scope Scope
	// Budget is set on the Window of a configured budget (Unit Money); the
	// other spend counters of a plan are Tallies, which never refuse.
	Budget bool
}

// The plan entries rate-limit headers report, for Plan.Find.
var (
	KeyTokens   = Need{Unit: Tokens, Scope: ScopeKey}
	GroupTokens = Need{Unit: Tokens, Scope: ScopeGroup}
	KeyBudget   = Need{Unit: Money, Scope: ScopeKey, Budget: true}
	GroupBudget = Need{Unit: Money, Scope: ScopeGroup, Budget: true}
)

// Plan is what one chat request reserves: Limits for Store.Reserve, and
// per limit (same index) its unit and scope.
type Plan struct {
	Limits []Limit
	Needs  []Need
	// Tokens and Cost are the estimates reserved.
	Tokens int64
	Cost   money.Picos
}

// Find is the index of the plan's limit with need n, -1 when it has none:
// KeyTokens (the key's tokens-per-minute bucket), GroupTokens, KeyBudget
// (the key's budget window), GroupBudget. The same index in a Decision's
// States is that counter after the Reserve.
func (p *Plan) Find(n Need) int {
	for i, m := range p.Needs {
		if m == n {
			return i
		}
	}
	return -1
}

// Empty says that the request has no token limit or budget to reserve in.
func (p *Plan) Empty() bool { return len(p.Limits) == 0 }

// Actual is the settlement of the plan for a request that used tokens and
// cost cost: one value per limit, in the plan's order.
func (p *Plan) Actual(tokens int64, cost money.Picos) []int64 {
	out := make([]int64, len(p.Needs))
	for i, n := range p.Needs {
		if n.Unit == Tokens {
			out[i] = max(tokens, 0)
		} else {
			out[i] = max(int64(cost), 0)
		}
	}
	return out
}

// Request is what admission knows about a chat request.
type Request struct {
	Key   *snapshot.Key
	Alias *snapshot.Alias
	// InputTokens is the gateway's count of the prompt.
	InputTokens int64
	// MaxTokens is the request's max_tokens (or max_completion_tokens); nil:
	// the snapshot's Limits.DefaultMaxTokens.
	MaxTokens *int
	// At is when the request started: it picks the budget period and the
	// prices.
	At time.Time
}

// Counter names. They carry key ids and group names only, never a secret,
// and a budget's window, so that a new period is a new counter.
func rpmCounter(keyID string) string       { return "k/" + keyID + "/rpm" }
func keyCounter(keyID, what string) string { return "k/" + keyID + "/" + what }
func groupCounter(g, what string) string   { return "g/" + g + "/" + what }

// RateLimit is the key's requests-per-minute bucket: Burst requests, refilled
// at RPM a minute; each request takes one for good (Reserve with an empty
// id).
func RateLimit(k *snapshot.Key) Limit {
	rpm, burst := max(k.RateLimit.RPM, 1), max(k.RateLimit.Burst, 1)
	return Limit{
		Counter:  rpmCounter(k.ID),
		Kind:     Bucket,
		Capacity: int64(burst),
		Period:   time.Duration(int64(burst) * int64(time.Minute) / int64(rpm)),
		Amount:   1,
	}
}

// Build decides what req reserves: the key's and its group's tokens per
// minute, whichever are configured, and their spend of the day and of the
// month.
//
// Tokens reserved are the input tokens plus max_tokens (or the default); a
// request larger than a whole token bucket reserves the bucket's capacity,
// so it waits for a full bucket instead of never fitting, and its use beyond
// that is taken at Settle (the bucket then refuses until it has refilled).
//
// Spend: when at least one of the alias's routes (primary and allowed
// fallbacks) is priced at req.At, the plan holds, for the key and for its
// group if it has one, the spend counter of the UTC day and of the UTC
// month: the one of a configured budget's period as a Window of the
// budget's amount, the other (both, without a budget) as a Tally, which
// only counts. So spend is counted whether or not a budget exists, and a
// budget added later in a period, or moved from a month to a day, starts
// from what was already spent (a Tally and a Window of one name are one
// counter). The names are the budget counters' ("k/<id>/budget/<window>",
// "g/<name>/budget/<window>"), so a shared store's budget counters stay
// valid. An alias with no priced route costs nothing: it tallies nothing,
// and only a configured budget's Window is reserved (with 0, so that an
// overdrawn budget still refuses).
//
// The cost reserved is the most the request can cost on any route the
// alias may take at the price of req.At. A budget never lends: a request
// whose possible cost does not fit what is left is refused. Settle charges
// the real cost, even above the reservation (a provider that reports more
// output than max_tokens): the Window then goes over its capacity and
// refuses for the rest of its period (see Store.Settle).
func Build(c *snapshot.Compiled, req Request) (Plan, error) {
	k := req.Key
	var g *snapshot.Group
	if k.Group != "" {
		var ok bool
		if g, ok = c.Group(k.Group); !ok {
			return Plan{}, ErrGroupMissing
		}
	}
	out := int64(c.Limits().DefaultMaxTokens)
	if req.MaxTokens != nil {
		out = int64(*req.MaxTokens)
	}
	cost, priced := worstCost(c, req.Alias, req.InputTokens, out, req.At)
	hasTPM := k.TokensPerMinute > 0 || (g != nil && g.TokensPerMinute > 0)
	hasBudget := k.Budget != nil || (g != nil && g.Budget != nil)
	if !hasTPM && !hasBudget && !priced {
		return Plan{}, nil
	}
	p := Plan{Tokens: req.InputTokens + out, Cost: cost}
	addTPM := func(counter string, tpm int64, scope Scope) {
		if tpm <= 0 {
			return
		}
		p.Limits = append(p.Limits, Limit{Counter: counter, Kind: Bucket, Capacity: tpm, Period: time.Minute, Amount: min(p.Tokens, tpm)})
		p.Needs = append(p.Needs, Need{Unit: Tokens, Scope: scope})
	}
	addSpend := func(id string, scope Scope, b *snapshot.Budget) error {
		var capacity money.Picos
		if b != nil {
			var err error
			if capacity, err = b.Limit(); err != nil {
				return fmt.Errorf("quota: budget of %s: %w", spendPrefix(id, scope == ScopeGroup), err)
			}
		}
		day, month := SpendWindows(id, scope == ScopeGroup, req.At)
		for _, w := range []struct {
			SpendWindow
			period string
		}{{day, snapshot.PeriodDay}, {month, snapshot.PeriodMonth}} {
			switch {
			case b != nil && budgetPeriod(b) == w.period:
				p.Limits = append(p.Limits, Limit{Counter: w.Counter, Kind: Window, Capacity: int64(capacity), End: w.End, Amount: int64(p.Cost)})
				p.Needs = append(p.Needs, Need{Unit: Money, Scope: scope, Budget: true})
			case priced:
				p.Limits = append(p.Limits, Limit{Counter: w.Counter, Kind: Tally, End: w.End, Amount: min(int64(p.Cost), maxTally)})
				p.Needs = append(p.Needs, Need{Unit: Money, Scope: scope})
			}
		}
		return nil
	}
	addTPM(keyCounter(k.ID, "tpm"), k.TokensPerMinute, ScopeKey)
	if err := addSpend(k.ID, ScopeKey, k.Budget); err != nil {
		return Plan{}, err
	}
	if g != nil {
		addTPM(groupCounter(g.Name, "tpm"), g.TokensPerMinute, ScopeGroup)
		if err := addSpend(g.Name, ScopeGroup, g.Budget); err != nil {
			return Plan{}, err
		}
	}
	return p, nil
}

// maxTally bounds what a Tally reserves (2^53 pico-units: 9,007 units of
// the currency, beyond any real request). A Window refuses a saturated,
// absurd estimate (worstCost); a Tally would take it, and a few of them
// would overflow the counter (Redis refuses an INCRBY past int64, which the
// failover would take for an outage). Settle still charges the real cost.
const maxTally = 1 << 53

// budgetPeriod is the period snapshot.Budget.Window uses: a day, or else a
// month.
func budgetPeriod(b *snapshot.Budget) string {
	if b.Period == snapshot.PeriodDay {
		return snapshot.PeriodDay
	}
	return snapshot.PeriodMonth
}

// worstCost is the most input+output tokens can cost on any of the alias's
// routes, and whether any route is priced at at; it saturates rather than
// wrap, so an absurd price refuses the request instead of admitting it for
// free.
func worstCost(c *snapshot.Compiled, a *snapshot.Alias, input, output int64, at time.Time) (money.Picos, bool) {
	var worst money.Picos
	priced := false
	routes := append([]snapshot.Route{a.Primary}, a.AllowedFallbacks()...)
	for _, r := range routes {
		price, ok := c.PriceFor(r.Provider, r.Model, at)
		if !ok {
			continue
		}
		priced = true
		cost, err := money.WorstCase(input, output, price)
		if err != nil {
			return money.Picos(math.MaxInt64), true
		}
		worst = max(worst, cost)
	}
	return worst, priced
}

// SpendWindow is one spend counter of a key or group: its name and the
// UTC period it counts, [Start, End).
type SpendWindow struct {
	Counter    string
	Start, End time.Time
}

// SpendWindows are the spend counters of a key (or, with group set, a
// group) for the UTC day and the UTC month that contain at: what Build
// reserves in (as a budget's Window or as a Tally) and what seeding from
// the ledger fills, for every key and group whether or not it has a
// budget.
func SpendWindows(id string, group bool, at time.Time) (day, month SpendWindow) {
	prefix := spendPrefix(id, group)
	for _, w := range []struct {
		into   *SpendWindow
		period string
	}{{&day, snapshot.PeriodDay}, {&month, snapshot.PeriodMonth}} {
		name, start, end := (&snapshot.Budget{Period: w.period}).Window(at)
		*w.into = SpendWindow{Counter: prefix + "/" + name, Start: start, End: end}
	}
	return day, month
}

// spendPrefix is the spend counters' name without the window: the budget
// counters' names, so a store's existing budget counters stay valid.
func spendPrefix(id string, group bool) string {
	if group {
		return groupCounter(id, "budget")
	}
	return keyCounter(id, "budget")
}
