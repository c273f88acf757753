package controllers

import (
	"github.com/llmgw/llmgw/api/keyformat"
	"github.com/llmgw/llmgw/api/snapshot"
	"github.com/llmgw/llmgw/api/v1alpha1"

	"k8s.io/apimachinery/pkg/types"
)

// CompileMemo remembers what each GatewayKey compiles to on its own — its
// snapshot entry normalized, ValidateKey's verdict, its fingerprint and
// entry digest — for as long as the object keeps its UID, its generation
// (spec changes bump the generation) and its owner labels (which change
// without a new generation). At 50,000 keys, validating every key
// (hash, plaintext scan) and hashing every entry again for a one-key
// change was most of a compilation. What depends on other objects (claims
// on prefix and hash, served aliases, currency, expiry) is decided afresh,
// in full or, when only keys changed, for the keys that changed
// (compileincr.go). The zero value is ready; nil remembers nothing.
//
// Not safe for concurrent use: the reconciler compiles one at a time.
type CompileMemo struct {
	keys map[string]*keyMemo // by objectID
	// last is the last compilation when patch may change it (compileincr.go).
	last *lastRound
	// stamp numbers the walks over the objects (compileincr.go).
	stamp uint64
	// patches counts the compilations patched (tests tell from it that
	// they exercised patch).
	patches int
}

// NewCompileMemo returns an empty memo.
func NewCompileMemo() *CompileMemo { return &CompileMemo{} }

type keyMemo struct {
	uid        types.UID
	generation int64
	// slot is the key's in the last round's keySlots (compileincr.go);
	// next to what the walk over the keys reads, in one cache line.
	slot int32
	// key is the normalized entry with every model of the spec; shared
	// with compiled snapshots, so never written after it is made.
	key         snapshot.Key
	invalid     string // ValidateKey's message on one line; "" when valid
	fingerprint string
	// previousFingerprint is spec.previous.keyHash's fingerprint.
	previousFingerprint string
	// digest and canonical are the entry's digest and its piece of the
	// snapshot's canonical encoding with every model served; empty until
	// first needed.
	digest    string
	canonical []byte
	// compact is the entry's compact JSON as a key shard holds it (for
	// publish's Split); nil until first needed.
	compact []byte
}

// key returns gk's memo entry, made now if gk is new or changed. Objects
// without a UID or generation (built in tests) are compiled afresh. home is
// the controller's namespace (objectID); ownerLabels the label keys copied
// into the entry's owners.
func (m *CompileMemo) key(home string, ownerLabels []string, gk *v1alpha1.GatewayKey) *keyMemo {
	id := objectID(home, gk)
	cacheable := m != nil && gk.UID != "" && gk.Generation != 0
	if cacheable {
		if e, ok := m.keys[id]; ok && e.describes(gk, ownerLabels) {
			return e
		}
	}
	e := newKeyMemo(home, ownerLabels, gk)
	switch {
	case cacheable:
		if m.keys == nil {
			m.keys = map[string]*keyMemo{}
		}
		m.keys[id] = e
	case m != nil:
		delete(m.keys, id) // every entry describes the object compiled now
	}
	return e
}

// describes says whether e was made from gk as it is: the same UID and
// generation, and the same owner labels.
func (e *keyMemo) describes(gk *v1alpha1.GatewayKey, ownerLabels []string) bool {
	return e.uid == gk.UID && e.generation == gk.Generation && sameOwners(e.key.Owners, gk.Labels, ownerLabels)
}

func newKeyMemo(home string, ownerLabels []string, gk *v1alpha1.GatewayKey) *keyMemo {
	s := gk.Spec
	e := &keyMemo{uid: gk.UID, generation: gk.Generation}
	k := snapshot.Key{ID: objectID(home, gk), Prefix: s.KeyPrefix, Hash: s.KeyHash, Disabled: s.Disabled, Models: append([]string(nil), s.Models...),
		Owners: ownersOf(gk.Labels, ownerLabels)}
	keyQuotas(&s, &k)
	k.Group = qualify(home, gk.Namespace, s.Group) // a key's group is in its own namespace
	if s.RateLimit != nil {
		k.RateLimit = snapshot.RateLimit{RPM: int(s.RateLimit.RequestsPerMinute), Burst: int(s.RateLimit.Burst)}
	}
	if s.ExpiresAt != nil {
		t := s.ExpiresAt.UTC()
		k.ExpiresAt = &t
	}
	if keyformat.ValidHash(s.KeyHash) {
		e.fingerprint = keyformat.Fingerprint(s.KeyHash)
	}
	if p := s.Previous; p != nil {
		// Validated with the key (ValidateKey): a plaintext key here makes
		// the key invalid, and is never fingerprinted.
		k.Previous = &snapshot.PreviousKey{Prefix: p.KeyPrefix, Hash: p.KeyHash, Until: p.AcceptedUntil.UTC()}
		if keyformat.ValidHash(p.KeyHash) {
			e.previousFingerprint = keyformat.Fingerprint(p.KeyHash)
		}
	}
	k.Normalize()
	if err := snapshot.ValidateKey(&k); err != nil {
		e.invalid = oneLine(err)
	}
	e.key = k
	return e
}

// entry is the memo's entry when k, a compiled entry, is exactly it: the
// key with every model of its spec served (a compiled key differs from its
// entry only by models left out).
func (m *CompileMemo) entry(k *snapshot.Key) *keyMemo {
	if m == nil {
		return nil
	}
	if e, ok := m.keys[k.ID]; ok && len(k.Models) == len(e.key.Models) {
		return e
	}
	return nil
}

// digest is the digest of k, a compiled entry: remembered when k is the
// memo's entry, computed otherwise.
func (m *CompileMemo) digest(k *snapshot.Key) string {
	e := m.entry(k)
	if e == nil {
		return digest(k)
	}
	if e.digest == "" {
		e.digest = digest(&e.key)
	}
	return e.digest
}

// piece is k's piece of the canonical encoding when k is the memo's entry
// (kept from its first compile), nil otherwise: the snapshot's version is
// hashed from kept pieces instead of encoding 50,000 keys again.
func (m *CompileMemo) piece(k *snapshot.Key) []byte {
	e := m.entry(k)
	if e == nil {
		return nil
	}
	if e.canonical == nil {
		e.canonical = snapshot.CanonicalKey(&e.key)
	}
	return e.canonical
}

// retain forgets keys that are gone. Every key compiled has an entry (or
// none), so only more entries than keys means some are stale.
func (m *CompileMemo) retain(home string, keys []v1alpha1.GatewayKey) {
	if m == nil || len(m.keys) <= len(keys) {
		return
	}
	present := make(map[string]bool, len(keys))
	for i := range keys {
		present[objectID(home, &keys[i])] = true
	}
	for name := range m.keys {
		if !present[name] {
			delete(m.keys, name)
		}
	}
}

// compactPiece is k's compact JSON for a key shard when k is the memo's
// entry (kept from the first split that needed it), nil otherwise: Split
// then encodes only the keys that changed.
func (m *CompileMemo) compactPiece(k *snapshot.Key) []byte {
	e := m.entry(k)
	if e == nil {
		return nil
	}
	if e.compact == nil {
		b, err := snapshot.CompactKey(&e.key)
		if err != nil {
			return nil // Split encodes it and reports the error
		}
		e.compact = b
	}
	return e.compact
}
