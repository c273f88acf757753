package controllers

import (
	"github.com/llmgw/llmgw/api/snapshot"
	"github.com/llmgw/llmgw/api/v1alpha1"
)

// compilePrices copies a ProviderEndpoint's prices into the snapshot's form;
// the snapshot fills the defaults and validates them (compileProvider's trial
// snapshot), so a bad price refuses the provider with the snapshot's message.
func compilePrices(in []v1alpha1.ModelPrice) []snapshot.Price {
	if len(in) == 0 {
		return nil
	}
	out := make([]snapshot.Price, 0, len(in))
	for _, mp := range in {
		p := snapshot.Price{
			Model:                 mp.Model,
			Currency:              mp.Currency,
			InputPerMillion:       mp.InputPerMillion,
			CachedInputPerMillion: mp.CachedInputPerMillion,
			OutputPerMillion:      mp.OutputPerMillion,
			ReasoningPerMillion:   mp.ReasoningPerMillion,
		}
		if mp.EffectiveFrom != nil {
			t := mp.EffectiveFrom.UTC()
			p.EffectiveFrom = &t
		}
		out = append(out, p)
	}
	return out
}

// currencyOwner enforces one currency per snapshot across ProviderEndpoints.
// Providers claim in olderFirst order, so the oldest priced provider sets the
// currency and a newer one priced in another is refused: as with alias and
// key conflicts, creating an object never takes away what is served.
type currencyOwner struct {
	currency, owner string
}

// claim refuses p (res.Accepted False, out of the snapshot) when its prices
// use another currency than the owner's; otherwise an unowned currency
// becomes p's.
func (c *currencyOwner) claim(pe *v1alpha1.ProviderEndpoint, p *snapshot.Provider, res *ProviderResult) {
	if !res.InSnapshot || len(p.Prices) == 0 {
		return
	}
	trial := snapshot.Snapshot{Providers: []snapshot.Provider{*p}}
	trial.Providers[0].Prices = append([]snapshot.Price(nil), p.Prices...)
	trial.Normalize()
	cur := trial.Currency()
	switch {
	case c.currency == "":
		c.currency, c.owner = cur, pe.Name
	case cur != c.currency:
		res.Accepted = isFalse(v1alpha1.ReasonInvalidSpec,
			"prices are in %s but the older ProviderEndpoint %q prices in %s: all prices in a namespace share one currency",
			cur, c.owner, c.currency)
		res.BaseURL = ""
		res.InSnapshot = false
	}
}
