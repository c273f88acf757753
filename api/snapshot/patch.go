package snapshot

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"slices"
)

// A caller that changes a few keys of a large sealed snapshot (the
// controller compiling a one-key change at 50,000 keys) need not seal it
// again: checking every key against every other and hashing the 18 MB
// encoding for the version were most of that work. A KeyPatcher keeps each
// key's piece of the canonical encoding and the version hash's state every
// versionStride keys; PatchKeys then checks only the keys put in against the
// rest, and hashes again only from the first key that moved. The version is
// the one Encode gives: the same bytes are hashed, in the same order.

// versionStride is how many keys lie between two kept hash states: a patch
// hashes at most this many unchanged keys before its first change again,
// and 50,000 keys keep about 200 states.
const versionStride = 256

// KeyPatcher is what PatchKeys needs of one sealed snapshot, which it then
// follows from patch to patch. Not safe for concurrent use.
type KeyPatcher struct {
	// blank is the encoding without keys; the keys go at blank[at].
	blank []byte
	at    int
	// pieces are the keys' pieces of the encoding, in the snapshot's order.
	pieces [][]byte
	// states[j] is the hash of blank[:at] and the first j*versionStride keys.
	states []hash.Cloner
	// prefixes counts the keys of each prefix: at 50,000 keys, comparing a
	// new prefix with every key's cost more than the rest of a patch. Made
	// by the first patch: sealing need not pay for it.
	prefixes map[string]int
	// rest is the snapshot sealed, but its keys: patching another one
	// (another providers, aliases or groups array) is refused.
	rest Snapshot
}

// SealCheckedKeysPatchable is SealCheckedKeysWith, also returning a
// KeyPatcher for s as sealed: nil when s cannot be encoded or the hash
// cannot be resumed (the version is then computed as Encode computes it,
// which reports an encoding error).
func SealCheckedKeysPatchable(s *Snapshot, piece func(*Key) []byte) (*KeyPatcher, error) {
	s.normalizeCheckedKeys()
	if err := s.validate(true); err != nil {
		return nil, fmt.Errorf("invalid snapshot: %w", err)
	}
	if p := newKeyPatcher(s, piece); p != nil {
		if v, ok := p.rehash(0); ok {
			s.Version = v
			return p, nil
		}
	}
	v, err := computeVersion(s)
	if err != nil {
		return nil, err
	}
	s.Version = v
	return nil, nil
}

func newKeyPatcher(s *Snapshot, piece func(*Key) []byte) *KeyPatcher {
	blank, at, ok := blankAroundKeys(s)
	if !ok {
		return nil
	}
	h, ok := sha256.New().(hash.Cloner)
	if !ok {
		return nil
	}
	h.Write(blank[:at])
	p := &KeyPatcher{blank: blank, at: at, pieces: make([][]byte, len(s.Keys)), states: []hash.Cloner{h}, rest: *s}
	p.rest.Keys, p.rest.Version = nil, ""
	for i := range s.Keys {
		if p.pieces[i] = pieceOf(&s.Keys[i], piece); p.pieces[i] == nil {
			return nil
		}
	}
	return p
}

// pieceOf is k's piece from piece when it has one, encoded otherwise; nil
// if k cannot be encoded.
func pieceOf(k *Key, piece func(*Key) []byte) []byte {
	if piece != nil {
		if b := piece(k); b != nil {
			return b
		}
	}
	return CanonicalKey(k)
}

// rehash is the version for p.pieces, whose first from pieces are those
// hashed last time; it keeps the states it passes. ok=false: a hash state
// could not be cloned.
func (p *KeyPatcher) rehash(from int) (string, bool) {
	j := min(from/versionStride, len(p.states)-1)
	h, err := p.states[j].Clone()
	if err != nil {
		return "", false
	}
	clear(p.states[j+1:])
	p.states = p.states[:j+1]
	// Buffered: three small writes per key cost more than the hashing.
	buf := make([]byte, 0, 64<<10)
	for i := j * versionStride; i < len(p.pieces); i++ {
		if i%versionStride == 0 && i > j*versionStride {
			h.Write(buf)
			buf = buf[:0]
			c, err := h.Clone()
			if err != nil {
				return "", false
			}
			p.states = append(p.states, c)
		}
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = append(append(buf, "\n    "...), p.pieces[i]...)
		if len(buf) >= 60<<10 {
			h.Write(buf)
			buf = buf[:0]
		}
	}
	if len(p.pieces) > 0 {
		buf = append(buf, "\n  "...)
	}
	h.Write(append(buf, p.blank[p.at:]...))
	return "sha256:" + hex.EncodeToString(h.Sum(nil)), true
}

// PatchKeys takes the keys whose ids are in remove out of s and puts the
// keys of put in, keeping s.Keys in id order and patching it in place. s
// must be the snapshot p was made for, as sealed or last patched, changed
// in nothing but this. The keys put in must be normalized and have passed
// ValidateKey, as for SealCheckedKeys; what validate checks across objects
// is checked for them (unique id and prefix, models naming aliases, one
// currency), and s.Version is set; piece is as for SealCheckedKeysWith. An
// error leaves s's keys and p unusable: seal the snapshot afresh.
func (p *KeyPatcher) PatchKeys(s *Snapshot, remove []string, put []Key, piece func(*Key) []byte) error {
	if len(s.Keys) != len(p.pieces) {
		return fmt.Errorf("patching keys: the snapshot has %d keys, its patcher %d", len(s.Keys), len(p.pieces))
	}
	if !p.sameRest(s) {
		return errors.New("patching keys: not the snapshot sealed (another providers, aliases, groups or limits)")
	}
	gone, err := positions(s.Keys, remove)
	if err != nil {
		return err
	}
	put = slices.SortedFunc(slices.Values(put), func(a, b Key) int { return cmp.Compare(a.ID, b.ID) })
	budgets := false
	for _, i := range gone {
		budgets = budgets || s.Keys[i].Budget != nil
	}
	for i := range put {
		budgets = budgets || put[i].Budget != nil
	}
	p.countPrefixes(s.Keys, gone, put)
	from, err := p.patch(s, gone, put, piece)
	if err != nil {
		return err
	}
	if err := p.checkPutKeys(s, put, budgets); err != nil {
		return fmt.Errorf("invalid snapshot: %w", err)
	}
	v, ok := p.rehash(from)
	if !ok {
		return errors.New("patching keys: the version hash cannot be resumed")
	}
	s.Version = v
	return nil
}

// sameRest says whether s has the providers, aliases, groups and limits
// (the very arrays) that were sealed. Encoding them again to compare took
// longer than the rest of a one-key patch.
func (p *KeyPatcher) sameRest(s *Snapshot) bool {
	r := &p.rest
	return sameArray(s.Providers, r.Providers) && sameArray(s.Aliases, r.Aliases) && sameArray(s.Groups, r.Groups) && s.Limits == r.Limits
}

func sameArray[T any](a, b []T) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}

// positions are the indexes of the keys with the given ids, ascending.
func positions(keys []Key, ids []string) ([]int, error) {
	at := make([]int, 0, len(ids))
	for _, id := range ids {
		i, found := slices.BinarySearchFunc(keys, id, keyHasID)
		if !found {
			return nil, fmt.Errorf("patching keys: no key %s to take out", quote(id))
		}
		at = append(at, i)
	}
	slices.Sort(at)
	if len(slices.Compact(slices.Clone(at))) != len(at) {
		return nil, errors.New("patching keys: a key taken out twice")
	}
	return at, nil
}

func keyHasID(k Key, id string) int { return cmp.Compare(k.ID, id) }

// countPrefixes counts the prefixes of the keys at gone out and those of
// put in.
func (p *KeyPatcher) countPrefixes(keys []Key, gone []int, put []Key) {
	if p.prefixes == nil {
		p.prefixes = make(map[string]int, len(keys))
		for i := range keys {
			p.prefixes[keys[i].Prefix]++
		}
	}
	for _, i := range gone {
		if p.prefixes[keys[i].Prefix]--; p.prefixes[keys[i].Prefix] <= 0 {
			delete(p.prefixes, keys[i].Prefix)
		}
	}
	for i := range put {
		p.prefixes[put[i].Prefix]++
	}
}

// patch takes the keys at gone out and puts put (sorted by id) in, keys
// and pieces alike, and returns the first index whose key may differ.
func (p *KeyPatcher) patch(s *Snapshot, gone []int, put []Key, piece func(*Key) []byte) (int, error) {
	keys, pieces := s.Keys, p.pieces
	from := len(keys)
	// An edit takes a key out and puts it back under its id: it is replaced
	// where it is, and nothing moves.
	var out []int
	var in []Key
	for i, q := 0, 0; i < len(gone) || q < len(put); {
		switch {
		case q == len(put) || (i < len(gone) && keys[gone[i]].ID < put[q].ID):
			out = append(out, gone[i])
			i++
		case i == len(gone) || keys[gone[i]].ID > put[q].ID:
			in = append(in, put[q])
			q++
		default:
			g := gone[i]
			if pieces[g] = pieceOf(&put[q], piece); pieces[g] == nil {
				return 0, errors.New("patching keys: a key cannot be encoded")
			}
			keys[g] = put[q]
			from = min(from, g)
			i, q = i+1, q+1
		}
	}
	if len(out) > 0 {
		from = min(from, out[0])
		keys, pieces = removeAt(keys, out), removeAt(pieces, out)
	}
	if len(in) > 0 {
		inPieces := make([][]byte, len(in))
		for q := range in {
			if inPieces[q] = pieceOf(&in[q], piece); inPieces[q] == nil {
				return 0, errors.New("patching keys: a key cannot be encoded")
			}
		}
		var first int
		keys, pieces, first = mergeIn(keys, pieces, in, inPieces)
		from = min(from, first)
	}
	s.Keys, p.pieces = keys, pieces
	return from, nil
}

// removeAt removes the elements at the ascending indexes at, in one pass
// from the first of them.
func removeAt[T any](s []T, at []int) []T {
	w := at[0]
	for r, j := at[0], 0; r < len(s); r++ {
		if j < len(at) && at[j] == r {
			j++
			continue
		}
		s[w] = s[r]
		w++
	}
	clear(s[w:])
	return s[:w]
}

// mergeIn merges in (sorted by id, with their pieces) into keys, merging
// from the back in place, and returns the lowest index written.
func mergeIn(keys []Key, pieces [][]byte, in []Key, inPieces [][]byte) ([]Key, [][]byte, int) {
	n, m := len(keys), len(in)
	keys, pieces = slices.Grow(keys, m)[:n+m], slices.Grow(pieces, m)[:n+m]
	i, w := n-1, n+m-1
	for q := m - 1; q >= 0; w-- {
		if i >= 0 && keys[i].ID > in[q].ID {
			keys[w], pieces[w] = keys[i], pieces[i]
			i--
		} else {
			keys[w], pieces[w] = in[q], inPieces[q]
			q--
		}
	}
	return keys, pieces, w + 1
}

// checkPutKeys is validate's checks across objects for the keys put in:
// the others passed them before, and are still checked against the new.
func (p *KeyPatcher) checkPutKeys(s *Snapshot, put []Key, budgets bool) error {
	var errs []error
	keys := s.Keys
	for q := range put {
		k := &put[q]
		i, found := slices.BinarySearchFunc(keys, k.ID, keyHasID)
		obj := "key " + label(k.ID, i)
		if !found || (i+1 < len(keys) && keys[i+1].ID == k.ID) {
			errs = append(errs, fmt.Errorf("%s: duplicate key id", obj))
		}
		if k.Prefix != "" && p.prefixes[k.Prefix] > 1 {
			errs = append(errs, fmt.Errorf("%s: duplicate key prefix %s", obj, k.Prefix))
		}
		for _, m := range k.Models {
			if m == AllModels || validName(m) != nil {
				continue
			}
			if _, ok := slices.BinarySearchFunc(s.Aliases, m, func(a Alias, name string) int { return cmp.Compare(a.Name, name) }); !ok {
				errs = append(errs, fmt.Errorf("%s: models: alias %s does not exist", obj, quote(m)))
			}
		}
	}
	// One currency: the first budget may be any key's, so every budget is
	// checked again when a key with one came or went.
	if budgets {
		errs = append(errs, validateQuotas(s)...)
	}
	return errors.Join(errs...)
}
