package keyformat

import (
	"strings"
	"testing"
)

const sample = "lgw_abcdefghij_ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmn"

func TestLooksLikeKey(t *testing.T) {
	cases := []struct {
		s    string
		want bool
	}{
		{sample, true},
		{"Authorization: Bearer " + sample, true},
		{`{"key":"` + sample + `"}`, true},
		{"xx" + sample + "yy", true},    // glued to other text is still a leak
		{"lgw_" + sample, true},         // a real key after a false start is found
		{sample[:len(sample)-1], false}, // one char short
		{"lgw_abcdefghij", false},       // the non-secret prefix alone
		{"lgw_abcdefghij_" + strings.Repeat("*", 40), false},
		{"LGW_abcdefghij_ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmn", false},
		{Hash(sample), false},
		{"", false},
	}
	for _, c := range cases {
		if got := LooksLikeKey(c.s); got != c.want {
			t.Errorf("LooksLikeKey(%q) = %v, want %v", c.s, got, c.want)
		}
	}
}

func TestRedact(t *testing.T) {
	in := "a " + sample + " b " + sample + "c"
	got := Redact(in)
	want := "a lgw_abcdefghij_<redacted> b lgw_abcdefghij_<redacted>c"
	if got != want {
		t.Fatalf("Redact = %q, want %q", got, want)
	}
	if LooksLikeKey(got) {
		t.Fatal("redacted text still looks like a key")
	}
	// The second key starts inside the first one's secret.
	second := "lgw_0123456789_" + strings.Repeat("Z", 40)
	overlap := sample[:52] + "lgw" + second[3:]
	if !LooksLikeKey(overlap[52:]) {
		t.Fatal("test setup: no second key")
	}
	got = Redact(overlap)
	if want := "lgw_abcdefghij_<redacted>_0123456789_<redacted>"; got != want {
		t.Fatalf("Redact(overlapping) = %q, want %q", got, want)
	}
	if s := "no keys here"; Redact(s) != s {
		t.Fatal("Redact changed text without keys")
	}
}

func FuzzLooksLikeKey(f *testing.F) {
	f.Add(sample)
	f.Add("lgw_lgw_" + sample)
	f.Add("")
	f.Fuzz(func(t *testing.T, s string) {
		if _, ok := PrefixOf(s); ok && !LooksLikeKey(s) {
			t.Fatalf("PrefixOf accepts %q but LooksLikeKey misses it", s)
		}
		if LooksLikeKey(Redact(s)) {
			t.Fatalf("Redact(%q) still contains a key", s)
		}
	})
}
