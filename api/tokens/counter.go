package tokens

import (
	"unicode"
	"unicode/utf8"
)

// Counter counts tokens over text that arrives in pieces split anywhere —
// real providers cut deltas mid-word — so that the gateway can count exactly
// what it relayed: after Add(a); Add(b), N() == Count(a+b).
type Counter struct {
	n      int
	inWord bool
}

// Add counts s as the continuation of everything added before.
func (c *Counter) Add(s string) {
	for i := 0; i < len(s); {
		ch := s[i]
		var space bool
		if ch < utf8.RuneSelf {
			space = asciiSpace[ch]
			i++
		} else {
			r, size := utf8.DecodeRuneInString(s[i:])
			space = unicode.IsSpace(r)
			i += size
		}
		if !space && !c.inWord {
			c.n++
		}
		c.inWord = !space
	}
}

// N is the number of tokens counted so far.
func (c *Counter) N() int { return c.n }
