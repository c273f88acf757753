// Package tokens is the one token counter of llmgw. The mock providers use it to
// report usage and the gateway uses it to count what it actually relayed, so both
// sides agree exactly without a vendor tokenizer.
//
// A token is a maximal run of non-whitespace characters, exactly as strings.Fields
// splits: ASCII whitespace plus every rune for which unicode.IsSpace is true.
// Invalid UTF-8 bytes count as non-whitespace. Because of this rule, text split
// only at whitespace boundaries counts the same in pieces as in one string.
package tokens

import (
	"unicode"
	"unicode/utf8"
)

// asciiSpace mirrors the table strings.Fields uses, so Count(s) == len(strings.Fields(s)).
var asciiSpace = [utf8.RuneSelf]bool{'\t': true, '\n': true, '\v': true, '\f': true, '\r': true, ' ': true}

// Count returns len(strings.Fields(s)) without allocating; it runs on every relayed chunk.
func Count(s string) int {
	n := 0
	inWord := false
	// Index bytes rather than range over runes: ASCII, the common case, then skips
	// the decoder entirely.
	for i := 0; i < len(s); {
		c := s[i]
		var space bool
		if c < utf8.RuneSelf {
			space = asciiSpace[c]
			i++
		} else {
			r, size := utf8.DecodeRuneInString(s[i:])
			space = unicode.IsSpace(r)
			i += size
		}
		if !space && !inWord {
			n++
		}
		inWord = !space
	}
	return n
}

// CountMessages is the input-token rule for a chat request: the sum of Count over
// every message content, the system prompt included.
func CountMessages(contents ...string) int {
	n := 0
	for _, c := range contents {
		n += Count(c)
	}
	return n
}
