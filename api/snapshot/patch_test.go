package snapshot

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/llmgw/llmgw/api/keyformat"
)

// patchKey is a valid key of manyKeys' shape, its content drawn from r.
func patchKey(r *rand.Rand, id string) Key {
	k := Key{ID: id, Prefix: fmt.Sprintf("lgw_%010d", r.IntN(1e9)), Hash: keyformat.Hash(fmt.Sprintf("secret-%d", r.Int64())),
		Models: []string{[]string{"chat-alpha", "chat-beta", "*"}[r.IntN(3)]}, Disabled: r.IntN(2) == 0}
	if r.IntN(3) == 0 {
		e := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(r.IntN(1000)) * time.Hour)
		k.ExpiresAt = &e
	}
	if r.IntN(4) == 0 {
		k.Budget = &Budget{Amount: "5", Currency: "USD"}
	}
	k.Normalize()
	return k
}

// TestPatchKeysEqualsSeal: keys taken out, put back changed, created at the
// front, in the middle and at the end, across many hash checkpoints: the
// patched snapshot and its version are those of sealing its keys afresh.
func TestPatchKeysEqualsSeal(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 11))
	s := manyKeys(3*versionStride + 17)
	p, err := SealCheckedKeysPatchable(s, nil)
	if err != nil || p == nil {
		t.Fatalf("sealing: %v (patcher %v)", err, p)
	}
	if want := s.Clone(); sealed(t, want) != nil && s.Version != want.Version {
		t.Fatalf("sealed with a patcher: version %s, want %s", s.Version, want.Version)
	}
	// Edits on each side of the kept hash states, then random patches.
	for _, i := range []int{0, versionStride - 1, versionStride, versionStride + 1, 2*versionStride - 1, len(s.Keys) - 1} {
		k := patchKey(r, s.Keys[i].ID)
		if err := p.PatchKeys(s, []string{k.ID}, []Key{k}, nil); err != nil {
			t.Fatal(err)
		}
		want := s.Clone()
		sealed(t, want)
		if s.Version != want.Version {
			t.Fatalf("key %d edited: version %s, want %s", i, s.Version, want.Version)
		}
	}
	keys := map[string]Key{}
	for _, k := range s.Keys {
		keys[k.ID] = k
	}
	for step := range 300 {
		var remove []string
		var put []Key
		ids := slices.Sorted(maps.Keys(keys))
		for range r.IntN(4) {
			if len(ids) == 0 {
				break
			}
			id := ids[r.IntN(len(ids))]
			if slices.Contains(remove, id) {
				continue
			}
			remove = append(remove, id)
			if r.IntN(2) == 0 {
				put = append(put, patchKey(r, id)) // an edit
			}
		}
		for range r.IntN(3) {
			// Ids before, between and after the others.
			id := []string{"a-", "svc-000100x-", "zz-"}[r.IntN(3)] + fmt.Sprintf("%d-%d", step, r.IntN(1e6))
			if _, taken := keys[id]; !taken && !slices.ContainsFunc(put, func(k Key) bool { return k.ID == id }) {
				put = append(put, patchKey(r, id))
			}
		}
		if step%50 == 0 {
			remove = append(remove, ids[len(ids)-1]) // the very last key
			remove = slices.Compact(slices.Sorted(slices.Values(remove)))
		}
		for _, id := range remove {
			delete(keys, id)
		}
		for _, k := range put {
			keys[k.ID] = k
		}
		if err := p.PatchKeys(s, remove, put, nil); err != nil {
			t.Fatalf("step %d: %v", step, err)
		}
		want := s.Clone()
		want.Keys = slices.Collect(maps.Values(keys))
		sealed(t, want)
		if s.Version != want.Version || !reflect.DeepEqual(s.Keys, want.Keys) {
			t.Fatalf("step %d (remove %q, put %d): version %s, want %s", step, remove, len(put), s.Version, want.Version)
		}
	}
}

// TestPatchKeysWithPieces: pieces given for the keys put in are the ones
// hashed (a stale piece gives another version), as SealCheckedKeysWith.
func TestPatchKeysWithPieces(t *testing.T) {
	s := manyKeys(600)
	p, err := SealCheckedKeysPatchable(s, nil)
	if err != nil {
		t.Fatal(err)
	}
	k := s.Keys[300]
	k.Disabled = !k.Disabled
	stale := CanonicalKey(&s.Keys[300])
	if err := p.PatchKeys(s, []string{k.ID}, []Key{k}, func(*Key) []byte { return stale }); err != nil {
		t.Fatal(err)
	}
	want := s.Clone()
	sealed(t, want)
	if s.Version == want.Version {
		t.Fatal("a stale piece gave the key's version")
	}
}

// TestPatchKeysRefuses: a patch that breaks what validate checks across
// objects is refused, naming the key.
func TestPatchKeysRefuses(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	priced := func(s *Snapshot) {
		s.Providers[0].Prices = []Price{{Model: "alpha-large", Currency: "EUR", InputPerMillion: "1", OutputPerMillion: "2"}}
		s.Normalize()
	}
	for name, c := range map[string]struct {
		prepare func(*Snapshot)
		patch   func(s *Snapshot) ([]string, []Key)
		want    string
	}{
		"id taken": {patch: func(s *Snapshot) ([]string, []Key) {
			return nil, []Key{patchKey(r, s.Keys[5].ID)}
		}, want: "duplicate key id"},
		"prefix taken": {patch: func(s *Snapshot) ([]string, []Key) {
			k := patchKey(r, "new")
			k.Prefix = s.Keys[7].Prefix
			return nil, []Key{k}
		}, want: "duplicate key prefix"},
		"prefix taken by a key put in": {patch: func(s *Snapshot) ([]string, []Key) {
			a, b := patchKey(r, "new-a"), patchKey(r, "new-b")
			b.Prefix = a.Prefix
			return nil, []Key{a, b}
		}, want: "duplicate key prefix"},
		"alias missing": {patch: func(s *Snapshot) ([]string, []Key) {
			k := patchKey(r, s.Keys[3].ID)
			k.Models = []string{"chat-gone"}
			return []string{k.ID}, []Key{k}
		}, want: `alias "chat-gone" does not exist`},
		"other currency": {prepare: priced, patch: func(s *Snapshot) ([]string, []Key) {
			k := patchKey(r, "new")
			k.Budget = &Budget{Amount: "1", Currency: "USD", Period: PeriodMonth}
			return nil, []Key{k}
		}, want: "budget.currency USD differs from EUR"},
		"key not there": {patch: func(s *Snapshot) ([]string, []Key) {
			return []string{"nobody"}, nil
		}, want: `no key "nobody"`},
		"taken out twice": {patch: func(s *Snapshot) ([]string, []Key) {
			return []string{s.Keys[1].ID, s.Keys[1].ID}, nil
		}, want: "taken out twice"},
		"other aliases": {patch: func(s *Snapshot) ([]string, []Key) {
			s.Aliases = slices.Clone(s.Aliases)
			return nil, nil
		}, want: "not the snapshot sealed"},
	} {
		t.Run(name, func(t *testing.T) {
			s := manyKeys(40)
			if c.prepare != nil {
				c.prepare(s)
			}
			p, err := SealCheckedKeysPatchable(s, nil)
			if err != nil {
				t.Fatal(err)
			}
			remove, put := c.patch(s)
			mustContainAll(t, p.PatchKeys(s, remove, put, nil), c.want)
		})
	}
}
