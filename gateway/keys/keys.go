// Package keys is the `llmgw keys` command: it creates and rotates gateway
// keys and writes their hash-only entries (a snapshot key object, or a
// GatewayKey resource).
//
// Plaintext keys exist only in the caller's hands: Create and Rotate return
// one once, and everything written (snapshot entries, GatewayKey resources)
// holds the hash and the non-secret prefix. The key format itself
// (generation, hashing, verification, redaction) is package api/keyformat.
package keys
