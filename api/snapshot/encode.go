package snapshot

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
)

// Encode normalizes and validates s in place, sets s.Version, and returns the
// canonical encoding.
//
// Canonical form: JSON with object members sorted by name at every level,
// each member and element on its own line indented two spaces a level, a
// space after each colon, one trailing newline. Strings escape '"', '\\',
// control characters (\b \f \n \r \t, else \u00xx) and U+2028/U+2029 only;
// an invalid UTF-8 byte is written as U+FFFD. Sorting keys (instead of
// relying on Go struct field order) keeps versions stable across refactors of
// this package; indentation keeps ConfigMaps and files reviewable in diffs. The
// version is "sha256:" + hex of SHA-256 of exactly these bytes with version "".
func Encode(s *Snapshot) ([]byte, error) {
	s.Normalize()
	if err := s.Validate(); err != nil {
		return nil, fmt.Errorf("invalid snapshot: %w", err)
	}
	return seal(s)
}

// seal sets the version of a normalized, valid s and returns its canonical
// encoding.
func seal(s *Snapshot) ([]byte, error) {
	s.Version = ""
	blank, err := canonical(s)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(blank)
	s.Version = "sha256:" + hex.EncodeToString(sum[:])
	// The versioned bytes differ from the hashed ones only inside the empty
	// version string, so they are spliced rather than encoded a second time.
	if b, ok := withVersion(blank, s.Version); ok {
		return b, nil
	}
	return canonical(s)
}

// versionAt is the top-level version member of a canonical encoding with an
// empty version. Only top-level members start a line with exactly two spaces
// of indentation, and a newline inside a string value is always escaped, so
// it occurs once.
var versionAt = []byte("\n  \"version\": \"\"")

// withVersion writes v into the empty version string of canonical bytes.
func withVersion(blank []byte, v string) ([]byte, bool) {
	i := bytes.Index(blank, versionAt)
	if i < 0 {
		return nil, false
	}
	at := i + len(versionAt) - 1 // the closing quote
	b := make([]byte, 0, len(blank)+len(v))
	b = append(b, blank[:at]...)
	b = append(b, v...)
	return append(b, blank[at:]...), true
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

// canonical is the canonical encoding of s (see Encode).
func canonical(s *Snapshot) ([]byte, error) {
	b, err := appendJSON(nil, s, 0)
	if err != nil {
		return nil, fmt.Errorf("encoding snapshot: %w", err)
	}
	return append(b, '\n'), nil
}
