package snapshot

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
)

// Encode normalizes and validates s in place, sets s.Version, and returns the
// canonical encoding.
//
// Canonical form: JSON with object keys sorted bytewise at every level, two-space
// indentation, no HTML escaping, one trailing newline. Sorting keys (instead of
// relying on Go struct field order) keeps versions stable across refactors of
// this package; indentation keeps ConfigMaps and files reviewable in diffs. The
// version is "sha256:" + hex of SHA-256 of exactly these bytes with version "".
func Encode(s *Snapshot) ([]byte, error) {
	s.Normalize()
	if err := s.Validate(); err != nil {
		return nil, fmt.Errorf("invalid snapshot: %w", err)
	}
	v, err := computeVersion(s)
	if err != nil {
		return nil, err
	}
	s.Version = v
	return canonical(s)
}

// computeVersion hashes the canonical bytes of s with Version cleared; s must be
// normalized.
func computeVersion(s *Snapshot) (string, error) {
	c := *s
	c.Version = ""
	b, err := canonical(&c)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:]), nil
}

// canonical re-encodes s through a generic tree because encoding/json writes map
// keys sorted; UseNumber keeps integers exact.
func canonical(s *Snapshot) ([]byte, error) {
	raw, err := json.Marshal(s)
	if err != nil {
		return nil, fmt.Errorf("encoding snapshot: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var tree any
	if err := dec.Decode(&tree); err != nil {
		return nil, fmt.Errorf("encoding snapshot: %w", err)
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(tree); err != nil {
		return nil, fmt.Errorf("encoding snapshot: %w", err)
	}
	return buf.Bytes(), nil
}
