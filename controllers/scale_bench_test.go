package controllers

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/llmgw/llmgw/api/keyformat"
	"github.com/llmgw/llmgw/api/snapshot"
	"github.com/llmgw/llmgw/api/v1alpha1"
	"github.com/llmgw/llmgw/test/testutil"
)

// The controller's CPU per reconcile at 50,000 GatewayKeys and 1,000
// ModelAliases (testutil.ScaleSnapshot turned into objects). Run with
//
//	go test ./controllers -run '^$' -bench Scale -benchtime 5x
//
// docs/BENCHMARK.md records the numbers.

func scaleInputs(keys, aliases int) Inputs {
	s := testutil.ScaleSnapshot(keys, aliases)
	in := Inputs{Namespace: "llmgw-system", Now: time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC), Secrets: map[string][]string{}}
	created := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	meta := func(name string, i int) metav1.ObjectMeta {
		return metav1.ObjectMeta{Name: name, Namespace: in.Namespace, Generation: 1, UID: types.UID("uid-" + name),
			CreationTimestamp: metav1.NewTime(created.Add(time.Duration(i) * time.Second))}
	}
	for i, p := range s.Providers {
		in.Providers = append(in.Providers, v1alpha1.ProviderEndpoint{ObjectMeta: meta(p.Name, i), Spec: v1alpha1.ProviderEndpointSpec{
			Protocol: p.Protocol, URL: p.BaseURL,
			Credential: &v1alpha1.Credential{SecretRef: v1alpha1.SecretKeyReference{Name: p.Credential.SecretName, Key: p.Credential.SecretKey}},
		}})
		in.Secrets[p.Credential.SecretName] = []string{p.Credential.SecretKey}
	}
	for i, a := range s.Aliases {
		spec := v1alpha1.ModelAliasSpec{Primary: v1alpha1.Route{Provider: a.Primary.Provider, Model: a.Primary.Model}}
		for _, f := range a.Fallbacks {
			spec.Fallbacks = append(spec.Fallbacks, v1alpha1.Route{Provider: f.Provider, Model: f.Model})
		}
		in.Aliases = append(in.Aliases, v1alpha1.ModelAlias{ObjectMeta: meta(a.Name, i), Spec: spec})
	}
	for i, k := range s.Keys {
		spec := v1alpha1.GatewayKeySpec{KeyHash: k.Hash, KeyPrefix: k.Prefix, Models: k.Models, Disabled: k.Disabled,
			RateLimit: &v1alpha1.RateLimit{RequestsPerMinute: int32(k.RateLimit.RPM), Burst: int32(k.RateLimit.Burst)}}
		if k.ExpiresAt != nil {
			t := metav1.NewTime(*k.ExpiresAt)
			spec.ExpiresAt = &t
		}
		in.Keys = append(in.Keys, v1alpha1.GatewayKey{ObjectMeta: meta(k.ID, i), Spec: spec})
	}
	return in
}

// compileEveryKey compiles in and fails b unless every key is served.
func compileEveryKey(b *testing.B, in Inputs) {
	b.Helper()
	if snap, st := Compile(in); len(snap.Keys) != len(in.Keys) || st.Invalid != nil {
		b.Fatalf("%d of %d keys compiled (%v)", len(snap.Keys), len(in.Keys), st.Invalid)
	}
}

// BenchmarkScaleReconcileCPU splits a reconcile's CPU work into its steps:
// the pure Compile, Encode (validate, canonical form, version) and, for a
// one-key change, Split against the previous head (what publish computes
// before it writes one shard and the head). The compile-memo cases compile
// as the reconciler does: key changes patch the last compilation
// (compileincr.go), a provider's change compiles in full.
func BenchmarkScaleReconcileCPU(b *testing.B) {
	in := scaleInputs(50_000, 1_000)
	b.Run("compile", func(b *testing.B) {
		testutil.CPUPerOp(b, func() {
			snap, _ := Compile(in)
			if len(snap.Keys) != len(in.Keys) {
				b.Fatalf("%d of %d keys compiled", len(snap.Keys), len(in.Keys))
			}
		})
	})
	// warm is in on copied slices with a memo that has compiled it once.
	warm := func(in Inputs) Inputs {
		in.Keys, in.Providers, in.Memo = slices.Clone(in.Keys), slices.Clone(in.Providers), NewCompileMemo()
		Compile(in)
		return in
	}
	b.Run("compile-memo-one-key-changed", func(b *testing.B) {
		in := warm(in)
		i := 0
		testutil.CPUPerOp(b, func() {
			i++
			k := &in.Keys[i%len(in.Keys)]
			k.Spec.Disabled = !k.Spec.Disabled
			k.Generation++
			compileEveryKey(b, in)
		})
	})
	b.Run("compile-memo-key-created-and-deleted", func(b *testing.B) {
		// A key created (in the middle of the id order) and the one created
		// before deleted: both change where the keys after them sit.
		in := warm(in)
		i := 0
		testutil.CPUPerOp(b, func() {
			i++
			k := in.Keys[len(in.Keys)/2]
			k.Name, k.UID = fmt.Sprintf("team-0500-new-%06d", i), types.UID(fmt.Sprintf("uid-new-%d", i))
			k.Spec.KeyPrefix, k.Spec.KeyHash = fmt.Sprintf("lgw_new%07d", i), keyformat.Hash(fmt.Sprint("new-", i))
			if i > 1 {
				in.Keys = in.Keys[:len(in.Keys)-1]
			}
			in.Keys = append(in.Keys, k)
			compileEveryKey(b, in)
		})
	})
	b.Run("compile-memo-provider-changed", func(b *testing.B) {
		// Not a key: compiled in full, with every key's own compilation
		// kept (and the compilation kept for the next patch).
		in := warm(in)
		testutil.CPUPerOp(b, func() {
			in.Providers[0].Generation++
			compileEveryKey(b, in)
		})
	})
	snap, _ := Compile(in)
	b.Run("encode", func(b *testing.B) {
		testutil.CPUPerOp(b, func() {
			if _, err := snapshot.Encode(&snap); err != nil {
				b.Fatal(err)
			}
		})
	})
	b.Run("split-one-key-changed-kept-pieces", func(b *testing.B) {
		// As publish runs it: every key's compact JSON kept (the compile
		// memo) but the changed key's, which is encoded again.
		pieces := map[string][]byte{}
		for i := range snap.Keys {
			p, err := snapshot.CompactKey(&snap.Keys[i])
			if err != nil {
				b.Fatal(err)
			}
			pieces[snap.Keys[i].ID] = p
		}
		opts := snapshot.SplitOptions{Head: "llmgw-snapshot", KeyPiece: func(k *snapshot.Key) []byte { return pieces[k.ID] }}
		prev, _, err := snapshot.Split(&snap, opts)
		if err != nil {
			b.Fatal(err)
		}
		i := 0
		testutil.CPUPerOp(b, func() {
			i++
			k := &snap.Keys[i%len(snap.Keys)]
			k.Disabled = !k.Disabled
			delete(pieces, k.ID)
			opts.Previous = &prev
			h, _, err := snapshot.Split(&snap, opts)
			if err != nil {
				b.Fatal(err)
			}
			prev = h
		})
	})
	b.Run("split-one-key-changed", func(b *testing.B) {
		prev, _, err := snapshot.Split(&snap, snapshot.SplitOptions{Head: "llmgw-snapshot"})
		if err != nil {
			b.Fatal(err)
		}
		i := 0
		testutil.CPUPerOp(b, func() {
			i++
			snap.Keys[i%len(snap.Keys)].Disabled = !snap.Keys[i%len(snap.Keys)].Disabled
			h, _, err := snapshot.Split(&snap, snapshot.SplitOptions{Head: "llmgw-snapshot", Previous: &prev})
			if err != nil {
				b.Fatal(err)
			}
			prev = h
		})
	})
}

// BenchmarkScalePublishOneKey is publish end to end against the fake API
// server for a one-key change at 50,000 keys: read the head, split, list
// the parts' metadata, create one shard, update the head.
func BenchmarkScalePublishOneKey(b *testing.B) {
	in := scaleInputs(50_000, 1_000)
	snap, _ := Compile(in)
	if _, err := snapshot.Encode(&snap); err != nil {
		b.Fatal(err)
	}
	r, _, _ := publisher(b)
	r.delivery.ShardBytes = 0
	ctx := context.Background()
	if err := r.publish(ctx, logr.Discard(), &snap); err != nil {
		b.Fatal(err)
	}
	i := 0
	testutil.CPUPerOp(b, func() {
		i++
		snap.Keys[i%len(snap.Keys)].Disabled = !snap.Keys[i%len(snap.Keys)].Disabled
		snap.Version = ""
		if _, err := snapshot.Encode(&snap); err != nil {
			b.Fatal(err)
		}
		if err := r.publish(ctx, logr.Discard(), &snap); err != nil {
			b.Fatal(err)
		}
	})
}

// BenchmarkScaleStatusPass is a reconcile's status pass over 50,000 keys
// and 1,000 aliases once every status is written and verified (the steady
// state of a one-key change): what it costs to find out nothing changed.
func BenchmarkScaleStatusPass(b *testing.B) {
	in := scaleInputs(50_000, 1_000)
	_, st := Compile(in)
	r := &Reconciler{Namespace: in.Namespace, Log: logr.Discard(), statuses: newStatusWriter(nil, 1, logr.Discard())}
	ctx := context.Background()
	if err := r.updateStatuses(ctx, in, st, statusRound{}); err != nil {
		b.Fatal(err)
	}
	// As if the writer had written every wanted status and the cache had
	// seen it (a new resourceVersion), then one pass found them in place.
	for i := range in.Keys {
		if want, ok := r.statuses.pending[keyOf(&in.Keys[i])]; ok {
			in.Keys[i].Status = want.obj.(*v1alpha1.GatewayKey).Status
			in.Keys[i].ResourceVersion = "2"
		}
	}
	for i := range in.Aliases {
		if want, ok := r.statuses.pending[keyOf(&in.Aliases[i])]; ok {
			in.Aliases[i].Status = want.obj.(*v1alpha1.ModelAlias).Status
			in.Aliases[i].ResourceVersion = "2"
		}
	}
	for i := range in.Providers {
		if want, ok := r.statuses.pending[keyOf(&in.Providers[i])]; ok {
			in.Providers[i].Status = want.obj.(*v1alpha1.ProviderEndpoint).Status
			in.Providers[i].ResourceVersion = "2"
		}
	}
	r.statuses = newStatusWriter(nil, 1, logr.Discard())
	if err := r.updateStatuses(ctx, in, st, statusRound{}); err != nil {
		b.Fatal(err)
	}
	if n := r.statuses.Backlog(); n != 0 {
		b.Fatalf("%d statuses handed over again", n)
	}
	testutil.CPUPerOp(b, func() {
		if err := r.updateStatuses(ctx, in, st, statusRound{}); err != nil {
			b.Fatal(err)
		}
	})
}
