// Package keyformat is the gateway key format: generation, hashing, parsing and
// detection of plaintext keys.
//
// It is part of the controller↔gateway contract under api/: package snapshot
// validates hashes and prefixes with it, the gateway authenticates with it, and
// `llmgw keys` generates keys with it. It imports nothing of the project.
package keyformat
