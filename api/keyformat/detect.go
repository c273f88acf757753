package keyformat

import "strings"

// LooksLikeKey reports whether a plaintext key occurs anywhere in s, including
// inside a longer token: a key glued to other text is still a leak.
func LooksLikeKey(s string) bool {
	return nextKey(s, 0) >= 0
}

// Redact replaces the secret part of every plaintext key in s, keeping the
// non-secret prefix so that the text stays useful for debugging. Use it on error
// text that may quote input (for example a parse error echoing a value). Keys that
// overlap (one starting inside another's secret) are all redacted.
func Redact(s string) string {
	at := nextKey(s, 0)
	if at < 0 {
		return s
	}
	var b strings.Builder
	last := 0 // s[:last] is written
	for ; at >= 0; at = nextKey(s, at+1) {
		secret := at + prefixLen + 1
		if secret > last {
			b.WriteString(s[last:secret])
			b.WriteString(redacted)
		}
		last = at + keyLen
	}
	b.WriteString(s[last:])
	return b.String()
}

const redacted = "<redacted>"

// nextKey returns the index of the first plaintext key in s at or after from, or -1.
func nextKey(s string, from int) int {
	for from+keyLen <= len(s) {
		j := strings.Index(s[from:], Prefix)
		if j < 0 {
			return -1
		}
		at := from + j
		if at+keyLen <= len(s) && wellFormedAt(s, at) {
			return at
		}
		from = at + 1
	}
	return -1
}

// wellFormedAt checks the key layout starting at s[at:]; the caller guarantees
// len(s) >= at+keyLen.
func wellFormedAt(s string, at int) bool {
	if s[at:at+len(Prefix)] != Prefix || s[at+prefixLen] != '_' {
		return false
	}
	for i := at + len(Prefix); i < at+prefixLen; i++ {
		if !isIDChar(s[i]) {
			return false
		}
	}
	for i := at + prefixLen + 1; i < at+keyLen; i++ {
		if !isSecretChar(s[i]) {
			return false
		}
	}
	return true
}
