package snapshot

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"reflect"
)

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
// writes it inside the keys array; nil if the one-pass encoder does not
// cover Key (the tree then does the work: SealCheckedKeysWith falls back).
func CanonicalKey(k *Key) []byte {
	p := planFor(reflect.TypeFor[Key]())
	if p == nil {
		return nil
	}
	b, ok := p(nil, reflect.ValueOf(k).Elem(), keyDepth)
	if !ok {
		return nil
	}
	return b
}

// versionWithPieces is computeVersion for a normalized s whose keys'
// pieces come from piece (nil: CanonicalKey), hashed as they are written:
// the keys are neither encoded again nor held as one 18 MB buffer.
// ok=false means the one-pass encoder does not cover something.
func versionWithPieces(s *Snapshot, piece func(*Key) []byte) (string, bool) {
	c := *s
	c.Version, c.Keys = "", []Key{}
	p := planFor(reflect.TypeOf(&c))
	if p == nil {
		return "", false
	}
	blank, ok := p(nil, reflect.ValueOf(&c), 0)
	if !ok {
		return "", false
	}
	blank = append(blank, '\n')
	i := bytes.Index(blank, keysAt)
	if i < 0 {
		return "", false
	}
	at := i + len(keysAt) - 1 // the closing bracket
	h := sha256.New()
	h.Write(blank[:at])
	for j := range s.Keys {
		k := &s.Keys[j]
		var b []byte
		if piece != nil {
			b = piece(k)
		}
		if b == nil {
			if b = CanonicalKey(k); b == nil {
				return "", false
			}
		}
		if j > 0 {
			h.Write([]byte{','})
		}
		h.Write([]byte("\n    "))
		h.Write(b)
	}
	if len(s.Keys) > 0 {
		h.Write([]byte("\n  "))
	}
	h.Write(blank[at:])
	return "sha256:" + hex.EncodeToString(h.Sum(nil)), true
}
