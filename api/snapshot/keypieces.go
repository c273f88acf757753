package snapshot

import "bytes"

// The version is the hash of the whole canonical encoding (Encode), and at
// 50,000 keys encoding them is most of that. A key's piece of the encoding
// depends on the key alone — its fields at a fixed depth — so a caller that
// keeps keys from one version to the next (the controller's compile memo)
// can keep their pieces too, and the version is then hashed from the
// encoding of everything else with the pieces spliced in.

// keyDepth is a key object's nesting depth in the canonical encoding: the
// snapshot is 0, its "keys" array 1, each key 2.
const keyDepth = 2

// keysAt is the empty top-level keys array in the canonical encoding of a
// snapshot without keys (only top-level members start a line with exactly
// two spaces, and a newline inside a string is always escaped).
var keysAt = []byte("\n  \"keys\": []")

// CanonicalKey is k's piece of the canonical encoding, exactly as Encode
// writes it inside the keys array; nil if k cannot be encoded (the seal then
// falls back to computeVersion, which reports the error).
func CanonicalKey(k *Key) []byte {
	b, err := appendJSON(nil, k, keyDepth)
	if err != nil {
		return nil
	}
	return b
}

// blankAroundKeys is the canonical encoding of s without keys (and without
// a version) and where the keys go in it: at is its keys array's closing
// bracket. ok=false means s cannot be encoded.
func blankAroundKeys(s *Snapshot) (blank []byte, at int, ok bool) {
	c := *s
	c.Version, c.Keys = "", []Key{}
	blank, err := canonical(&c)
	if err != nil {
		return nil, 0, false
	}
	i := bytes.Index(blank, keysAt)
	if i < 0 {
		return nil, 0, false
	}
	return blank, i + len(keysAt) - 1, true
}
