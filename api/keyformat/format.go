package keyformat

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
)

// Prefix starts every gateway key; a distinctive marker lets secret scanners and
// LooksLikeKey find leaked keys.
const Prefix = "lgw_"

// HashPrefix names the algorithm in the stored form so it can change later without
// ambiguity.
const HashPrefix = "sha256:"

const (
	idLen      = 10
	secretLen  = 40
	prefixLen  = len(Prefix) + idLen       // "lgw_" + id10
	keyLen     = prefixLen + 1 + secretLen // + "_" + secret40
	hashLen    = len(HashPrefix) + 2*sha256.Size
	idChars    = "abcdefghijklmnopqrstuvwxyz0123456789"
	secretChar = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
)

// Generate returns a new key, its non-secret prefix and its stored hash.
func Generate() (plaintext, prefix, hash string, err error) {
	buf := make([]byte, keyLen)
	copy(buf, Prefix)
	if err := randomChars(buf[len(Prefix):prefixLen], idChars); err != nil {
		return "", "", "", err
	}
	buf[prefixLen] = '_'
	if err := randomChars(buf[prefixLen+1:], secretChar); err != nil {
		return "", "", "", err
	}
	plaintext = string(buf)
	return plaintext, plaintext[:prefixLen], Hash(plaintext), nil
}

// randomChars fills dst uniformly from alphabet. Bytes at or above the largest
// multiple of len(alphabet) are rejected so that no character is more likely than
// another (a plain modulo would bias the secret).
func randomChars(dst []byte, alphabet string) error {
	limit := byte(256 - 256%len(alphabet))
	var pool [64]byte
	for i := 0; i < len(dst); {
		if _, err := rand.Read(pool[:]); err != nil {
			return fmt.Errorf("reading random bytes: %w", err)
		}
		for _, b := range pool {
			if b >= limit {
				continue
			}
			dst[i] = alphabet[int(b)%len(alphabet)]
			i++
			if i == len(dst) {
				break
			}
		}
	}
	return nil
}

// Hash is the stored form of a key: "sha256:" + lowercase hex of SHA-256 of the
// whole plaintext. A fast hash is enough because keys carry ~238 bits of entropy;
// a password KDF would only add latency on every request.
func Hash(plaintext string) string {
	h := sum(plaintext)
	return HashPrefix + hex.EncodeToString(h[:])
}

// PrefixOf returns the non-secret prefix ("lgw_" + id10) of a well-formed key, as
// a substring of plaintext so that the auth path does not allocate.
func PrefixOf(plaintext string) (string, bool) {
	if len(plaintext) != keyLen || !wellFormedAt(plaintext, 0) {
		return "", false
	}
	return plaintext[:prefixLen], true
}

// Verify reports whether plaintext hashes to hash. The comparison is constant-time
// so that response timing reveals nothing about how much of a guess matched.
func Verify(plaintext, hash string) bool {
	var want [sha256.Size]byte
	if !decodeHash(hash, &want) {
		return false
	}
	got := sum(plaintext)
	return subtle.ConstantTimeCompare(got[:], want[:]) == 1
}

// sum hashes s; a key fits a stack buffer, which spares the allocation that
// []byte(s) would cost on every authenticated request.
func sum(s string) [sha256.Size]byte {
	var buf [keyLen]byte
	if len(s) <= len(buf) {
		n := copy(buf[:], s)
		return sha256.Sum256(buf[:n])
	}
	return sha256.Sum256([]byte(s))
}

// Fingerprint is a short, irreversible identifier for records and status: the first
// 12 hex chars of SHA-256 of the stored hash string. Hashing the hash (rather than
// truncating it) means a fingerprint cannot be matched against a leaked hash list.
func Fingerprint(hash string) string {
	sum := sha256.Sum256([]byte(hash))
	return hex.EncodeToString(sum[:6])
}

// ValidHash reports whether s is "sha256:" + 64 lowercase hex chars.
func ValidHash(s string) bool {
	var b [sha256.Size]byte
	return decodeHash(s, &b)
}

// ValidPrefix reports whether s is "lgw_" + 10 chars of [a-z0-9].
func ValidPrefix(s string) bool {
	if len(s) != prefixLen || s[:len(Prefix)] != Prefix {
		return false
	}
	for i := len(Prefix); i < prefixLen; i++ {
		if !isIDChar(s[i]) {
			return false
		}
	}
	return true
}

// decodeHash parses the stored form without allocating; only lowercase hex is
// accepted so that each key has exactly one stored spelling.
func decodeHash(s string, out *[sha256.Size]byte) bool {
	if len(s) != hashLen || s[:len(HashPrefix)] != HashPrefix {
		return false
	}
	h := s[len(HashPrefix):]
	for i := range out {
		hi, ok1 := fromHex(h[2*i])
		lo, ok2 := fromHex(h[2*i+1])
		if !ok1 || !ok2 {
			return false
		}
		out[i] = hi<<4 | lo
	}
	return true
}

func fromHex(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	}
	return 0, false
}

func isIDChar(c byte) bool { return 'a' <= c && c <= 'z' || '0' <= c && c <= '9' }

func isSecretChar(c byte) bool { return isIDChar(c) || 'A' <= c && c <= 'Z' }
