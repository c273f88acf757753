package money

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
	"regexp"
	"strconv"
	"strings"
)

// Picos is an amount in pico-units (1e-12) of a currency. Its range, about
// ±9.2 million currency units, holds any realistic budget or per-key total;
// larger values are refused, never wrapped.
type Picos int64

// Scale factors between the decimal strings and the integers.
const (
	// PicosPerUnit is how many pico-units make one currency unit.
	PicosPerUnit = 1_000_000_000_000
	// MicrosPerUnit is how many micro-units make one currency unit: a price of
	// 1.5 per million tokens is 1_500_000 micros per million, which is also
	// 1_500_000 pico-units per token.
	MicrosPerUnit = 1_000_000
	// MaxFractionDigits is the most fractional digits a price or amount may
	// have (micro-units).
	MaxFractionDigits = 6
	// MaxAmount is the largest amount ParseAmount accepts, in whole units:
	// the largest number of whole units int64 pico-units can hold.
	MaxAmount Picos = math.MaxInt64 / PicosPerUnit * PicosPerUnit
)

// DecimalPattern is the syntax of every price and amount: up to 9 integer
// digits and up to 6 fractional ones, no sign, no exponent. The CRDs use the
// same expression as their OpenAPI pattern.
const DecimalPattern = `^[0-9]{1,9}(\.[0-9]{1,6})?$`

// CurrencyPattern is an ISO-4217 alphabetic code.
const CurrencyPattern = `^[A-Z]{3}$`

var (
	decimalRE  = regexp.MustCompile(DecimalPattern)
	currencyRE = regexp.MustCompile(CurrencyPattern)
)

// ErrOverflow is returned (wrapped) when a result does not fit in int64.
var ErrOverflow = errors.New("money: amount out of range")

// ValidCurrency reports whether s is an ISO-4217 style code ("USD", "EUR").
func ValidCurrency(s string) bool { return currencyRE.MatchString(s) }

// parseMicros turns a DecimalPattern string into micro-units. Nine integer
// digits times 1e6 stays far below int64, so this cannot overflow.
func parseMicros(s string) (int64, error) {
	if !decimalRE.MatchString(s) {
		return 0, fmt.Errorf("money: %q is not a decimal like 12 or 0.125 (at most 9 integer and %d fractional digits)", truncate(s), MaxFractionDigits)
	}
	whole, frac, _ := strings.Cut(s, ".")
	w, err := strconv.ParseInt(whole, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("money: parse %q: %w", truncate(s), err)
	}
	var f int64
	if frac != "" {
		frac += strings.Repeat("0", MaxFractionDigits-len(frac))
		if f, err = strconv.ParseInt(frac, 10, 64); err != nil {
			return 0, fmt.Errorf("money: parse %q: %w", truncate(s), err)
		}
	}
	return w*MicrosPerUnit + f, nil
}

// ParsePrice parses a price per million tokens ("2.5") into micro-units per
// million tokens, which equals pico-units per token.
func ParsePrice(s string) (int64, error) { return parseMicros(s) }

// ParseAmount parses an amount of currency ("100", "0.25") into pico-units.
// Amounts above MaxAmount are refused with ErrOverflow.
func ParseAmount(s string) (Picos, error) {
	m, err := parseMicros(s)
	if err != nil {
		return 0, err
	}
	p, err := mul(m, PicosPerUnit/MicrosPerUnit)
	if err != nil || p > int64(MaxAmount) {
		return 0, fmt.Errorf("money: %q exceeds the largest amount %s: %w", s, MaxAmount, ErrOverflow)
	}
	return Picos(p), nil
}

// String is the exact decimal value with up to 12 fractional digits and no
// trailing zeros: "0", "12", "0.000123", "-1.5".
func (p Picos) String() string {
	neg := p < 0
	u := uint64(p)
	if neg {
		u = -u // two's complement magnitude; correct for MinInt64 too
	}
	whole, frac := u/PicosPerUnit, u%PicosPerUnit
	var b strings.Builder
	if neg {
		b.WriteByte('-')
	}
	b.WriteString(strconv.FormatUint(whole, 10))
	if frac != 0 {
		f := fmt.Sprintf("%012d", frac)
		b.WriteByte('.')
		b.WriteString(strings.TrimRight(f, "0"))
	}
	return b.String()
}

// Add returns a+b, or ErrOverflow.
func Add(a, b Picos) (Picos, error) {
	s := a + b
	// Overflow happened iff both operands have the sign the sum lacks.
	if (a >= 0) == (b >= 0) && (s >= 0) != (a >= 0) {
		return 0, fmt.Errorf("money: %d + %d: %w", a, b, ErrOverflow)
	}
	return s, nil
}

// Sub returns a-b, or ErrOverflow.
func Sub(a, b Picos) (Picos, error) {
	if b == math.MinInt64 {
		return 0, fmt.Errorf("money: %d - %d: %w", a, b, ErrOverflow)
	}
	return Add(a, -b)
}

// Mul returns tokens × picosPerToken, or ErrOverflow. Both must be >= 0: a
// negative token count or price is a bug upstream, not a refund.
func Mul(tokens, picosPerToken int64) (Picos, error) {
	if tokens < 0 || picosPerToken < 0 {
		return 0, fmt.Errorf("money: %d × %d: negative operand", tokens, picosPerToken)
	}
	p, err := mul(tokens, picosPerToken)
	if err != nil {
		return 0, fmt.Errorf("money: %d × %d: %w", tokens, picosPerToken, err)
	}
	return Picos(p), nil
}

// mul multiplies two non-negative int64s, failing when the product exceeds
// MaxInt64.
func mul(a, b int64) (int64, error) {
	hi, lo := bits.Mul64(uint64(a), uint64(b))
	if hi != 0 || lo > math.MaxInt64 {
		return 0, ErrOverflow
	}
	return int64(lo), nil
}

// truncate keeps error messages short when a caller feeds a huge string.
func truncate(s string) string {
	if len(s) > 32 {
		return s[:32] + "..."
	}
	return s
}
