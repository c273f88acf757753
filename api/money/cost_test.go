package money

import "testing"

func TestCost(t *testing.T) {
	// 2.5 / 1.25 / 10 / 12 per million tokens.
	p := Price{Currency: "USD", Input: 2_500_000, CachedInput: 1_250_000, Output: 10_000_000, Reasoning: 12_000_000}
	for _, tc := range []struct {
		name string
		u    TokenUse
		want string
	}{
		{"nothing", TokenUse{}, "0"},
		{"one input token", TokenUse{Input: 1}, "0.0000025"},
		{"plain", TokenUse{Input: 1000, Output: 500}, "0.0075"},
		{"cached part of input", TokenUse{Input: 1000, CachedInput: 400, Output: 500}, "0.007"},
		{"reasoning part of output", TokenUse{Input: 1000, Output: 500, Reasoning: 100}, "0.0077"},
		{"all kinds", TokenUse{Input: 1_000_000, CachedInput: 1_000_000, Output: 1_000_000, Reasoning: 1_000_000}, "13.25"},
		{"cached clamped to input", TokenUse{Input: 10, CachedInput: 50}, "0.0000125"},
		{"reasoning clamped to output", TokenUse{Output: 10, Reasoning: 50}, "0.00012"},
	} {
		got, err := Cost(tc.u, p)
		if err != nil || got.String() != tc.want {
			t.Errorf("%s: Cost = %s, %v; want %s", tc.name, got, err, tc.want)
		}
	}
	if _, err := Cost(TokenUse{Input: -1}, p); err == nil {
		t.Error("Cost accepted a negative token count")
	}
	if _, err := Cost(TokenUse{Input: 1 << 62}, Price{Input: 4}); err == nil {
		t.Error("Cost wrapped instead of reporting overflow")
	}
}

func TestWorstCase(t *testing.T) {
	for _, tc := range []struct {
		name          string
		p             Price
		input, output int64
		want          string
	}{
		{"regular rates highest", Price{Input: 2_000_000, CachedInput: 1_000_000, Output: 8_000_000, Reasoning: 8_000_000}, 1000, 4096, "0.034768"},
		{"cached and reasoning dearer", Price{Input: 1_000_000, CachedInput: 3_000_000, Output: 2_000_000, Reasoning: 5_000_000}, 10, 10, "0.00008"},
		{"free", Price{}, 1000, 1000, "0"},
	} {
		got, err := WorstCase(tc.input, tc.output, tc.p)
		if err != nil || got.String() != tc.want {
			t.Errorf("%s: WorstCase = %s, %v; want %s", tc.name, got, err, tc.want)
		}
	}
	if _, err := WorstCase(-1, 0, Price{}); err == nil {
		t.Error("WorstCase accepted a negative token count")
	}
}
