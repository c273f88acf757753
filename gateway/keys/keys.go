// Package keys is the gateway key: format, generation, hashing, verification, and
// the `llmgw keys` command that creates keys and their hash-only entries.
//
// Plaintext keys exist only in the caller's hands: Create returns one once, and
// everything stored (snapshot entries, GatewayKey resources, usage records) holds
// the hash, the non-secret prefix, or the fingerprint.
package keys

import "github.com/llmgw/llmgw/api/keyformat"

// The format lives in package keyformat so that package snapshot can validate
// hashes without importing this package (which imports snapshot). These wrappers
// are inlined; see keyformat for the details of each.

// Prefix starts every plaintext key.
const Prefix = keyformat.Prefix

// Generate returns a new plaintext key ("lgw_<id10>_<secret40>"), its non-secret
// prefix ("lgw_<id10>") and its stored hash ("sha256:<hex>").
func Generate() (plaintext, prefix, hash string, err error) { return keyformat.Generate() }

// Hash is the stored form of a key: "sha256:" + lowercase hex SHA-256 of it.
func Hash(plaintext string) string { return keyformat.Hash(plaintext) }

// PrefixOf returns the non-secret prefix of a well-formed key without allocating;
// false when plaintext is not a well-formed key.
func PrefixOf(plaintext string) (string, bool) { return keyformat.PrefixOf(plaintext) }

// Verify reports, in constant time, whether plaintext hashes to hash.
func Verify(plaintext, hash string) bool { return keyformat.Verify(plaintext, hash) }

// Fingerprint is the short irreversible id of a key for records and status: the
// first 12 hex chars of SHA-256 of its stored hash.
func Fingerprint(hash string) string { return keyformat.Fingerprint(hash) }

// ValidHash reports whether s is "sha256:" + 64 lowercase hex chars.
func ValidHash(s string) bool { return keyformat.ValidHash(s) }

// ValidPrefix reports whether s is "lgw_" + 10 chars of [a-z0-9].
func ValidPrefix(s string) bool { return keyformat.ValidPrefix(s) }

// LooksLikeKey reports whether a plaintext key occurs anywhere in s; tests use it
// to scan logs, databases and snapshots for leaks.
func LooksLikeKey(s string) bool { return keyformat.LooksLikeKey(s) }

// Redact replaces the secret part of every plaintext key in s.
func Redact(s string) string { return keyformat.Redact(s) }
