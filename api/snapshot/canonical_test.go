package snapshot

import (
	"bytes"
	"math"
	"os"
	"testing"
	"time"

	"github.com/go-json-experiment/json/jsontext"
)

// escapesSnapshot has every kind of string the canonical form escapes (or
// must not escape), nil and empty lists, zero and extreme numbers and a
// time in a zone other than UTC. It is neither normalized nor valid: the
// canonical form is defined for any snapshot.
func escapesSnapshot() *Snapshot {
	at := time.Date(2026, 1, 2, 3, 4, 5, 600, time.FixedZone("", 5*3600+30*60))
	return &Snapshot{
		Providers: []Provider{{
			Name: `quo"te back\slash`, Protocol: "tab\tnew\nline\rcr", BaseURL: "<script>&amp;</script>",
			Credential:       &Credential{File: "\x00\x01\x1f\x7f \b\f"},
			ConnectTimeoutMs: -1,
			Prices:           []Price{{Model: "héllo 日本語 🦀 \uffff\U0010ffff", EffectiveFrom: &at}},
		}},
		Aliases: []Alias{{Name: "line\u2028para\u2029", Primary: Route{"bad\xffutf8", "\xed\xa0\x80 trunc\xe6\x97"}}},
		Keys: []Key{
			{ID: "k1", ExpiresAt: &at, TokensPerMinute: 7, Budget: &Budget{Amount: "1.5"}, Group: "g"},
			{ID: "k0", Models: []string{}, Prefix: "\ufffd", Hash: "/slash/ \x1b[31m"},
		},
		Groups: []Group{{Name: "g"}, {Name: "h", TokensPerMinute: math.MaxInt64, Budget: &Budget{}}},
		Limits: Limits{MaxBodyBytes: math.MaxInt64, MaxMessages: math.MinInt64},
	}
}

// TestCanonicalEscapes pins the canonical bytes of escapesSnapshot, and the
// compact form's to the same spelling: how strings, nulls and numbers are
// written is part of every version.
func TestCanonicalEscapes(t *testing.T) {
	got, err := canonical(escapesSnapshot())
	if err != nil {
		t.Fatal(err)
	}
	const golden = "testdata/escapes.canonical.json"
	if *update {
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("canonical encoding differs from %s:\n%s", golden, got)
	}
	compact, err := encodeCompact(nil, escapesSnapshot())
	if err != nil {
		t.Fatal(err)
	}
	wantCompact := jsontext.Value(bytes.Clone(want))
	if err := wantCompact.Compact(); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(compact, wantCompact) {
		t.Fatalf("compact form differs from the compacted canonical form:\n%s\n%s", compact, wantCompact)
	}
}

func TestCanonicalRefusesWhatRFC3339CannotSay(t *testing.T) {
	s := escapesSnapshot()
	year := time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)
	s.Keys[0].ExpiresAt = &year
	if _, err := canonical(s); err == nil {
		t.Fatal("a year past 9999 was encoded")
	}
	if CanonicalKey(&s.Keys[0]) != nil {
		t.Fatal("CanonicalKey returned a piece for a key it cannot encode")
	}
}

// TestEncodeSplicesVersion: Encode's spliced version equals a full second
// encoding with the version set.
func TestEncodeSplicesVersion(t *testing.T) {
	s := validSnapshot()
	got, err := Encode(s)
	if err != nil {
		t.Fatal(err)
	}
	want, err := canonical(s)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("spliced:\n%s\nencoded:\n%s", got, want)
	}
	if _, ok := withVersion([]byte(`{"a": 1}`), "v"); ok {
		t.Fatal("withVersion found a version member where there is none")
	}
}

// BenchmarkCanonical50k is the canonical encoding alone at 50,000 keys
// (go test -bench Canonical50k).
func BenchmarkCanonical50k(b *testing.B) {
	s := manyKeys(50_000)
	if _, err := Encode(s); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := canonical(s); err != nil {
			b.Fatal(err)
		}
	}
}
