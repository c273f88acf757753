package main

import (
	"math"
	"testing"
)

func TestFormatValue(t *testing.T) {
	for _, tc := range []struct {
		unit string
		v    float64
		want string
	}{
		{"s", 0, "0 s"},
		{"s", 0.0005, "500 µs"},
		{"s", 0.25, "250 ms"},
		{"s", 1.5, "1.5 s"},
		{"s", 90, "1.5 min"},
		{"s", 7200, "2 hour"},
		{"ms", 250, "250 ms"},
		{"ms", 1500, "1.5 s"},
		{"percentunit", 0.0123, "1.2%"},
		{"percentunit", 0.285, "28.5%"},
		{"percentunit", 0, "0%"},
		{"percent", 45, "45%"},
		{"reqps", 2.35, "2.35 req/s"},
		{"reqps", 1500, "1.5K req/s"},
		{"ops", 12, "12 ops/s"},
		{"short", 3, "3"},
		{"short", 1234567, "1.2 Mil"},
		{"short", 0.5, "0.500"},
		{"short", 1.23456789012, "1.2"},
		{"bytes", 2048, "2 KiB"},
		{"decbytes", 1500, "1.5 kB"},
		{"currencyUSD", 12.5, "$13"},
		{"currencyUSD", 3.5, "$3.50"},
		{"currencyUSD", 2500, "$2.50K"},
		{"", 0.123, "0.12"},
		{"none", 1234567, "1234567"},
		{"tokens", 5, "5 tokens"},
		{"suffix:/h", 3, "3/h"},
		{"s", math.NaN(), "NaN"},
		{"s", math.Inf(1), "∞"},
	} {
		if got := formatValue(tc.unit, tc.v, -1).String(); got != tc.want {
			t.Errorf("formatValue(%q, %v) = %q, want %q", tc.unit, tc.v, got, tc.want)
		}
	}
}

func TestFormatValueDecimals(t *testing.T) {
	if got := formatValue("reqps", 2.3456, 1).String(); got != "2.3 req/s" {
		t.Fatalf("one decimal: %q", got)
	}
}

func TestTickLabel(t *testing.T) {
	for _, tc := range []struct {
		unit    string
		v, step float64
		want    string
	}{
		{"s", 0, 0.25, "0 s"},
		{"s", 0.5, 0.5, "500 ms"},
		{"s", 1, 0.5, "1.0 s"},
		{"s", 1.5, 0.5, "1.5 s"},
		{"reqps", 0.5, 0.5, "0.5 req/s"},
		{"reqps", 1, 0.5, "1.0 req/s"},
		{"percentunit", 0.25, 0.25, "25%"},
		{"short", 2, 1, "2"},
		{"short", 0.25, 0.25, "0.25"},
		{"s", 1e-12, 0.5, "0 s"},
	} {
		if got := tickLabel(tc.unit, tc.v, tc.step); got != tc.want {
			t.Errorf("tickLabel(%q, %v, step %v) = %q, want %q", tc.unit, tc.v, tc.step, got, tc.want)
		}
	}
}
