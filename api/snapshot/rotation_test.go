package snapshot

import (
	"strings"
	"testing"
	"time"
)

// A rotated key and owner labels survive the canonical encoding, and the
// compiled index finds the key by either prefix with the matching hash.
func TestRotationAndOwnersRoundTrip(t *testing.T) {
	s := validSnapshot()
	until := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	k := &s.Keys[0]
	k.Previous = &PreviousKey{Prefix: "lgw_keyccccccc", Hash: hashB, Until: until}
	k.Owners = map[string]string{"team": "a", "example.com/cost-center": "cc-1"}
	s.Groups = []Group{{Name: "g", Owners: map[string]string{"team": "g", "env": "prod"}}}
	k.Group = "g"
	data, err := Encode(s)
	if err != nil {
		t.Fatal(err)
	}
	back, err := Parse(data)
	if err != nil {
		t.Fatalf("parse: %v\n%s", err, data)
	}
	c := Compile(back)
	for _, tc := range []struct {
		prefix, hash string
		previous     bool
	}{{"lgw_keyaaaaaaa", hashA, false}, {"lgw_keyccccccc", hashB, true}} {
		got, ok := c.KeyByPrefix(tc.prefix)
		if !ok || got.ID != "key-a" {
			t.Fatalf("KeyByPrefix(%s) = %v, %v", tc.prefix, got, ok)
		}
		if h, prev := got.HashFor(tc.prefix); h != tc.hash || prev != tc.previous {
			t.Errorf("HashFor(%s) = %s, %v", tc.prefix, h, prev)
		}
	}
	got, _ := c.KeyByPrefix("lgw_keyaaaaaaa")
	if !got.Previous.Until.Equal(until) || got.Previous.Accepts(until) || !got.Previous.Accepts(until.Add(-time.Second)) {
		t.Errorf("previous until = %v", got.Previous.Until)
	}
	g, _ := c.Group("g")
	owners := RecordOwners(got, g)
	if owners["team"] != "a" || owners["env"] != "prod" || owners["example.com/cost-center"] != "cc-1" || len(owners) != 3 {
		t.Errorf("RecordOwners = %v", owners)
	}
	if !strings.Contains(string(data), `"previous"`) || !strings.Contains(string(data), `"owners"`) {
		t.Errorf("encoding lacks previous/owners:\n%s", data)
	}
}

func TestRotationAndOwnersValidation(t *testing.T) {
	until := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name string
		edit func(s *Snapshot)
		want []string
	}{
		{"previous prefix is own", func(s *Snapshot) {
			s.Keys[0].Previous = &PreviousKey{Prefix: s.Keys[0].Prefix, Hash: hashB, Until: until}
		}, []string{"previous.prefix is the key's own prefix"}},
		{"previous prefix is another key's", func(s *Snapshot) {
			s.Keys[0].Previous = &PreviousKey{Prefix: "lgw_keybbbbbbb", Hash: hashB, Until: until}
		}, []string{"lgw_keybbbbbbb", `also key "key-`}},
		{"previous hash is plaintext", func(s *Snapshot) {
			s.Keys[0].Previous = &PreviousKey{Prefix: "lgw_keyccccccc", Hash: plainB, Until: until}
		}, []string{"previous.hash must be"}},
		{"previous without until", func(s *Snapshot) {
			s.Keys[0].Previous = &PreviousKey{Prefix: "lgw_keyccccccc", Hash: hashB}
		}, []string{"previous.until must be set"}},
		{"owner label key", func(s *Snapshot) {
			s.Keys[0].Owners = map[string]string{"bad key": "x"}
		}, []string{`owners: "bad key" is not a Kubernetes label key`}},
		{"owner label value", func(s *Snapshot) {
			s.Groups = []Group{{Name: "g", Owners: map[string]string{"team": "a b"}}}
		}, []string{`group "g": owners[team]`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := validSnapshot()
			tc.edit(s)
			mustContainAll(t, s.Validate(), tc.want...)
		})
	}
}
