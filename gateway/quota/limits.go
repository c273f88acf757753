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
// refusal and to settle it.
type Need struct {
	Unit  Unit
	Scope Scope
}

// Plan is what one chat request reserves: Limits for Store.Reserve, and
// per limit (same index) its unit and scope.
type Plan struct {
	Limits []Limit
	Needs  []Need
	// Tokens and Cost are the estimates reserved.
	Tokens int64
	Cost   money.Picos
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
// minute and budget windows, whichever are configured.
//
// Tokens reserved are the input tokens plus max_tokens (or the default); a
// request larger than a whole token bucket reserves the bucket's capacity,
// so it waits for a full bucket instead of never fitting, and its use beyond
// that is taken at Settle (the bucket then refuses until it has refilled).
// The cost reserved is the most the request can cost on any route the alias
// may take (primary and allowed fallbacks) at the price of req.At; an
// unpriced route costs nothing. A budget never lends: a request whose
// possible cost does not fit what is left is refused.
func Build(c *snapshot.Compiled, req Request) (Plan, error) {
	k := req.Key
	var g *snapshot.Group
	if k.Group != "" {
		var ok bool
		if g, ok = c.Group(k.Group); !ok {
			return Plan{}, ErrGroupMissing
		}
	}
	hasTPM := k.TokensPerMinute > 0 || (g != nil && g.TokensPerMinute > 0)
	hasBudget := k.Budget != nil || (g != nil && g.Budget != nil)
	if !hasTPM && !hasBudget {
		return Plan{}, nil
	}
	out := int64(c.Limits().DefaultMaxTokens)
	if req.MaxTokens != nil {
		out = int64(*req.MaxTokens)
	}
	p := Plan{Tokens: req.InputTokens + out}
	if hasBudget {
		p.Cost = worstCost(c, req.Alias, req.InputTokens, out, req.At)
	}
	addTPM := func(counter string, tpm int64, scope Scope) {
		if tpm <= 0 {
			return
		}
		p.Limits = append(p.Limits, Limit{Counter: counter, Kind: Bucket, Capacity: tpm, Period: time.Minute, Amount: min(p.Tokens, tpm)})
		p.Needs = append(p.Needs, Need{Unit: Tokens, Scope: scope})
	}
	addBudget := func(counter string, b *snapshot.Budget, scope Scope) error {
		if b == nil {
			return nil
		}
		limit, err := b.Limit()
		if err != nil {
			return fmt.Errorf("quota: budget of %s: %w", counter, err)
		}
		window, _, end := b.Window(req.At)
		p.Limits = append(p.Limits, Limit{Counter: counter + "/" + window, Kind: Window, Capacity: int64(limit), End: end, Amount: int64(p.Cost)})
		p.Needs = append(p.Needs, Need{Unit: Money, Scope: scope})
		return nil
	}
	addTPM(keyCounter(k.ID, "tpm"), k.TokensPerMinute, ScopeKey)
	if err := addBudget(keyCounter(k.ID, "budget"), k.Budget, ScopeKey); err != nil {
		return Plan{}, err
	}
	if g != nil {
		addTPM(groupCounter(g.Name, "tpm"), g.TokensPerMinute, ScopeGroup)
		if err := addBudget(groupCounter(g.Name, "budget"), g.Budget, ScopeGroup); err != nil {
			return Plan{}, err
		}
	}
	return p, nil
}

// worstCost is the most input+output tokens can cost on any of the alias's
// routes; it saturates rather than wrap, so an absurd price refuses the
// request instead of admitting it for free.
func worstCost(c *snapshot.Compiled, a *snapshot.Alias, input, output int64, at time.Time) money.Picos {
	var worst money.Picos
	routes := append([]snapshot.Route{a.Primary}, a.AllowedFallbacks()...)
	for _, r := range routes {
		price, ok := c.PriceFor(r.Provider, r.Model, at)
		if !ok {
			continue
		}
		cost, err := money.WorstCase(input, output, price)
		if err != nil {
			return money.Picos(math.MaxInt64)
		}
		worst = max(worst, cost)
	}
	return worst
}

// BudgetWindow is the counter of a key's (or, with group set, a group's)
// budget in the window that contains at, and the window's start and end:
// what re-seeding from the ledger fills.
func BudgetWindow(id string, group bool, b *snapshot.Budget, at time.Time) (counter string, start, end time.Time) {
	window, start, end := b.Window(at)
	if group {
		return groupCounter(id, "budget") + "/" + window, start, end
	}
	return keyCounter(id, "budget") + "/" + window, start, end
}
