// Package keyformat is the gateway key format: generation, hashing, parsing and
// detection of plaintext keys.
//
// It lives apart from package keys, which re-exports it, because package snapshot
// must validate hashes and prefixes while package keys builds snapshot entries:
// keeping the format here, with no project imports, breaks that import cycle.
package keyformat
