package snapshot

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
)

// A gateway fed by parts (shard.go) reloads on every change, and sealing the
// assembled snapshot the way Encode does — normalize, validate and encode
// 50,000 keys, hash the encoding — cost about 0.6 s of CPU for a one-key
// change. The parts make most of that work redundant: each key shard is
// checked once, when it is decoded (CheckKeyPart), and the version is the
// head's, whose parts were each verified against their content hash
// (ReadPart). SealAssembled keeps every check that spans objects.

// CheckKeyPart normalizes the keys of one decoded shard in place and checks
// each on its own: everything Validate checks about a key except what needs
// the other parts (unique ids and prefixes, models naming served aliases,
// one currency), which SealAssembled checks.
func CheckKeyPart(keys []Key) error {
	var errs []error
	for i := range keys {
		k := &keys[i]
		k.Normalize()
		obj := "key " + label(k.ID, i)
		errs = append(errs, validateKey(obj, k, false)...)
		for _, err := range findPlaintextKeys(k) {
			errs = append(errs, fmt.Errorf("%s: %w", obj, err))
		}
	}
	return errors.Join(errs...)
}

// SealAssembled finishes a snapshot that Assemble built from parts whose key
// shards passed CheckKeyPart: it normalizes a copy of everything but the
// keys (which it leaves shared with the shards, read-only), runs
// Validate's checks across the whole snapshot (skipping only the per-key
// ones done already), and sets Version to the head's version. The result is
// what Encode of the same snapshot would leave, without re-encoding it.
func SealAssembled(s *Snapshot, version string) error {
	if version == "" {
		return errors.New("sealing an assembled snapshot: no version")
	}
	keys := s.Keys
	// Assemble's result shares the config part's slices with the cached
	// part (and so with the snapshot running now): normalize a copy of
	// that small part, never the shared one.
	s.Keys = nil
	*s = *s.Clone()
	s.Keys = keys
	s.normalizeCheckedKeys()
	if err := s.validate(true); err != nil {
		return fmt.Errorf("invalid snapshot: %w", err)
	}
	s.Version = version
	return nil
}

// SealCheckedKeys is Encode, without returning the encoding, for a snapshot
// whose keys were each normalized and passed ValidateKey already — the
// controller remembers that per GatewayKey generation, so a one-key change
// does not check 50,000 keys again. Everything else is normalized and
// validated as Encode does, every check across keys is made, and the
// version is set.
func SealCheckedKeys(s *Snapshot) error { return SealCheckedKeysWith(s, nil) }

// SealCheckedKeysWith is SealCheckedKeys taking each key's piece of the
// canonical encoding from piece when it returns one (CanonicalKey of that
// very key, kept from an earlier compile), so that the keys need not be
// encoded again for the version. It is SealCheckedKeysPatchable without
// keeping the patcher: one writer of the keys' bytes for the version.
func SealCheckedKeysWith(s *Snapshot, piece func(*Key) []byte) error {
	_, err := SealCheckedKeysPatchable(s, piece)
	return err
}

// normalizeCheckedKeys is Normalize for keys that are normalized already:
// they are only put in id order (a no-op when they are, as assembled).
func (s *Snapshot) normalizeCheckedKeys() {
	keys := s.Keys
	s.Keys = nil
	s.Normalize()
	if !slices.IsSortedFunc(keys, func(a, b Key) int { return cmp.Compare(a.ID, b.ID) }) {
		slices.SortStableFunc(keys, func(a, b Key) int { return cmp.Compare(a.ID, b.ID) })
	}
	s.Keys = nonNil(keys)
}
