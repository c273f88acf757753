package tokens

import (
	"testing"
	"unicode/utf8"
)

func TestCounterMatchesCountAcrossSplits(t *testing.T) {
	texts := []string{"", "hello", "hello world", " lead and trail ", "multi\tspace\n\nlines", "héllo wörld ünïcode", "a\u00a0b c"}
	for _, text := range texts {
		for cut := 0; cut <= len(text); cut++ {
			if cut < len(text) && !utf8.RuneStart(text[cut]) {
				continue // deltas arrive as JSON strings: always whole runes
			}
			var c Counter
			c.Add(text[:cut])
			c.Add(text[cut:])
			if c.N() != Count(text) {
				t.Fatalf("text %q split at %d: counter %d, Count %d", text, cut, c.N(), Count(text))
			}
		}
	}
}
