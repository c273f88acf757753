package snapshot

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/llmgw/llmgw/api/keyformat"
)

// manyKeys is validSnapshot with n more keys (random hashes, like real ones).
func manyKeys(n int) *Snapshot {
	s := validSnapshot()
	r := rand.New(rand.NewPCG(uint64(n), 3))
	for i := range n {
		k := Key{ID: fmt.Sprintf("svc-%06d", i), Prefix: fmt.Sprintf("lgw_%010d", i),
			Hash: keyformat.Hash(fmt.Sprintf("secret-%d-%d", i, r.Int64())), Models: []string{"chat-alpha"}}
		s.Keys = append(s.Keys, k)
	}
	s.Normalize()
	return s
}

func sealed(t testing.TB, s *Snapshot) []byte {
	t.Helper()
	b, err := Encode(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// reassemble does what a gateway does with a head and its parts' data.
func reassemble(t *testing.T, h Head, data map[string][]byte) *Snapshot {
	t.Helper()
	raw, err := ReadPart(h.Config, data[h.Config.Name])
	if err != nil {
		t.Fatal(err)
	}
	config, err := ParseConfigPart(raw)
	if err != nil {
		t.Fatal(err)
	}
	shards := make([][]Key, len(h.Keys))
	for i, ref := range h.Keys {
		raw, err := ReadPart(ref, data[ref.Name])
		if err != nil {
			t.Fatal(err)
		}
		if shards[i], err = ParseKeyPart(raw); err != nil {
			t.Fatal(err)
		}
		if len(shards[i]) != ref.Keys {
			t.Fatalf("shard %d: %d keys, the head says %d", i, len(shards[i]), ref.Keys)
		}
	}
	s, err := Assemble(&h, config, shards)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestSplitAssembleRoundTrip: the parts of a snapshot assemble to a snapshot
// with the same canonical bytes and version, whatever the number of shards.
func TestSplitAssembleRoundTrip(t *testing.T) {
	cases := []struct {
		name       string
		snap       *Snapshot
		shardBytes int
		wantShards int
	}{
		{"empty", &Snapshot{}, 0, 1},
		{"demo", validSnapshot(), 0, 1},
		{"3000 keys, default shards", manyKeys(3000), 0, 4},
		{"3000 keys, small shards", manyKeys(3000), 16 << 10, 64},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			want := sealed(t, c.snap)
			h, parts, err := Split(c.snap, SplitOptions{Head: "llmgw-snapshot", ShardBytes: c.shardBytes})
			if err != nil {
				t.Fatal(err)
			}
			if len(h.Keys) != c.wantShards {
				t.Errorf("%d key shards, want %d", len(h.Keys), c.wantShards)
			}
			if h.Version != c.snap.Version {
				t.Errorf("head version %s, want %s", h.Version, c.snap.Version)
			}
			data := map[string][]byte{}
			names := map[string]bool{}
			for _, p := range parts {
				if p.Data == nil || p.Bytes != len(p.Data) || p.Bytes > MaxPartBytes {
					t.Fatalf("part %s: %d bytes of data, ref says %d", p.Name, len(p.Data), p.Bytes)
				}
				if names[p.Name] {
					t.Fatalf("two parts named %s", p.Name)
				}
				names[p.Name] = true
				data[p.Name] = p.Data
			}
			got := reassemble(t, h, data)
			b, err := Encode(got)
			if err != nil {
				t.Fatal(err)
			}
			if got.Version != h.Version || !bytes.Equal(b, want) {
				t.Fatalf("assembled snapshot differs: version %s, want %s", got.Version, h.Version)
			}
		})
	}
}

// TestSplitRewritesOnlyWhatChanged: one key more is one new key shard (and a
// new head); the config part and every other shard keep their names and are
// not compressed again.
func TestSplitRewritesOnlyWhatChanged(t *testing.T) {
	s := manyKeys(3000)
	sealed(t, s)
	h1, _, err := Split(s, SplitOptions{Head: "h"})
	if err != nil {
		t.Fatal(err)
	}
	s.Keys = append(s.Keys, Key{ID: "newcomer", Prefix: "lgw_newcomer00", Hash: hashA, Models: []string{"*"}})
	sealed(t, s)
	h2, parts, err := Split(s, SplitOptions{Head: "h", Previous: &h1})
	if err != nil {
		t.Fatal(err)
	}
	if len(h2.Keys) != len(h1.Keys) {
		t.Fatalf("shard count moved from %d to %d for one key", len(h1.Keys), len(h2.Keys))
	}
	var fresh []string
	for _, p := range parts {
		if p.Data != nil {
			fresh = append(fresh, p.Name)
		}
	}
	slot := ShardOf("newcomer", len(h2.Keys))
	if len(fresh) != 1 || fresh[0] != h2.Keys[slot].Name || h2.Keys[slot].Name == h1.Keys[slot].Name {
		t.Fatalf("new parts %v; want only key shard %d", fresh, slot)
	}
	for i := range h2.Keys {
		if i != slot && h2.Keys[i] != h1.Keys[i] {
			t.Errorf("shard %d changed: %+v → %+v", i, h1.Keys[i], h2.Keys[i])
		}
	}
	if h2.Config != h1.Config {
		t.Error("config part changed")
	}
}

func TestShardCount(t *testing.T) {
	const target = 100
	cases := []struct {
		total, prev, want int
	}{
		{0, 0, 1},
		{100, 0, 1},
		{101, 0, 2},
		{6400, 0, 64},
		{6401, 0, 128},
		{6401, 64, 64},   // within twice the target: kept
		{12800, 64, 64},  // exactly twice
		{12801, 64, 256}, // over: the smallest count at the target
		{1600, 64, 64},   // a quarter: kept
		{1599, 64, 16},   // below: shrunk
		{10, 1, 1},
		{250, 1, 4},
		{1 << 40, 0, MaxKeyShards},
		{500, 3, 8}, // not a power of two: recomputed
	}
	for _, c := range cases {
		if got := shardCount(c.total, c.prev, target); got != c.want {
			t.Errorf("shardCount(%d, prev %d) = %d, want %d", c.total, c.prev, got, c.want)
		}
	}
}

// TestShardOfIsPinned (values computed independently: FNV-1a 32 of the id,
// modulo n): controller and gateway agree on ShardOf by code, not
// by configuration, so a change of the function must be deliberate (every
// part moves, and a gateway of another release would refuse the split).
func TestShardOfIsPinned(t *testing.T) {
	for _, c := range []struct {
		id      string
		n, want int
	}{
		{"key-a", 1, 0}, {"key-a", 64, 54}, {"key-b", 64, 35}, {"team-0042-svc-000042", 1024, 307},
	} {
		if got := ShardOf(c.id, c.n); got != c.want {
			t.Errorf("ShardOf(%q, %d) = %d, want %d", c.id, c.n, got, c.want)
		}
	}
}

func TestSplitTooLarge(t *testing.T) {
	// Aliases are not sharded: enough incompressible alias text cannot fit.
	s := validSnapshot()
	r := rand.New(rand.NewPCG(1, 1))
	const chars = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	for i := range 5000 {
		model := make([]byte, 200)
		for j := range model {
			model[j] = chars[r.IntN(len(chars))]
		}
		s.Aliases = append(s.Aliases, Alias{Name: fmt.Sprintf("a%05d", i), Primary: Route{"alpha", string(model)}})
	}
	sealed(t, s)
	_, parts, err := Split(s, SplitOptions{Head: "h"})
	var tl *TooLargeError
	if !errors.As(err, &tl) || tl.Part != "config" || tl.Bytes <= MaxPartBytes || tl.Limit != MaxPartBytes {
		t.Fatalf("want a config TooLargeError, got %v", err)
	}
	if parts != nil || !strings.Contains(err.Error(), "not sharded") {
		t.Fatalf("parts %d, error %q", len(parts), err)
	}
	if err := (&TooLargeError{Part: "keys", Bytes: 800000, Limit: MaxPartBytes, Shards: 1024}).Error(); !strings.Contains(err, "1024 shards") {
		t.Fatalf("keys error says %q", err)
	}
}

func TestSplitRefuses(t *testing.T) {
	s := validSnapshot()
	if _, _, err := Split(s, SplitOptions{Head: "h"}); err == nil {
		t.Error("an unsealed snapshot (no version) was split")
	}
	sealed(t, s)
	for _, name := range []string{"", strings.Repeat("n", maxHeadNameLen+1)} {
		if _, _, err := Split(s, SplitOptions{Head: name}); err == nil {
			t.Errorf("head name of %d characters accepted", len(name))
		}
	}
	if _, _, err := Split(s, SplitOptions{Head: strings.Repeat("n", maxHeadNameLen)}); err != nil {
		t.Errorf("longest head name refused: %v", err)
	}
}

func TestReadPartRefuses(t *testing.T) {
	raw := []byte(`{"keys":[]}`)
	sum := sha256.Sum256(raw)
	ref := PartRef{Name: "p", SHA256: hex.EncodeToString(sum[:])}
	good, _ := compress(raw)
	if got, err := ReadPart(ref, good); err != nil || !bytes.Equal(got, raw) {
		t.Fatalf("good part: %q, %v", got, err)
	}
	other, _ := compress([]byte(`{"keys":null}`))
	var bomb bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&bomb, gzip.BestCompression)
	_, _ = zw.Write(make([]byte, MaxPartRawBytes+1))
	_ = zw.Close()
	for name, data := range map[string][]byte{
		"not gzip":       raw,
		"truncated":      good[:len(good)-6],
		"other content":  other,
		"inflates >64MB": bomb.Bytes(),
	} {
		if _, err := ReadPart(ref, data); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestParsePartsAreStrict(t *testing.T) {
	for name, raw := range map[string]string{
		"unknown field":     `{"keys":[],"extra":1}`,
		"wrong case":        `{"Keys":[]}`,
		"duplicate":         `{"keys":[],"keys":[]}`,
		"unknown key field": `{"keys":[{"id":"a","secret":"x"}]}`,
	} {
		if _, err := ParseKeyPart([]byte(raw)); err == nil {
			t.Errorf("key part with %s accepted", name)
		}
	}
	for name, raw := range map[string]string{
		"keys":    `{"keys":[{"id":"a"}]}`,
		"version": `{"version":"sha256:00"}`,
		"unknown": `{"providerz":[]}`,
	} {
		if _, err := ParseConfigPart([]byte(raw)); err == nil {
			t.Errorf("config part with %s accepted", name)
		}
	}
	// A plaintext key in a part is quoted redacted, never verbatim.
	_, err := ParseKeyPart([]byte(`{"keys":[{"` + plainA + `":1}]}`))
	mustContainAll(t, err, "unknown field")
}

func TestParseHead(t *testing.T) {
	s := manyKeys(10)
	sealed(t, s)
	h, _, err := Split(s, SplitOptions{Head: "h"})
	if err != nil {
		t.Fatal(err)
	}
	good := fmt.Sprintf(`{"version":%q,"config":{"name":"c","sha256":%q,"keys":0,"bytes":1},"keys":[{"name":"k","sha256":%q,"keys":12,"bytes":2}]}`,
		h.Version, h.Config.SHA256, h.Keys[0].SHA256)
	if _, err := ParseHead([]byte(good)); err != nil {
		t.Fatalf("good head refused: %v", err)
	}
	twoShards := strings.Replace(good, `"keys":[{`, `"keys":[{"name":"k0","sha256":"`+h.Keys[0].SHA256+`","keys":0,"bytes":1},{`, 1)
	if _, err := ParseHead([]byte(twoShards)); err != nil {
		t.Fatalf("two shards refused: %v", err)
	}
	for name, raw := range map[string]string{
		"not JSON":       `{`,
		"no version":     strings.Replace(good, h.Version, "", 1),
		"no shards":      fmt.Sprintf(`{"version":%q,"config":{"name":"c","sha256":%q,"keys":0,"bytes":1},"keys":[]}`, h.Version, h.Config.SHA256),
		"three shards":   strings.Replace(twoShards, `"keys":[{`, `"keys":[{"name":"kx","sha256":"`+h.Keys[0].SHA256+`","keys":0,"bytes":1},{`, 1),
		"short hash":     strings.Replace(good, h.Config.SHA256, "abc", 1),
		"nameless part":  strings.Replace(good, `"name":"c"`, `"name":""`, 1),
		"unknown member": strings.Replace(good, `"version"`, `"extra":1,"version"`, 1),
	} {
		if _, err := ParseHead([]byte(raw)); err == nil {
			t.Errorf("head with %s accepted", name)
		}
	}
}

// TestAssembleRefusesMisplacedKeys: a shard holding a key that hashes
// elsewhere is a wrong split, not something to serve.
func TestAssembleRefusesMisplacedKeys(t *testing.T) {
	h := &Head{Version: "sha256:x", Keys: make([]PartRef, 2)}
	k := Key{ID: "key-a"}
	right := ShardOf(k.ID, 2)
	shards := make([][]Key, 2)
	shards[1-right] = []Key{k}
	if _, err := Assemble(h, &Snapshot{}, shards); err == nil {
		t.Fatal("misplaced key accepted")
	}
	if _, err := Assemble(h, &Snapshot{}, shards[:1]); err == nil {
		t.Fatal("missing shard accepted")
	}
	shards[1-right], shards[right] = nil, []Key{k}
	s, err := Assemble(h, &Snapshot{}, shards)
	if err != nil || len(s.Keys) != 1 || s.Version != "" {
		t.Fatalf("good shards: %v, %+v", err, s)
	}
}

// TestAssembleMergesInIDOrder: keys come out sorted by id (sealing then has
// nothing to sort), and a shard out of order loses no key.
func TestAssembleMergesInIDOrder(t *testing.T) {
	s := manyKeys(500)
	sealed(t, s)
	h, parts, err := Split(s, SplitOptions{Head: "h", ShardBytes: 4 << 10})
	if err != nil {
		t.Fatal(err)
	}
	data := map[string][]byte{}
	for _, p := range parts {
		data[p.Name] = p.Data
	}
	got := reassemble(t, h, data)
	if !slices.IsSortedFunc(got.Keys, func(a, b Key) int { return strings.Compare(a.ID, b.ID) }) || len(got.Keys) != len(s.Keys) {
		t.Fatalf("%d keys, sorted %v", len(got.Keys), slices.IsSortedFunc(got.Keys, func(a, b Key) int { return strings.Compare(a.ID, b.ID) }))
	}
	shards := [][]Key{{{ID: "c"}, {ID: "a"}}, {}, {{ID: "b"}}}
	merged := mergeByID(shards, 3)
	ids := []string{}
	for _, k := range merged {
		ids = append(ids, k.ID)
	}
	slices.Sort(ids)
	if !slices.Equal(ids, []string{"a", "b", "c"}) {
		t.Fatalf("unsorted shard lost keys: %v", ids)
	}
}

// TestSplitWithKeptPieces: shards built from kept compact key pieces are
// the shards Split encodes itself, part for part; a piece that is not the
// key's changes its shard.
func TestSplitWithKeptPieces(t *testing.T) {
	s := manyKeys(3000)
	sealed(t, s)
	opts := SplitOptions{Head: "llmgw-snapshot", ShardBytes: 16 << 10}
	want, wantParts, err := Split(s, opts)
	if err != nil {
		t.Fatal(err)
	}
	pieces := map[string][]byte{}
	for i := range s.Keys {
		if pieces[s.Keys[i].ID], err = CompactKey(&s.Keys[i]); err != nil {
			t.Fatal(err)
		}
	}
	opts.KeyPiece = func(k *Key) []byte { return pieces[k.ID] }
	got, gotParts, err := Split(s, opts)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) || len(gotParts) != len(wantParts) {
		t.Fatal("the head built from kept pieces differs")
	}
	for i := range gotParts {
		if gotParts[i].Name != wantParts[i].Name || !bytes.Equal(gotParts[i].Data, wantParts[i].Data) {
			t.Fatalf("part %s differs from %s", gotParts[i].Name, wantParts[i].Name)
		}
	}
	first := s.Keys[0].ID
	pieces[first] = bytes.Replace(pieces[first], []byte(`"disabled":false`), []byte(`"disabled":true`), 1)
	stale, _, err := Split(s, opts)
	if err != nil {
		t.Fatal(err)
	}
	if reflect.DeepEqual(stale, want) {
		t.Fatal("a piece that is not the key's left every shard as it was")
	}
}
