package controllers

import (
	"fmt"
	"strings"

	"github.com/llmgw/llmgw/api/snapshot"
	"github.com/llmgw/llmgw/api/v1alpha1"
)

// Budget groups and the quotas of keys. A BudgetGroup references nothing, so
// its ResolvedRefs is always True; a GatewayKey that names a group the
// snapshot does not carry (missing, or not accepted) stays in the snapshot
// with that name, and the gateways refuse its chat requests with 403
// budget_group_missing (fail closed: removing a group never lifts its
// limits). Its ResolvedRefs is False and its Ready False with the reason.

// GroupResult is a BudgetGroup's computed status.
type GroupResult struct {
	Result
	// Keys is how many GatewayKeys name the group.
	Keys int32 `json:"keys"`
}

// compileBudget copies a budget into the snapshot's form; the snapshot
// fills the defaults and validates it.
func compileBudget(b *v1alpha1.Budget) *snapshot.Budget {
	if b == nil {
		return nil
	}
	return &snapshot.Budget{Amount: b.Amount, Currency: b.Currency, Period: string(b.Period)}
}

// budgetMismatch says why a budget is refused ("" when it is not): it is
// not in the namespace's one currency, the prices' when anything is priced,
// else the oldest accepted budget's.
func (c *currencyOwner) budgetMismatch(b *snapshot.Budget) string {
	if b == nil || c.currency == "" || b.Currency == c.currency {
		return ""
	}
	owner := c.owner
	// A ProviderEndpoint's claim (prices.go) records its bare name; a
	// budget's claim names its kind.
	if owner == "" {
		owner = "the prices"
	} else if !strings.Contains(owner, " ") {
		owner = fmt.Sprintf("the prices of ProviderEndpoint %q", owner)
	}
	return fmt.Sprintf("budget.currency %s differs from %s (%s): a namespace's prices and budgets share one currency", b.Currency, c.currency, owner)
}

// claimBudget makes an accepted budget's currency the namespace's when
// nothing has claimed one yet; owner names the object ("BudgetGroup \"x\"").
func (c *currencyOwner) claimBudget(owner string, b *snapshot.Budget) {
	if b != nil && c.currency == "" {
		c.currency, c.owner = b.Currency, owner
	}
}

// compileGroup compiles bg, named id in the snapshot (objectID), with its
// labels named in ownerLabels as its owners.
func compileGroup(bg *v1alpha1.BudgetGroup, id string, ownerLabels []string, currency *currencyOwner) (snapshot.Group, GroupResult) {
	g := snapshot.Group{Name: id, TokensPerMinute: bg.Spec.TokensPerMinute, Budget: compileBudget(bg.Spec.Budget), Owners: ownersOf(bg.Labels, ownerLabels)}
	var res GroupResult
	res.Accepted = isTrue(v1alpha1.ReasonAccepted, "the group is valid")
	res.ResolvedRefs = isTrue(v1alpha1.ReasonResolvedRefs, "a group references nothing")
	trial := snapshot.Snapshot{Groups: []snapshot.Group{g}}
	trial.Normalize()
	if err := trial.Validate(); err != nil {
		res.Accepted = isFalse(v1alpha1.ReasonInvalidSpec, "%s", oneLine(err))
		return g, res
	}
	g = trial.Groups[0]
	if why := currency.budgetMismatch(g.Budget); why != "" {
		res.Accepted = isFalse(v1alpha1.ReasonInvalidSpec, "%s", why)
		return g, res
	}
	currency.claimBudget(fmt.Sprintf("BudgetGroup %q", id), g.Budget)
	res.InSnapshot = true
	return g, res
}

// keyQuotas copies a key's quotas into k.
func keyQuotas(s *v1alpha1.GatewayKeySpec, k *snapshot.Key) {
	k.TokensPerMinute, k.Budget, k.Group = s.TokensPerMinute, compileBudget(s.Budget), s.Group
}

// groupResult adds what the key's group reference says to its conditions,
// and counts the key in its group's status.
func groupResult(k *snapshot.Key, res *KeyResult, groups map[string]GroupResult) {
	if gr, ok := groups[k.Group]; ok && res.InSnapshot {
		gr.Keys++
		groups[k.Group] = gr
	}
	c := groupRefs(k, groups)
	if c == nil {
		return
	}
	if res.ResolvedRefs.Status {
		res.ResolvedRefs = *c
	} else {
		res.ResolvedRefs = isFalse(c.Reason, "%s; %s", c.Message, res.ResolvedRefs.Message)
	}
	if res.InSnapshot && res.Refused == nil {
		res.Refused = c
	}
}

// groupRefs decides what a key's group reference adds to its ResolvedRefs
// and Ready: nil when the key names no group or a served one.
func groupRefs(k *snapshot.Key, groups map[string]GroupResult) *Condition {
	if k.Group == "" {
		return nil
	}
	gr, known := groups[k.Group]
	switch {
	case !known:
		c := isFalse(v1alpha1.ReasonBudgetGroupNotFound, "BudgetGroup %q not found: the gateways refuse the key's chat requests with 403 budget_group_missing until it exists", k.Group)
		return &c
	case !gr.InSnapshot:
		c := isFalse(v1alpha1.ReasonBudgetGroupNotReady, "BudgetGroup %q is not accepted (%s): the gateways refuse the key's chat requests with 403 budget_group_missing until it is", k.Group, gr.Accepted.Reason)
		return &c
	}
	return nil
}
