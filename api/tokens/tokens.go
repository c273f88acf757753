// Package tokens is the one token counter of llmgw. The mock providers use it to
// report usage and the gateway uses it to count what it actually relayed, so both
// sides agree exactly without a vendor tokenizer.
//
// A token is a maximal run of non-whitespace characters, exactly as strings.Fields
// splits: ASCII whitespace plus every rune for which unicode.IsSpace is true.
// Invalid UTF-8 bytes count as non-whitespace. Because of this rule, text split
// only at whitespace boundaries counts the same in pieces as in one string.
package tokens

import "unicode/utf8"

// asciiSpace mirrors the table strings.Fields uses, so Count(s) == len(strings.Fields(s)).
var asciiSpace = [utf8.RuneSelf]bool{'\t': true, '\n': true, '\v': true, '\f': true, '\r': true, ' ': true}

// Count returns len(strings.Fields(s)) without allocating; it runs on every relayed chunk.
func Count(s string) int {
	var c Counter // on the stack: still no allocation
	c.Add(s)
	return c.N()
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
