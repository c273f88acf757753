package snapshot

import (
	"bytes"
	"reflect"
	"slices"
	"testing"
)

// sealParts is what the Kubernetes source does with a head's parts: check
// each decoded shard, assemble, seal with the head's version.
func sealParts(t *testing.T, h Head, data map[string][]byte) (*Snapshot, error) {
	t.Helper()
	s := reassemble(t, h, data)
	// reassemble decoded the shards; check them as the assembler does.
	if err := CheckKeyPart(s.Keys); err != nil {
		return nil, err
	}
	return s, SealAssembled(s, h.Version)
}

// TestSealAssembledEqualsEncode: sealing the assembled parts leaves exactly
// the snapshot Encode leaves, and the head's version is the hash of its
// canonical form — the work skipped is redundant, not a different answer.
func TestSealAssembledEqualsEncode(t *testing.T) {
	withQuotas := manyKeys(500)
	withQuotas.Groups = []Group{{Name: "team", TokensPerMinute: 5000, Budget: &Budget{Amount: "10", Currency: "USD"}}}
	withQuotas.Keys[7].Group, withQuotas.Keys[9].Budget = "team", &Budget{Amount: "1.5", Currency: "USD"}
	cases := []struct {
		name       string
		snap       *Snapshot
		shardBytes int
	}{
		{"empty", &Snapshot{}, 0},
		{"demo", validSnapshot(), 0},
		{"3000 keys in 64 shards", manyKeys(3000), 16 << 10},
		{"groups and budgets", withQuotas, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			sealed(t, c.snap)
			h, parts, err := Split(c.snap, SplitOptions{Head: "llmgw-snapshot", ShardBytes: c.shardBytes})
			if err != nil {
				t.Fatal(err)
			}
			data := map[string][]byte{}
			for _, p := range parts {
				data[p.Name] = p.Data
			}
			got, err := sealParts(t, h, data)
			if err != nil {
				t.Fatal(err)
			}
			v, err := computeVersion(got)
			if err != nil {
				t.Fatal(err)
			}
			if got.Version != c.snap.Version || v != c.snap.Version {
				t.Fatalf("sealed version %s, its canonical form hashes to %s, want %s", got.Version, v, c.snap.Version)
			}
			if !reflect.DeepEqual(got, c.snap) {
				t.Fatal("the sealed snapshot differs from the encoded one")
			}
		})
	}
}

// TestSealAssembledRefuses: what spans parts is still checked, and so is
// each key of a shard.
func TestSealAssembledRefuses(t *testing.T) {
	key := func(id, prefix string, models ...string) Key {
		return Key{ID: id, Prefix: prefix, Hash: hashA, Models: models}
	}
	cases := []struct {
		name    string
		edit    func(config *Snapshot, keys *[]Key)
		version string
		want    []string
	}{
		{"model names no alias", func(_ *Snapshot, keys *[]Key) {
			*keys = append(*keys, key("k1", "lgw_k1aaaaaaaa", "gone"))
		}, "sha256:x", []string{`key "k1"`, `alias "gone" does not exist`}},
		{"prefix used twice", func(_ *Snapshot, keys *[]Key) {
			*keys = append(*keys, key("k1", "lgw_k1aaaaaaaa", "*"), key("k2", "lgw_k1aaaaaaaa", "*"))
		}, "sha256:x", []string{`key "k2"`, "duplicate key prefix"}},
		{"second currency", func(config *Snapshot, keys *[]Key) {
			config.Groups = []Group{{Name: "g", Budget: &Budget{Amount: "1", Currency: "EUR"}}}
			k := key("k1", "lgw_k1aaaaaaaa", "*")
			k.Budget = &Budget{Amount: "1", Currency: "USD"}
			*keys = append(*keys, k)
		}, "sha256:x", []string{"a snapshot has one currency"}},
		{"alias naming no provider (config part)", func(config *Snapshot, _ *[]Key) {
			config.Aliases[0].Primary.Provider = "nobody"
		}, "sha256:x", []string{`alias "chat-alpha"`}},
		{"no version", func(*Snapshot, *[]Key) {}, "", []string{"no version"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			config := validSnapshot()
			config.Keys = nil
			var keys []Key
			c.edit(config, &keys)
			if err := CheckKeyPart(keys); err != nil {
				t.Fatalf("each key is valid on its own: %v", err)
			}
			config.Keys = keys
			mustContainAll(t, SealAssembled(config, c.version), c.want...)
		})
	}
}

func TestCheckKeyPartRefuses(t *testing.T) {
	cases := []struct {
		name string
		key  Key
		want []string
	}{
		{"bad hash", Key{ID: "k1", Prefix: "lgw_k1aaaaaaaa", Hash: "sha256:00", Models: []string{"*"}}, []string{`key "k1"`, "hash must be"}},
		{"plaintext key as a model", Key{ID: "k1", Prefix: "lgw_k1aaaaaaaa", Hash: hashA, Models: []string{plainA}}, []string{`key "k1"`, "looks like a plaintext gateway key"}},
		{"rpm out of range", Key{ID: "k1", Prefix: "lgw_k1aaaaaaaa", Hash: hashA, Models: []string{"*"}, RateLimit: RateLimit{RPM: -1}}, []string{"rateLimit.rpm"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			mustContainAll(t, CheckKeyPart([]Key{c.key}), c.want...)
		})
	}
}

// TestSealCheckedKeysEqualsEncode: for keys already normalized and checked
// one by one (in any order), the same snapshot and version as Encode; what
// spans keys is still refused.
func TestSealCheckedKeysEqualsEncode(t *testing.T) {
	s := manyKeys(2000)
	enc := s.Clone()
	sealed(t, enc)
	got := s.Clone()
	got.Version = ""
	slices.Reverse(got.Keys)
	for i := range got.Keys {
		if err := ValidateKey(&got.Keys[i]); err != nil {
			t.Fatal(err)
		}
	}
	if err := SealCheckedKeys(got); err != nil {
		t.Fatal(err)
	}
	if got.Version != enc.Version || !reflect.DeepEqual(got, enc) {
		t.Fatalf("SealCheckedKeys differs from Encode: version %s, want %s", got.Version, enc.Version)
	}

	dup := s.Clone()
	dup.Keys[1].Prefix = dup.Keys[0].Prefix
	mustContainAll(t, SealCheckedKeys(dup), "duplicate key prefix")
}

// TestVersionFromKeyPieces: the version hashed from kept key pieces is the
// version of the whole encoding — with budgets, groups, expiry times, no
// keys at all — and a piece that is not the key's gives another version.
func TestVersionFromKeyPieces(t *testing.T) {
	withQuotas := manyKeys(50)
	withQuotas.Groups = []Group{{Name: "team", Budget: &Budget{Amount: "10", Currency: "USD"}}}
	withQuotas.Keys[3].Group, withQuotas.Keys[4].Budget = "team", &Budget{Amount: "1.5", Currency: "USD"}
	for name, s := range map[string]*Snapshot{"demo": validSnapshot(), "no keys": {}, "quotas": withQuotas} {
		t.Run(name, func(t *testing.T) {
			enc := s.Clone()
			sealed(t, enc)
			pieces := map[string][]byte{}
			for i := range enc.Keys {
				pieces[enc.Keys[i].ID] = CanonicalKey(&enc.Keys[i])
			}
			got := enc.Clone()
			got.Version = ""
			if err := SealCheckedKeysWith(got, func(k *Key) []byte { return pieces[k.ID] }); err != nil {
				t.Fatal(err)
			}
			if got.Version != enc.Version {
				t.Fatalf("version from pieces %s, want %s", got.Version, enc.Version)
			}
			if len(enc.Keys) == 0 {
				return
			}
			wrong := enc.Clone()
			wrong.Version = ""
			stale := bytes.Replace(pieces[enc.Keys[0].ID], []byte(`"disabled": false`), []byte(`"disabled": true`), 1)
			if err := SealCheckedKeysWith(wrong, func(k *Key) []byte {
				if k.ID == enc.Keys[0].ID {
					return stale
				}
				return pieces[k.ID]
			}); err != nil {
				t.Fatal(err)
			}
			if wrong.Version == enc.Version {
				t.Fatal("a piece that is not the key's gave the same version")
			}
		})
	}
}
