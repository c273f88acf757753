package money

import (
	"errors"
	"math"
	"math/big"
	"testing"
)

func TestParsePrice(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    int64
		wantErr bool
	}{
		{"0", 0, false},
		{"1", 1_000_000, false},
		{"2.5", 2_500_000, false},
		{"0.000001", 1, false},
		{"0.15", 150_000, false},
		{"000000001.100000", 1_100_000, false},
		{"999999999.999999", 999_999_999_999_999, false},
		{"", 0, true},
		{".5", 0, true},
		{"5.", 0, true},
		{"-1", 0, true},
		{"+1", 0, true},
		{"1e3", 0, true},
		{"0.0000001", 0, true},
		{"1000000000", 0, true},
		{" 1", 0, true},
		{"1,5", 0, true},
		{"NaN", 0, true},
	} {
		got, err := ParsePrice(tc.in)
		if (err != nil) != tc.wantErr || got != tc.want {
			t.Errorf("ParsePrice(%q) = %d, %v; want %d, err=%v", tc.in, got, err, tc.want, tc.wantErr)
		}
	}
}

func TestParseAmount(t *testing.T) {
	for _, tc := range []struct {
		in       string
		want     Picos
		overflow bool
		wantErr  bool
	}{
		{"0", 0, false, false},
		{"100", 100 * PicosPerUnit, false, false},
		{"0.25", 250_000_000_000, false, false},
		{"0.000001", 1_000_000, false, false},
		{"9223372", 9_223_372 * PicosPerUnit, false, false},
		{"9223372.000001", 0, true, true},
		{"9223373", 0, true, true},
		{"999999999.999999", 0, true, true},
		{"1.2345678", 0, false, true},
		{"abc", 0, false, true},
	} {
		got, err := ParseAmount(tc.in)
		if (err != nil) != tc.wantErr || got != tc.want {
			t.Errorf("ParseAmount(%q) = %d, %v; want %d, err=%v", tc.in, got, err, tc.want, tc.wantErr)
		}
		if errors.Is(err, ErrOverflow) != tc.overflow {
			t.Errorf("ParseAmount(%q) error %v: overflow=%v, want %v", tc.in, err, errors.Is(err, ErrOverflow), tc.overflow)
		}
	}
}

func TestString(t *testing.T) {
	for _, tc := range []struct {
		in   Picos
		want string
	}{
		{0, "0"},
		{1, "0.000000000001"},
		{123_000_000, "0.000123"},
		{12 * PicosPerUnit, "12"},
		{1_500_000_000_000, "1.5"},
		{-1_500_000_000_000, "-1.5"},
		{-1, "-0.000000000001"},
		{math.MaxInt64, "9223372.036854775807"},
		{math.MinInt64, "-9223372.036854775808"},
		{MaxAmount, "9223372"},
	} {
		if got := tc.in.String(); got != tc.want {
			t.Errorf("Picos(%d).String() = %q, want %q", int64(tc.in), got, tc.want)
		}
	}
}

func TestArithmeticOverflow(t *testing.T) {
	for _, tc := range []struct {
		name string
		f    func() (Picos, error)
		want Picos
		err  bool
	}{
		{"add", func() (Picos, error) { return Add(2, 3) }, 5, false},
		{"add negative", func() (Picos, error) { return Add(-2, 3) }, 1, false},
		{"add max", func() (Picos, error) { return Add(math.MaxInt64, 0) }, math.MaxInt64, false},
		{"add overflow", func() (Picos, error) { return Add(math.MaxInt64, 1) }, 0, true},
		{"add underflow", func() (Picos, error) { return Add(math.MinInt64, -1) }, 0, true},
		{"sub", func() (Picos, error) { return Sub(5, 7) }, -2, false},
		{"sub min", func() (Picos, error) { return Sub(0, math.MinInt64) }, 0, true},
		{"sub overflow", func() (Picos, error) { return Sub(math.MaxInt64, -1) }, 0, true},
		{"mul", func() (Picos, error) { return Mul(1000, 2_500_000) }, 2_500_000_000, false},
		{"mul zero", func() (Picos, error) { return Mul(0, math.MaxInt64) }, 0, false},
		{"mul overflow", func() (Picos, error) { return Mul(math.MaxInt64/2+1, 2) }, 0, true},
		{"mul high word", func() (Picos, error) { return Mul(1<<40, 1<<40) }, 0, true},
		{"mul negative tokens", func() (Picos, error) { return Mul(-1, 1) }, 0, true},
		{"mul negative price", func() (Picos, error) { return Mul(1, -1) }, 0, true},
	} {
		got, err := tc.f()
		if (err != nil) != tc.err || got != tc.want {
			t.Errorf("%s = %d, %v; want %d, err=%v", tc.name, got, err, tc.want, tc.err)
		}
	}
}

func TestValidCurrency(t *testing.T) {
	for s, want := range map[string]bool{"USD": true, "EUR": true, "usd": false, "US": false, "USDX": false, "": false, "U1D": false} {
		if got := ValidCurrency(s); got != want {
			t.Errorf("ValidCurrency(%q) = %v, want %v", s, got, want)
		}
	}
}

// bigDecimal is an independent reference: the exact value of a decimal
// string as a rational number.
func bigDecimal(t *testing.T, s string) *big.Rat {
	r, ok := new(big.Rat).SetString(s)
	if !ok {
		t.Fatalf("big.Rat cannot parse %q", s)
	}
	return r
}

// FuzzParseAmount checks ParseAmount and String against math/big: a
// parsed amount is exactly the decimal's value, String gives it back
// exactly, and the round trip is stable.
func FuzzParseAmount(f *testing.F) {
	for _, s := range []string{"0", "1", "0.000001", "12.5", "9223372", "9223372.5", "999999999.999999", "1e5", "-1", ".5", "00.10"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := ParseAmount(s)
		if err != nil {
			if decimalRE.MatchString(s) && !errors.Is(err, ErrOverflow) {
				t.Fatalf("ParseAmount(%q): well-formed input refused for a reason other than overflow: %v", s, err)
			}
			if errors.Is(err, ErrOverflow) {
				limit := new(big.Rat).SetInt64(int64(MaxAmount) / PicosPerUnit)
				if bigDecimal(t, s).Cmp(limit) <= 0 {
					t.Fatalf("ParseAmount(%q): overflow reported for an amount within %s", s, MaxAmount)
				}
			}
			return
		}
		want := new(big.Rat).Mul(bigDecimal(t, s), new(big.Rat).SetInt64(PicosPerUnit))
		if !want.IsInt() || want.Num().Int64() != int64(p) {
			t.Fatalf("ParseAmount(%q) = %d picos, want %s", s, p, want.RatString())
		}
		str := p.String()
		if bigDecimal(t, str).Cmp(bigDecimal(t, s)) != 0 {
			t.Fatalf("String(ParseAmount(%q)) = %q, a different value", s, str)
		}
		again, err := ParseAmount(str)
		if err != nil || again != p {
			t.Fatalf("ParseAmount(%q) = %d, %v after round trip from %q (%d)", str, again, err, s, p)
		}
	})
}

// FuzzCost checks Cost against math/big on arbitrary token counts and
// prices: either the exact result or an overflow error, never a wrapped
// value.
func FuzzCost(f *testing.F) {
	f.Add(int64(1000), int64(200), int64(500), int64(100), int64(2_500_000), int64(1_250_000), int64(10_000_000), int64(10_000_000))
	f.Add(int64(math.MaxInt64), int64(0), int64(0), int64(0), int64(2), int64(0), int64(0), int64(0))
	f.Add(int64(5), int64(9), int64(3), int64(7), int64(1), int64(2), int64(3), int64(4))
	f.Fuzz(func(t *testing.T, in, cached, out, reasoning, pIn, pCached, pOut, pReasoning int64) {
		u := TokenUse{Input: in, CachedInput: cached, Output: out, Reasoning: reasoning}
		p := Price{Currency: "USD", Input: pIn, CachedInput: pCached, Output: pOut, Reasoning: pReasoning}
		got, err := Cost(u, p)
		if in < 0 || cached < 0 || out < 0 || reasoning < 0 || pIn < 0 || pCached < 0 || pOut < 0 || pReasoning < 0 {
			if err == nil {
				t.Fatalf("Cost(%+v, %+v) accepted a negative operand", u, p)
			}
			return
		}
		b := func(v int64) *big.Int { return big.NewInt(v) }
		c, r := min(cached, in), min(reasoning, out)
		want := new(big.Int)
		for _, term := range [][2]int64{{in - c, pIn}, {c, pCached}, {out - r, pOut}, {r, pReasoning}} {
			want.Add(want, new(big.Int).Mul(b(term[0]), b(term[1])))
		}
		if !want.IsInt64() {
			if !errors.Is(err, ErrOverflow) {
				t.Fatalf("Cost(%+v, %+v) = %d, %v; want overflow (exact %s)", u, p, got, err, want)
			}
			return
		}
		// A partial sum may overflow even when the total would not only if
		// terms could be negative; they cannot, so the exact total must come back.
		if err != nil || int64(got) != want.Int64() {
			t.Fatalf("Cost(%+v, %+v) = %d, %v; want %s", u, p, got, err, want)
		}
	})
}
