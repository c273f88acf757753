package server

import (
	"net/http"
	"strconv"
	"time"

	"github.com/llmgw/llmgw/api/money"
	"github.com/llmgw/llmgw/gateway/quota"
)

// Limit headers: every answer to an authenticated model request (chat,
// embeddings, messages, responses) says where the key stands after its
// admission, as OpenAI's API does, so an SDK can slow down before it gets
// a 429. The counts come from the quota store's answer to the same call
// that admitted or refused the request, so they are right across replicas
// when the store is shared.
//
//   - x-ratelimit-{limit,remaining,reset}-requests: the key's request
//     bucket (limit is its burst, the bucket's size; it refills at the
//     key's requests per minute; reset is when it is full again);
//   - x-ratelimit-{limit,remaining,reset}-tokens: the tokens-per-minute
//     bucket, the key's or its group's whichever has less left, only when
//     one applies;
//   - x-llmgw-budget-remaining / x-llmgw-budget-reset: the budget with
//     less left (the key's or its group's) in the snapshot's currency, and
//     when its period ends; only when a budget applies.
//
// Resets are durations in OpenAI's spelling ("1s", "6m0s", "20ms").
const (
	hdrLimitRequests     = "X-Ratelimit-Limit-Requests"
	hdrRemainingRequests = "X-Ratelimit-Remaining-Requests"
	hdrResetRequests     = "X-Ratelimit-Reset-Requests"
	hdrLimitTokens       = "X-Ratelimit-Limit-Tokens"
	hdrRemainingTokens   = "X-Ratelimit-Remaining-Tokens"
	hdrResetTokens       = "X-Ratelimit-Reset-Tokens"
	hdrBudgetRemaining   = "X-Llmgw-Budget-Remaining"
	hdrBudgetReset       = "X-Llmgw-Budget-Reset"
)

// setRequestLimitHeaders writes the request bucket's state.
func setRequestLimitHeaders(h http.Header, st quota.State) {
	h[hdrLimitRequests] = []string{strconv.FormatInt(st.Limit, 10)}
	h[hdrRemainingRequests] = []string{strconv.FormatInt(st.Remaining, 10)}
	h[hdrResetRequests] = []string{resetString(st.Reset)}
}

// setQuotaLimitHeaders writes the token and budget headers from the plan's
// reservation answer d (nothing for what the plan has not).
func setQuotaLimitHeaders(h http.Header, plan *quota.Plan, d quota.Decision) {
	if st, ok := tightest(plan, d, quota.KeyTokens, quota.GroupTokens); ok {
		h[hdrLimitTokens] = []string{strconv.FormatInt(st.Limit, 10)}
		h[hdrRemainingTokens] = []string{strconv.FormatInt(st.Remaining, 10)}
		h[hdrResetTokens] = []string{resetString(st.Reset)}
	}
	if st, ok := tightest(plan, d, quota.KeyBudget, quota.GroupBudget); ok {
		h[hdrBudgetRemaining] = []string{money.Picos(st.Remaining).String()}
		h[hdrBudgetReset] = []string{resetString(st.Reset)}
	}
}

// tightest is the state, of the needs the plan has, with the least left.
func tightest(plan *quota.Plan, d quota.Decision, needs ...quota.Need) (quota.State, bool) {
	var out quota.State
	found := false
	for _, n := range needs {
		i := plan.Find(n)
		if i < 0 || i >= len(d.States) {
			continue
		}
		if st := d.States[i]; !found || st.Remaining < out.Remaining {
			out, found = st, true
		}
	}
	return out, found
}

// resetString spells a reset the way OpenAI's headers do, to the
// millisecond (a whole second and above to the second).
func resetString(d time.Duration) string {
	if d >= time.Second {
		return d.Round(time.Second).String()
	}
	return d.Round(time.Millisecond).String()
}
