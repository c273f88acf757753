package jsonscan

import (
	"strings"
	"testing"
)

// plainRun, eight bytes at a time, ends where the byte-by-byte scan does,
// from every starting point.
func FuzzPlainRunMatchesTheTable(f *testing.F) {
	f.Add([]byte(`chat.completion.chunk", "x`))
	f.Add([]byte("0123456789abcdef\x1fzz\x7f\x80\"\\ \x00 ok"))
	f.Add([]byte("\x20\x20\x20\x20\x20\x20\x20\x1f\x20\x20\x20\x20\x20\x20\x20\x20!"))
	f.Add([]byte("aaaaaaa\"\"aaaaaaaa\\\\aaaaaaaa\xff\xffaaaaaaa"))
	f.Fuzz(func(t *testing.T, d []byte) {
		for i := 0; i <= len(d); i++ {
			want := i
			for want < len(d) && plainByte[d[want]] {
				want++
			}
			if got := plainRun(d, i); got != want {
				t.Fatalf("plainRun(%q, %d) = %d, want %d", d, i, got, want)
			}
		}
	})
}

// Every byte value, at every position of a word, after plain bytes and
// before them.
func TestPlainRunStopsAtEveryByteThatIsNotPlain(t *testing.T) {
	for c := 0; c < 256; c++ {
		for pos := 0; pos < 16; pos++ {
			d := []byte(strings.Repeat("a", 24))
			d[pos] = byte(c)
			want := len(d)
			if !plainByte[byte(c)] {
				want = pos
			}
			if got := plainRun(d, 0); got != want {
				t.Fatalf("byte %#x at %d: plainRun = %d, want %d", c, pos, got, want)
			}
		}
	}
}
