package server

// Quotas on the chat path (gateway/quota): the key's requests per minute
// right after authentication, then, once the model is authorized and before
// any provider is called, a reservation of the request's largest possible
// use in the key's and its group's tokens per minute and budgets. The
// reservation is settled to the record's real tokens and cost when the
// record is finalized, whatever the path (finalize runs exactly once).

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/llmgw/llmgw/api/money"
	"github.com/llmgw/llmgw/api/snapshot"
	"github.com/llmgw/llmgw/gateway/quota"
	"github.com/llmgw/llmgw/gateway/usage"
)

// typeInsufficientQuota is the error type of a gateway 429 for a spent
// budget (money), OpenAI's type for an exhausted quota.
const typeInsufficientQuota = "insufficient_quota"

// quotaStoreTimeout bounds one store call on the request path, detached
// from the client; the store itself bounds its network calls more tightly.
const quotaStoreTimeout = 5 * time.Second

// reservationGrace is how much longer than its alias's total timeout a
// reservation is kept before the store counts it as used: the request has
// ended by then, so only a replica that died without settling leaves one.
const reservationGrace = time.Minute

// quotaHold is a reservation taken for one request, settled at finalize.
type quotaHold struct {
	plan quota.Plan
	// countOnly: the plan holds only spend tallies (a priced request of a
	// key without token limits or budgets). Nothing can refuse it, so
	// nothing was reserved: its real cost is added when it ends, in one
	// store call, and the request reaches its provider without waiting for
	// the store.
	countOnly bool
}

// errQuotaStore is the answer when the quota store refuses to answer (a
// shared store that is down, configured to fail closed).
func errQuotaStore() *apiError {
	return &apiError{status: http.StatusServiceUnavailable, typ: typeOverloaded, code: "quota_store_unavailable",
		message: "the gateway cannot check this key's limits right now; retry shortly", retryAfter: time.Second}
}

// checkRate takes one request from the key's requests-per-minute bucket; the
// token is never given back. Store calls outlive a client that hangs up
// (bounded by quotaStoreTimeout): the request then ends as canceled, with its
// reservation settled, rather than as a store failure.
func (x *exchange) checkRate(key *snapshot.Key) *apiError {
	s := x.s
	ctx, cancel := x.detached(quotaStoreTimeout)
	defer cancel()
	d, err := s.quota.Reserve(ctx, "", []quota.Limit{quota.RateLimit(key)}, 0, s.now())
	if err != nil {
		s.log.Error("quota store: rate limit not checked", "key_id", key.ID, "err", err)
		return errQuotaStore()
	}
	if len(d.States) == 1 {
		setRequestLimitHeaders(x.w.Header(), d.States[0])
	}
	if !d.Allowed {
		return &apiError{status: http.StatusTooManyRequests, typ: typeRateLimit, code: "rate_limit_exceeded",
			message: "this key's request rate limit is exhausted; retry after the indicated delay", retryAfter: d.RetryAfter}
	}
	return nil
}

// admit reserves the request's largest possible use in every token limit
// and budget of its key and group, all or nothing. A refusal is 429 and no
// provider is called.
func (x *exchange) admit(key *snapshot.Key) *apiError {
	s := x.s
	plan, err := quota.Build(x.st.idx, quota.Request{Key: key, Alias: x.alias, InputTokens: int64(x.p.inputTokens),
		MaxTokens: x.p.maxTokens, At: x.start})
	switch {
	case errors.Is(err, quota.ErrGroupMissing):
		return &apiError{status: http.StatusForbidden, typ: typePermission, code: "budget_group_missing",
			message: "this key belongs to a budget group that does not exist; its requests are refused until the group is created or the key leaves it"}
	case err != nil:
		s.log.Error("quota: limits not built", "request_id", x.rec.RequestID, "key_id", key.ID, "err", err)
		return &apiError{status: http.StatusInternalServerError, typ: typeInternal, code: "internal_error",
			message: "the gateway could not check this key's limits"}
	case plan.Empty():
		return nil
	case countOnly(&plan):
		x.hold = &quotaHold{plan: plan, countOnly: true}
		return nil
	}
	ctx, cancel := x.detached(quotaStoreTimeout)
	defer cancel()
	ttl := ms(x.alias.Timeouts.TotalMs) + reservationGrace
	d, err := s.quota.Reserve(ctx, x.rec.RequestID, plan.Limits, ttl, s.now())
	if err != nil {
		s.log.Error("quota store: reservation failed", "request_id", x.rec.RequestID, "key_id", key.ID, "err", err)
		return errQuotaStore()
	}
	setQuotaLimitHeaders(x.w.Header(), &plan, d)
	if !d.Allowed {
		return refusal(plan.Needs[d.Denied], key, d.RetryAfter)
	}
	x.hold = &quotaHold{plan: plan}
	return nil
}

func refusal(n quota.Need, key *snapshot.Key, retryAfter time.Duration) *apiError {
	whose := "this key's"
	if n.Scope == quota.ScopeGroup {
		whose = fmt.Sprintf("budget group %q's", key.Group)
	}
	if n.Unit == quota.Tokens {
		return &apiError{status: http.StatusTooManyRequests, typ: typeRateLimit, code: "tokens_per_minute_exceeded",
			retryAfter: retryAfter,
			message:    whose + " tokens-per-minute limit has no room for this request (its input tokens plus max_tokens); retry after the indicated delay or ask for fewer tokens"}
	}
	return &apiError{status: http.StatusTooManyRequests, typ: typeInsufficientQuota, code: "budget_exceeded",
		message:    whose + " budget for this period has no room for what this request may cost; it renews at the indicated time",
		retryAfter: retryAfter}
}

// settleQuota hands back what the request reserved but did not use, from
// the final record (called from finalize, after the record is priced).
func (x *exchange) settleQuota() {
	h := x.hold
	if h == nil {
		return
	}
	x.hold = nil
	tokens := int64(x.rec.InputTokens) + int64(x.rec.OutputTokens)
	ctx, cancel := x.detached(quotaStoreTimeout)
	defer cancel()
	if h.countOnly {
		x.countSpend(ctx, h.plan.Limits, h.plan.Actual(tokens, x.rec.Cost))
		return
	}
	if err := x.s.quota.Settle(ctx, x.rec.RequestID, h.plan.Actual(tokens, x.rec.Cost), x.s.now()); err != nil {
		// The reservation stays taken until its ttl: the key is limited
		// more than it should be for a while, never less.
		x.s.log.Error("quota store: settlement failed", "request_id", x.rec.RequestID, "key_id", x.rec.KeyID, "err", err)
	}
}

// countOnly says that no limit of plan can refuse: its limits are all
// spend tallies.
func countOnly(plan *quota.Plan) bool {
	for _, l := range plan.Limits {
		if l.Kind != quota.Tally {
			return false
		}
	}
	return true
}

// countSpend adds a finished request's real cost to its spend tallies, for
// good (a Reserve without an id), in one store call.
func (x *exchange) countSpend(ctx context.Context, tallies []quota.Limit, actual []int64) {
	if len(actual) == 0 || x.rec.Cost <= 0 {
		return
	}
	limits := make([]quota.Limit, len(tallies))
	for i, l := range tallies {
		l.Amount = actual[i]
		limits[i] = l
	}
	if _, err := x.s.quota.Reserve(ctx, "", limits, 0, x.s.now()); err != nil {
		// The spend is in the ledger; a budget added later this period
		// starts without it on this store until the next restart re-seeds
		// it (memory) — limited less than it should be, never refused wrongly.
		x.s.log.Error("quota store: spend not counted", "request_id", x.rec.RequestID, "key_id", x.rec.KeyID, "err", err)
	}
}

// seeder is a store that starts empty with every process (the memory
// store): spend already made this period is put back from the ledger.
type seeder interface {
	Seed(counter string, used int64, end time.Time)
}

// spendSeeds is what the ledger says was spent, before this process
// started, in the day and the month it started in: per spend counter
// (quota.SpendWindows, of every key and every group), per currency.
type spendSeeds struct {
	counters map[string]spendSeed
}

type spendSeed struct {
	end   time.Time
	costs map[string]money.Picos // currency → cost
}

// RecoverQuotas runs once at start, before the first request: it releases
// the reservations of requests the ledger recovered as interrupted (a shared
// store still holds them; a fresh memory store ignores them), and, for a
// store that starts empty, loads the spend of the current day and month so
// that budgets survive a restart (applied with each snapshot, see
// seedQuotas).
func (s *Server) RecoverQuotas(ctx context.Context, interrupted []string) error {
	now := s.now()
	var errs []error
	for _, id := range interrupted {
		if err := s.quota.Settle(ctx, id, nil, now); err != nil {
			errs = append(errs, fmt.Errorf("releasing the reservation of interrupted request %s: %w", id, err))
			break // the store is down: the rest would fail too; their ttl releases them
		}
	}
	if _, ok := s.quota.(seeder); ok {
		seeds, err := s.readSpendSeeds(ctx, now)
		if err != nil {
			return errors.Join(append(errs, err)...)
		}
		s.seeds.Store(seeds)
		if st := s.state.Load(); st != nil {
			s.seedQuotas(st.snap)
		}
	}
	return errors.Join(errs...)
}

// readSpendSeeds reads from the ledger what every key spent, and what
// every group's members spent as its members (usage.Record.Group), in the
// day and the month of now: the spend counters a restarted memory store
// must start from. Every key and group is seeded whether or not it has a
// budget, so a budget added later counts the spend made before it.
func (s *Server) readSpendSeeds(ctx context.Context, now time.Time) (*spendSeeds, error) {
	seeds := &spendSeeds{counters: map[string]spendSeed{}}
	for _, by := range []struct {
		group bool
		read  func(context.Context, time.Time) (map[string]usage.Totals, error)
	}{{false, s.ledger.SpendSince}, {true, s.ledger.GroupSpendSince}} {
		windows := func(id string) [2]quota.SpendWindow {
			day, month := quota.SpendWindows(id, by.group, now)
			return [2]quota.SpendWindow{day, month}
		}
		for i, w := range windows("") {
			spend, err := by.read(ctx, w.Start)
			if err != nil {
				return nil, fmt.Errorf("reading this period's spend from the ledger: %w", err)
			}
			for id, t := range spend {
				if len(t.Costs) > 0 {
					seeds.counters[windows(id)[i].Counter] = spendSeed{end: w.End, costs: t.Costs}
				}
			}
		}
	}
	return seeds, nil
}

// seedQuotas raises every spend counter to at least what the ledger said
// was spent in it before this process started, in snap's currency. Seeding
// is idempotent (a counter's use only ever rises to the seed; what this
// process spent since is on top of it), so it runs with every applied
// snapshot: the first one names the currency. Seeds of windows that have
// ended are dropped.
func (s *Server) seedQuotas(snap *snapshot.Snapshot) {
	seeds := s.seeds.Load()
	sd, ok := s.quota.(seeder)
	if seeds == nil || !ok {
		return
	}
	now := s.now()
	currency := cmp.Or(snap.Currency(), snapshot.DefaultCurrency)
	for counter, seed := range seeds.counters {
		if !now.Before(seed.end) {
			continue
		}
		if c := seed.costs[currency]; c > 0 {
			sd.Seed(counter, int64(c), seed.end)
		}
	}
}
