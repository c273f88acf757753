package keys

import (
	"errors"
	"fmt"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/llmgw/llmgw/api/keyformat"
	"github.com/llmgw/llmgw/api/snapshot"
	"github.com/llmgw/llmgw/api/v1alpha1"
)

// Rotation grace: how long the replaced key keeps working beside the new
// one, so clients can move without an outage.
const (
	DefaultRotationGrace = 24 * time.Hour
	// MaxRotationGrace bounds the grace: a key that was replaced (perhaps
	// because it leaked) should not stay valid for a season.
	MaxRotationGrace = 90 * 24 * time.Hour
)

// checkGrace refuses a grace Rotate does not take.
func checkGrace(grace time.Duration) error {
	if grace < 0 || grace > MaxRotationGrace {
		return fmt.Errorf("grace %s must be within 0s..%s (90 days); 0 stops the previous key at once", grace, MaxRotationGrace)
	}
	return nil
}

// rotation is what rotating a key yields: the new key, once, and the
// hash-only pieces of the entry that replaces the old one.
type rotation struct {
	plaintext, prefix, hash string
	// previous is the key replaced, accepted until previous.Until.
	previous snapshot.PreviousKey
	// dropped is the key the old one had itself replaced, when it was still
	// in its grace: the new entry has room for one previous key, so that
	// one stops being accepted at once. nil when there was none, or its
	// grace had ended.
	dropped *snapshot.PreviousKey
}

// rotate generates the key that replaces the one of prefix and hash (whose
// own previous key, if any, is prev), accepting the old one until now +
// grace (whole seconds: a GatewayKey's time has no finer ones).
func rotate(id, prefix, hash string, prev *snapshot.PreviousKey, grace time.Duration, now time.Time) (rotation, error) {
	if err := checkGrace(grace); err != nil {
		return rotation{}, err
	}
	if !keyformat.ValidPrefix(prefix) || !keyformat.ValidHash(hash) {
		return rotation{}, fmt.Errorf("key %s has no valid prefix and hash to rotate from (prefix %q followed by 10 chars of [a-z0-9], hash %q followed by 64 lowercase hex chars)",
			quoteRedacted(id), keyformat.Prefix, keyformat.HashPrefix)
	}
	r := rotation{previous: snapshot.PreviousKey{Prefix: prefix, Hash: hash, Until: now.Add(grace).UTC().Truncate(time.Second)}}
	// A new prefix, never one the entry names already (the index finds a key
	// by either of its prefixes); with 36^10 of them a retry never happens.
	for r.prefix == "" || r.prefix == prefix || (prev != nil && r.prefix == prev.Prefix) {
		var err error
		if r.plaintext, r.prefix, r.hash, err = generate(); err != nil {
			return rotation{}, err
		}
	}
	if prev.Accepts(now) {
		d := *prev
		r.dropped = &d
	}
	return r, nil
}

// Rotate replaces entry's key with a new one, generated as Create does: it
// returns the new key's plaintext (the only time it exists) and the entry
// to store instead of entry, which keeps entry's id and every other field,
// has the new key's prefix and hash, and names entry's key as its Previous,
// accepted until now + grace (0 ≤ grace ≤ MaxRotationGrace; 0 stops it at
// once: the gateways answer it 401 key_rotated, not invalid_api_key).
//
// dropped is the key entry had itself replaced when it was still in its
// grace at now: the rotated entry keeps only one previous key, so that one
// stops being accepted. The caller should say so.
func Rotate(entry snapshot.Key, grace time.Duration, now time.Time) (plaintext string, rotated snapshot.Key, dropped *snapshot.PreviousKey, err error) {
	r, err := rotate(entry.ID, entry.Prefix, entry.Hash, entry.Previous, grace, now)
	if err != nil {
		return "", snapshot.Key{}, nil, err
	}
	rotated = entry
	rotated.Models = slices.Clone(entry.Models)
	rotated.Prefix, rotated.Hash = r.prefix, r.hash
	rotated.Previous = &r.previous
	rotated.Normalize()
	if err := snapshot.ValidateKey(&rotated); err != nil {
		return "", snapshot.Key{}, nil, err
	}
	return r.plaintext, rotated, r.dropped, nil
}

// rotateGatewayKey rotates the key of a GatewayKey as the cluster has it
// (readGatewayKey): the returned resource keeps its name, namespace,
// labels, annotations and resourceVersion (so that applying it fails if
// the key changed meanwhile) and its spec but for the key, whose previous
// is the old one; entry is the rotated key as a snapshot entry, with
// metadata.name for its id. Server-owned metadata and the status are left
// out: they are not the user's to apply.
func rotateGatewayKey(in *v1alpha1.GatewayKey, grace time.Duration, now time.Time) (plaintext string, out *v1alpha1.GatewayKey, entry snapshot.Key, dropped *snapshot.PreviousKey, err error) {
	old := entryOf(in)
	if err := snapshot.ValidateKey(&old); err != nil {
		return "", nil, snapshot.Key{}, nil, fmt.Errorf("the GatewayKey to rotate: %w", err)
	}
	r, err := rotate(in.Name, in.Spec.KeyPrefix, in.Spec.KeyHash, old.Previous, grace, now)
	if err != nil {
		return "", nil, snapshot.Key{}, nil, err
	}
	out = &v1alpha1.GatewayKey{
		TypeMeta: metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: gatewayKeyKind},
		ObjectMeta: metav1.ObjectMeta{Name: in.Name, Namespace: in.Namespace, Labels: in.Labels, Annotations: in.Annotations,
			ResourceVersion: in.ResourceVersion},
		Spec: *in.Spec.DeepCopy(),
	}
	out.Spec.KeyPrefix, out.Spec.KeyHash = r.prefix, r.hash
	out.Spec.Previous = &v1alpha1.PreviousKey{KeyHash: r.previous.Hash, KeyPrefix: r.previous.Prefix, AcceptedUntil: metav1.NewTime(r.previous.Until)}
	entry = entryOf(out)
	if err := snapshot.ValidateKey(&entry); err != nil {
		return "", nil, snapshot.Key{}, nil, err
	}
	return r.plaintext, out, entry, r.dropped, nil
}

// entryOf is gk's key as a snapshot entry, normalized, with gk's
// metadata.name for its id (the controller names a key of another
// namespace than its own NAMESPACE/NAME in its snapshot).
func entryOf(gk *v1alpha1.GatewayKey) snapshot.Key {
	s := &gk.Spec
	k := snapshot.Key{ID: gk.Name, Prefix: s.KeyPrefix, Hash: s.KeyHash, Models: slices.Clone(s.Models), Disabled: s.Disabled,
		TokensPerMinute: s.TokensPerMinute, Group: s.Group}
	if rl := s.RateLimit; rl != nil {
		k.RateLimit = snapshot.RateLimit{RPM: int(rl.RequestsPerMinute), Burst: int(rl.Burst)}
	}
	if b := s.Budget; b != nil {
		k.Budget = &snapshot.Budget{Amount: b.Amount, Currency: b.Currency, Period: string(b.Period)}
	}
	if s.ExpiresAt != nil {
		t := s.ExpiresAt.Time
		k.ExpiresAt = &t
	}
	if p := s.Previous; p != nil {
		k.Previous = &snapshot.PreviousKey{Prefix: p.KeyPrefix, Hash: p.KeyHash, Until: p.AcceptedUntil.Time}
	}
	k.Normalize()
	return k
}

// errNotAGatewayKey words a --from document that is not one GatewayKey.
var errNotAGatewayKey = errors.New("want one GatewayKey, as `kubectl get gatewaykey NAME -o yaml` prints it")
