package tokens

import (
	"strings"
	"testing"
)

func TestCount(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want int
	}{
		{"empty", "", 0},
		{"only spaces", " \t\n\r\v\f ", 0},
		{"one word", "hello", 1},
		{"surrounding space", "  hello  ", 1},
		{"several", "alpha/m says: amber basalt", 4},
		{"punctuation is part of a word", "hi, there! (ok)", 3},
		{"newlines", "a\nb\r\nc", 3},
		{"no-break space separates", "a\u00a0b", 2},
		{"ideographic space separates", "a\u3000b", 2},
		{"next line separates", "a\u0085b", 2},
		{"zero width space does not", "a\u200bb", 1},
		{"cjk run is one token", "日本語 テキスト", 2},
		{"invalid utf8 is a word", "\xff \xfe\xfd", 2},
		{"lone continuation byte", "a\x80b c", 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Count(tt.in); got != tt.want {
				t.Errorf("Count(%q) = %d, want %d", tt.in, got, tt.want)
			}
			if ref := len(strings.Fields(tt.in)); ref != tt.want {
				t.Errorf("strings.Fields disagrees with the table: %d", ref)
			}
		})
	}
}

// The pieces rule the mocks rely on: splitting at whitespace keeps counts additive.
func TestCountAdditiveAtWhitespace(t *testing.T) {
	whole := "alpha/m says: amber basalt cedar"
	pieces := []string{"alpha/m says:", " amber", " basalt cedar"}
	sum := 0
	for _, p := range pieces {
		sum += Count(p)
	}
	if sum != Count(whole) || strings.Join(pieces, "") != whole {
		t.Fatalf("sum %d, whole %d", sum, Count(whole))
	}
}

func TestCountMessages(t *testing.T) {
	if got := CountMessages(); got != 0 {
		t.Errorf("no messages: %d", got)
	}
	if got := CountMessages("be brief", "", "hello there  world"); got != 5 {
		t.Errorf("got %d, want 5", got)
	}
}

func FuzzCount(f *testing.F) {
	for _, s := range []string{"", "a b", " \u00a0x\u3000", "\xff\xfe", "a\u200bb", "\u0085\u2028z"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := Count(s), len(strings.Fields(s)); got != want {
			t.Fatalf("Count(%q) = %d, strings.Fields gives %d", s, got, want)
		}
	})
}

var sink int

func BenchmarkCount(b *testing.B) {
	for _, bc := range []struct{ name, s string }{
		{"ascii", strings.Repeat("the quick brown fox jumps ", 40)},
		{"unicode", strings.Repeat("schnelle Füchse \u00a0springen 日本語 ", 40)},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.SetBytes(int64(len(bc.s)))
			b.ReportAllocs()
			for b.Loop() {
				sink = Count(bc.s)
			}
		})
	}
}

func BenchmarkFieldsReference(b *testing.B) {
	s := strings.Repeat("the quick brown fox jumps ", 40)
	b.SetBytes(int64(len(s)))
	b.ReportAllocs()
	for b.Loop() {
		sink = len(strings.Fields(s))
	}
}
