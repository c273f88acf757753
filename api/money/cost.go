package money

import "fmt"

// Price is one route's parsed price list: pico-units per token (equal to
// micro-units per million tokens) for each kind of token, in Currency.
type Price struct {
	Currency    string
	Input       int64
	CachedInput int64
	Output      int64
	Reasoning   int64
}

// TokenUse is what one request used. CachedInput is part of Input and
// Reasoning is part of Output (OpenAI's usage semantics: prompt_tokens
// includes cached tokens, completion_tokens includes reasoning tokens).
type TokenUse struct {
	Input       int64
	CachedInput int64
	Output      int64
	Reasoning   int64
}

// Cost is the exact charge for u at p:
//
//	(Input−CachedInput)×p.Input + CachedInput×p.CachedInput +
//	(Output−Reasoning)×p.Output + Reasoning×p.Reasoning
//
// A provider that reports more cached than input tokens (or more reasoning
// than output tokens) is not trusted beyond its totals: the part is clamped
// to the whole, so the bill never exceeds what the totals allow at the
// higher of the two rates and never goes negative.
func Cost(u TokenUse, p Price) (Picos, error) {
	if u.Input < 0 || u.CachedInput < 0 || u.Output < 0 || u.Reasoning < 0 {
		return 0, fmt.Errorf("money: negative token count in %+v", u)
	}
	cached := min(u.CachedInput, u.Input)
	reasoning := min(u.Reasoning, u.Output)
	return sum(
		term{u.Input - cached, p.Input},
		term{cached, p.CachedInput},
		term{u.Output - reasoning, p.Output},
		term{reasoning, p.Reasoning},
	)
}

// WorstCase is the most a request with at most input prompt tokens and
// output completion tokens can cost at p, whatever share of them turns out
// cached or reasoning: each side is charged at the higher of its two rates.
// Admission reserves this before any provider is called.
func WorstCase(input, output int64, p Price) (Picos, error) {
	if input < 0 || output < 0 {
		return 0, fmt.Errorf("money: negative token count %d/%d", input, output)
	}
	return sum(
		term{input, max(p.Input, p.CachedInput)},
		term{output, max(p.Output, p.Reasoning)},
	)
}

type term struct{ tokens, rate int64 }

func sum(terms ...term) (Picos, error) {
	var total Picos
	for _, t := range terms {
		c, err := Mul(t.tokens, t.rate)
		if err != nil {
			return 0, err
		}
		if total, err = Add(total, c); err != nil {
			return 0, err
		}
	}
	return total, nil
}
