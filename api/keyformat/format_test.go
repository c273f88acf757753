package keyformat

import (
	"crypto/sha256"
	"encoding/hex"
	"regexp"
	"strings"
	"testing"
)

var keyPattern = regexp.MustCompile(`^lgw_[a-z0-9]{10}_[A-Za-z0-9]{40}$`)

func TestGenerate(t *testing.T) {
	seen := map[string]bool{}
	var chars [256]int
	for range 200 {
		plain, prefix, hash, err := Generate()
		if err != nil {
			t.Fatal(err)
		}
		if !keyPattern.MatchString(plain) {
			t.Fatalf("key %q does not match %v", plain, keyPattern)
		}
		if seen[plain] || seen[prefix] {
			t.Fatalf("duplicate key or prefix after %d keys", len(seen)/2)
		}
		seen[plain], seen[prefix] = true, true
		if got, ok := PrefixOf(plain); !ok || got != prefix || !ValidPrefix(prefix) {
			t.Fatalf("PrefixOf(%q) = %q, %v; Generate said %q", plain, got, ok, prefix)
		}
		if hash != Hash(plain) || !ValidHash(hash) || !Verify(plain, hash) {
			t.Fatalf("hash %q inconsistent with key", hash)
		}
		for _, c := range []byte(plain[15:]) {
			chars[c]++
		}
	}
	// 200 keys × 40 chars over 62 symbols ≈ 129 each: every symbol must show up,
	// which catches a truncated or mis-indexed alphabet.
	for _, c := range []byte(secretChar) {
		if chars[c] == 0 {
			t.Errorf("secret character %q never generated", c)
		}
	}
}

func TestHashAndFingerprint(t *testing.T) {
	const plain = "lgw_abcdefghij_ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmn"
	sum := sha256.Sum256([]byte(plain))
	want := "sha256:" + hex.EncodeToString(sum[:])
	if got := Hash(plain); got != want {
		t.Fatalf("Hash = %q, want %q", got, want)
	}
	fsum := sha256.Sum256([]byte(want))
	fp := Fingerprint(want)
	if fp != hex.EncodeToString(fsum[:])[:12] {
		t.Fatalf("Fingerprint = %q, want the first 12 hex of sha256(hash)", fp)
	}
	if strings.Contains(want, fp) {
		t.Fatalf("fingerprint %q is a substring of the hash; it must not be derivable by truncation", fp)
	}
}

func TestVerify(t *testing.T) {
	plain, _, hash, _ := Generate()
	other, _, _, _ := Generate()
	cases := []struct {
		name        string
		plain, hash string
		want        bool
	}{
		{"match", plain, hash, true},
		{"other key", other, hash, false},
		{"one char changed", plain[:len(plain)-1] + flip(plain[len(plain)-1]), hash, false},
		{"uppercase hex", plain, "sha256:" + strings.ToUpper(hash[7:]), false},
		{"no algorithm", plain, hash[7:], false},
		{"truncated hash", plain, hash[:len(hash)-1], false},
		{"empty", "", "", false},
		{"plaintext as hash", plain, plain, false},
	}
	for _, c := range cases {
		if got := Verify(c.plain, c.hash); got != c.want {
			t.Errorf("%s: Verify = %v, want %v", c.name, got, c.want)
		}
	}
}

func flip(c byte) string {
	if c == 'a' {
		return "b"
	}
	return "a"
}

func TestPrefixOfMalformed(t *testing.T) {
	good := "lgw_abcdefghij_ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmn"
	if _, ok := PrefixOf(good); !ok {
		t.Fatal("well-formed key rejected")
	}
	for _, s := range []string{
		"",
		"lgw_",
		good[:len(good)-1],
		good + "x",
		"LGW_" + good[4:],
		"lgw_ABCDEFGHIJ" + good[14:],       // id must be lowercase
		"lgw_abcdefghij-" + good[15:],      // separator
		good[:20] + "-" + good[21:],        // secret charset
		"lgw_abcdefghi_" + good[14:] + "A", // id too short
		"Bearer " + good,                   // caller must strip the scheme
		"lgw_abcdefghij_ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklm\x00", // NUL
	} {
		if p, ok := PrefixOf(s); ok {
			t.Errorf("PrefixOf(%q) = %q, true; want false", s, p)
		}
	}
}

func TestValidHashAndPrefix(t *testing.T) {
	h := Hash("x")
	hashes := map[string]bool{
		h:                                   true,
		"sha256:" + strings.Repeat("0", 64): true,
		"sha256:" + strings.Repeat("g", 64): false,
		"sha256:" + strings.Repeat("A", 64): false,
		"SHA256:" + h[7:]:                   false,
		"sha512:" + h[7:]:                   false,
		h + "0":                             false,
		h[:70]:                              false,
		"":                                  false,
	}
	for s, want := range hashes {
		if ValidHash(s) != want {
			t.Errorf("ValidHash(%q) = %v", s, !want)
		}
	}
	prefixes := map[string]bool{
		"lgw_abcdefghij":  true,
		"lgw_0123456789":  true,
		"lgw_abcdefghi":   false,
		"lgw_abcdefghijk": false,
		"lgw_ABCDEFGHIJ":  false,
		"lgx_abcdefghij":  false,
		"lgw_abcde-ghij":  false,
		"":                false,
	}
	for s, want := range prefixes {
		if ValidPrefix(s) != want {
			t.Errorf("ValidPrefix(%q) = %v", s, !want)
		}
	}
}

func BenchmarkVerify(b *testing.B) {
	plain, _, hash, _ := Generate()
	for b.Loop() {
		Verify(plain, hash)
	}
}
