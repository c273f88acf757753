package server

import (
	"math"

	"github.com/llmgw/llmgw/api/money"
	"github.com/llmgw/llmgw/gateway/translate"
)

// setUsage puts what the request used into its record. A provider's counts
// are input to a bill, so they are kept within what can be billed: none
// negative, cached within input, reasoning within output.
func (x *exchange) setUsage(u translate.Usage) {
	in, out := max(u.InputTokens, 0), max(u.OutputTokens, 0)
	x.rec.InputTokens, x.rec.OutputTokens = in, out
	x.rec.CachedInputTokens = min(max(u.CachedInputTokens, 0), in)
	x.rec.ReasoningTokens = min(max(u.ReasoningTokens, 0), out)
}

// ownCount is the usage the gateway counts itself when the provider's own
// count is missing or does not apply (a stream cut or canceled before the
// provider's final usage): the prompt it sent and the output it relayed.
// What the provider might have served from cache or spent on reasoning is
// unknown then, so nothing is discounted or charged apart.
func (x *exchange) ownCount(relayed int) translate.Usage {
	return translate.Usage{InputTokens: x.p.inputTokens, OutputTokens: relayed}
}

// priceRecord sets the record's cost: its tokens at the price of the route
// that answered (Provider, ProviderModel), as of the request's start, so a
// price change never reprices a request that was already running. An
// unpriced route, or a request no route answered, costs 0 with no currency.
func (x *exchange) priceRecord() {
	r := &x.rec
	r.Cost, r.Currency = 0, ""
	if x.st == nil || x.st.idx == nil || r.Provider == "" {
		return
	}
	p, ok := x.st.idx.PriceFor(r.Provider, r.ProviderModel, x.start)
	if !ok {
		return
	}
	c, err := money.Cost(money.TokenUse{
		Input:       int64(r.InputTokens),
		CachedInput: int64(r.CachedInputTokens),
		Output:      int64(r.OutputTokens),
		Reasoning:   int64(r.ReasoningTokens),
	}, p)
	if err != nil {
		// Only absurd token counts get here (millions of currency units in
		// one request). The largest representable cost stops any budget
		// rather than letting the request through for free.
		x.s.log.Error("usage cost out of range; recorded as the maximum", "request_id", r.RequestID,
			"provider", r.Provider, "input_tokens", r.InputTokens, "output_tokens", r.OutputTokens, "err", err)
		c = math.MaxInt64
	}
	r.Cost, r.Currency = c, p.Currency
}
