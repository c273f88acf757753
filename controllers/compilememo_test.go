package controllers

import (
	"bytes"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/llmgw/llmgw/api/snapshot"
	"github.com/llmgw/llmgw/api/v1alpha1"
)

// TestCompileMemoChangesNothing: compiling with a memo that has seen earlier
// versions of the objects gives exactly what compiling afresh gives —
// snapshot and version, statuses with digests and next expiry — through
// edits, deletions, an object deleted and created again under its name,
// prefix and hash conflicts appearing and going, a key expiring as time
// passes, changes to aliases, providers, groups, Secrets and limits; most
// of these are patched (compileincr.go), the rest compiled in full.
func TestCompileMemoChangesNothing(t *testing.T) {
	for name, paths := range compileCases(t) {
		t.Run(name, func(t *testing.T) {
			in := loadInputs(t, paths...)
			identify(&in)
			memo := NewCompileMemo()
			patched := 0
			for _, s := range memoSteps() {
				in.Providers, in.Aliases, in.Groups = slices.Clone(in.Providers), slices.Clone(in.Aliases), slices.Clone(in.Groups)
				in.Keys = slices.Clone(in.Keys)
				s.edit(&in)
				if sameCompile(t, s.what, in, memo) {
					patched++
				}
				fresh := in
				fresh.Memo = nil
				withMemo := in
				withMemo.Memo = memo
				snap1, st1 := render(t, fresh)
				snap2, st2 := render(t, withMemo)
				if !bytes.Equal(snap1, snap2) || !bytes.Equal(st1, st2) {
					t.Fatalf("%s: compiling with the memo differs from compiling afresh", s.what)
				}
				c1, d1 := Compile(fresh)
				c2, d2 := Compile(withMemo)
				if !maps.Equal(d1.digests(), d2.digests()) {
					t.Fatalf("%s: digests differ with the memo", s.what)
				}
				// The version Compile sets (from kept key pieces with the
				// memo) is the version of the canonical encoding.
				v := c2.Version
				if _, err := snapshot.Encode(&c2); err != nil || c1.Version != v || c2.Version != v {
					t.Fatalf("%s: version %s with the memo, %s without, %s encoded (%v)", s.what, v, c1.Version, c2.Version, err)
				}
				// And publish's parts from the memo's kept compact pieces
				// are the parts Split encodes itself.
				opts := snapshot.SplitOptions{Head: "llmgw-snapshot", ShardBytes: 1 << 10}
				h1, _, err1 := snapshot.Split(&c1, opts)
				opts.KeyPiece = memo.compactPiece
				h2, _, err2 := snapshot.Split(&c2, opts)
				if err1 != nil || err2 != nil || !reflect.DeepEqual(h1, h2) {
					t.Fatalf("%s: parts differ with the memo's pieces (%v, %v)", s.what, err1, err2)
				}
				if len(memo.keys) > len(in.Keys) {
					t.Fatalf("%s: the memo holds %d keys, the namespace %d", s.what, len(memo.keys), len(in.Keys))
				}
			}
			if len(in.Keys) > 1 && patched == 0 {
				t.Errorf("no change was patched")
			}
			t.Logf("%d of %d changes patched", patched, len(memoSteps()))
		})
	}
}

type memoStep struct {
	what string
	edit func(in *Inputs)
}

// memoSteps change a namespace step by step; each edits a copy of what it
// changes (the slices are cloned, not the specs they point to).
func memoSteps() []memoStep {
	key := func(in *Inputs, i int) *v1alpha1.GatewayKey {
		if i < 0 {
			i += len(in.Keys)
		}
		if i < 0 || i >= len(in.Keys) {
			return nil
		}
		k := &in.Keys[i]
		k.Spec = *k.Spec.DeepCopy()
		k.Generation++
		return k
	}
	newKey := func(in *Inputs, name, prefix, hash string) {
		k := v1alpha1.GatewayKey{Spec: v1alpha1.GatewayKeySpec{KeyPrefix: prefix, KeyHash: hash, Models: []string{snapshot.AllModels}}}
		k.Name, k.Namespace, k.UID, k.Generation = name, in.Namespace, types.UID("uid-"+name), 1
		k.CreationTimestamp = metav1.NewTime(goldenNow)
		in.Keys = append(in.Keys, k)
	}
	find := func(in *Inputs, name string) int {
		return slices.IndexFunc(in.Keys, func(k v1alpha1.GatewayKey) bool { return k.Name == name })
	}
	hashOf := func(c string) string { return "sha256:" + strings.Repeat(c, 64) }
	return []memoStep{
		{"as loaded", func(*Inputs) {}},
		{"first key disabled (next generation)", func(in *Inputs) {
			if k := key(in, 0); k != nil {
				k.Spec.Disabled = !k.Spec.Disabled
			}
		}},
		{"last key's models cut to one", func(in *Inputs) {
			if k := key(in, -1); k != nil && len(k.Spec.Models) > 1 {
				k.Spec.Models = k.Spec.Models[:1]
			}
		}},
		{"a key deleted", func(in *Inputs) {
			if len(in.Keys) > 1 {
				in.Keys = slices.Delete(in.Keys, 1, 2)
			}
		}},
		{"a key re-created with another hash (new UID, generation 1)", func(in *Inputs) {
			if len(in.Keys) > 0 {
				k := &in.Keys[0]
				k.Spec = *k.Spec.DeepCopy()
				k.UID, k.Generation = "uid-new", 1
				k.Spec.KeyHash = hashOf("0")
			}
		}},
		{"a key created", func(in *Inputs) { newKey(in, "zz-new", "lgw_zznew00001", hashOf("1")) }},
		{"the new key takes the first key's prefix: a conflict it loses", func(in *Inputs) {
			if i := find(in, "zz-new"); i >= 0 && len(in.Keys) > 1 {
				key(in, i).Spec.KeyPrefix = in.Keys[0].Spec.KeyPrefix
			}
		}},
		{"the new key takes its prefix back", func(in *Inputs) {
			if i := find(in, "zz-new"); i >= 0 {
				key(in, i).Spec.KeyPrefix = "lgw_zznew00001"
			}
		}},
		{"the new key takes the first key's hash", func(in *Inputs) {
			if i := find(in, "zz-new"); i >= 0 && len(in.Keys) > 1 {
				key(in, i).Spec.KeyHash = in.Keys[0].Spec.KeyHash
			}
		}},
		{"the key it lost to deleted: it wins the hash", func(in *Inputs) {
			if find(in, "zz-new") > 0 {
				in.Keys = slices.Delete(in.Keys, 0, 1)
			}
		}},
		{"a key names an alias that is not served", func(in *Inputs) {
			if k := key(in, 0); k != nil {
				k.Spec.Models = []string{"no-such-alias"}
			}
		}},
		{"a key names a group that does not exist", func(in *Inputs) {
			if k := key(in, -1); k != nil {
				k.Spec.Group = "no-such-group"
			}
		}},
		{"a key expires in an hour", func(in *Inputs) {
			if k := key(in, -1); k != nil {
				e := metav1.NewTime(in.Now.Add(time.Hour))
				k.Spec.ExpiresAt = &e
			}
		}},
		{"half an hour passes", func(in *Inputs) { in.Now = in.Now.Add(30 * time.Minute) }},
		{"another hour passes: the key expired", func(in *Inputs) { in.Now = in.Now.Add(time.Hour) }},
		{"the clock goes back before the expiry", func(in *Inputs) { in.Now = in.Now.Add(-time.Hour) }},
		{"an older key takes the new key's prefix: the older wins it", func(in *Inputs) {
			if i := find(in, "zz-new"); i >= 0 {
				newKey(in, "aa-old", in.Keys[i].Spec.KeyPrefix, hashOf("2"))
				in.Keys[len(in.Keys)-1].CreationTimestamp = metav1.NewTime(goldenNow.Add(-1000 * time.Hour))
			}
		}},
		{"a key with a budget in EUR", func(in *Inputs) {
			newKey(in, "bb-budget", "lgw_bbbudget01", hashOf("3"))
			k := &in.Keys[len(in.Keys)-1]
			k.CreationTimestamp = metav1.NewTime(goldenNow.Add(-900 * time.Hour))
			k.Spec.Budget = &v1alpha1.Budget{Amount: "5", Currency: "EUR"}
		}},
		{"a newer key with a budget in USD", func(in *Inputs) {
			newKey(in, "cc-budget", "lgw_ccbudget01", hashOf("4"))
			in.Keys[len(in.Keys)-1].Spec.Budget = &v1alpha1.Budget{Amount: "5", Currency: "USD"}
		}},
		{"the key in EUR deleted", func(in *Inputs) {
			if i := find(in, "bb-budget"); i >= 0 {
				in.Keys = slices.Delete(in.Keys, i, i+1)
			}
		}},
		{"an alias changes", func(in *Inputs) {
			if len(in.Aliases) > 0 {
				a := &in.Aliases[0]
				a.Spec = *a.Spec.DeepCopy()
				a.Spec.Primary.Model += "-v2"
				a.Generation++
			}
		}},
		{"a key disabled again", func(in *Inputs) {
			if k := key(in, 0); k != nil {
				k.Spec.Disabled = !k.Spec.Disabled
			}
		}},
		{"a provider changes", func(in *Inputs) {
			if len(in.Providers) > 0 {
				p := &in.Providers[0]
				p.Spec = *p.Spec.DeepCopy()
				p.Spec.URL = "https://changed.example/v1"
				p.Spec.Service = nil
				p.Generation++
			}
		}},
		{"a group changes", func(in *Inputs) {
			if len(in.Groups) > 0 {
				g := &in.Groups[0]
				g.Spec = *g.Spec.DeepCopy()
				g.Spec.TokensPerMinute += 7
				g.Generation++
			}
		}},
		{"a Secret goes", func(in *Inputs) {
			in.Secrets = maps.Clone(in.Secrets)
			for name := range in.Secrets {
				delete(in.Secrets, name)
				break
			}
		}},
		{"the limits change", func(in *Inputs) { in.Limits.MaxConcurrent = 7 }},
		{"a key's models restored to every alias", func(in *Inputs) {
			if k := key(in, 0); k != nil {
				k.Spec.Models = []string{snapshot.AllModels}
			}
		}},
		{"keys listed in another order", func(in *Inputs) { slices.Reverse(in.Keys) }},
	}
}
