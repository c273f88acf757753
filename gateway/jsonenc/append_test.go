package jsonenc

import (
	"encoding/json"
	"math"
	"testing"
)

func TestAppendStringMatchesMarshal(t *testing.T) {
	for _, s := range []string{"", "plain", "quotes \" and \\ and\nnewlines\t", "<html> & ünïcödé", "\u2028\u2029", "\x01\x7f", "\xff invalid", "😀"} {
		agreeString(t, s)
	}
}

func TestAppendFloatMatchesMarshal(t *testing.T) {
	for _, f := range []float64{0, math.Copysign(0, -1), 1, 2, 0.2, 0.95, 1.5e-1, 1e-6, 9.99e-7, 1e-7, 1.234e-10, 1e20, 1e21, 123456789.125, -3.5, math.MaxFloat64, math.SmallestNonzeroFloat64, 1e-100} {
		agreeFloat(t, f)
	}
}

func agreeString(t *testing.T, s string) {
	t.Helper()
	want, _ := json.Marshal(s)
	if got := AppendString([]byte("x"), s); string(got) != "x"+string(want) {
		t.Fatalf("AppendString(%q) = %s, want %s", s, got[1:], want)
	}
}

func agreeFloat(t *testing.T, f float64) {
	t.Helper()
	want, err := json.Marshal(f)
	if err != nil {
		return // NaN and infinities: not the caller's to pass
	}
	if got := AppendFloat([]byte("x"), f); string(got) != "x"+string(want) {
		t.Fatalf("AppendFloat(%v) = %s, want %s", f, got[1:], want)
	}
}

func FuzzAppendMatchesMarshal(f *testing.F) {
	f.Add("a<b", 0.2)
	f.Add("\xff\u2028", 1e-7)
	f.Fuzz(func(t *testing.T, s string, x float64) {
		agreeString(t, s)
		agreeFloat(t, x)
	})
}
