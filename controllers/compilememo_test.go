package controllers

import (
	"bytes"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/types"

	"github.com/llmgw/llmgw/api/snapshot"
	"github.com/llmgw/llmgw/api/v1alpha1"
)

// TestCompileMemoChangesNothing: compiling with a memo that has seen earlier
// versions of the objects gives exactly what compiling afresh gives —
// snapshot, statuses and digests — through edits, deletions and an object
// deleted and created again under its name.
func TestCompileMemoChangesNothing(t *testing.T) {
	for name, paths := range compileCases(t) {
		t.Run(name, func(t *testing.T) {
			in := loadInputs(t, paths...)
			for i := range in.Keys {
				in.Keys[i].UID = types.UID(fmt.Sprintf("uid-%d", i))
				in.Keys[i].Generation = 1
			}
			memo := NewCompileMemo()
			steps := []struct {
				what string
				edit func(keys []v1alpha1.GatewayKey) []v1alpha1.GatewayKey
			}{
				{"as loaded", func(k []v1alpha1.GatewayKey) []v1alpha1.GatewayKey { return k }},
				{"first key disabled (next generation)", func(k []v1alpha1.GatewayKey) []v1alpha1.GatewayKey {
					if len(k) > 0 {
						k[0].Spec.Disabled = !k[0].Spec.Disabled
						k[0].Generation++
					}
					return k
				}},
				{"last key's models cut to one", func(k []v1alpha1.GatewayKey) []v1alpha1.GatewayKey {
					if n := len(k); n > 0 && len(k[n-1].Spec.Models) > 1 {
						k[n-1].Spec.Models = k[n-1].Spec.Models[:1]
						k[n-1].Generation++
					}
					return k
				}},
				{"a key deleted", func(k []v1alpha1.GatewayKey) []v1alpha1.GatewayKey {
					if len(k) > 1 {
						return slices.Delete(k, 1, 2)
					}
					return k
				}},
				{"a key re-created with another hash (new UID, generation 1)", func(k []v1alpha1.GatewayKey) []v1alpha1.GatewayKey {
					if len(k) > 0 {
						k[0].UID, k[0].Generation = "uid-new", 1
						k[0].Spec.KeyHash = "sha256:" + string(bytes.Repeat([]byte("0"), 64))
					}
					return k
				}},
			}
			for _, s := range steps {
				in.Keys = s.edit(slices.Clone(in.Keys))
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
		})
	}
}
