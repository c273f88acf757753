package server

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/llmgw/llmgw/api/keyformat"
	"github.com/llmgw/llmgw/api/snapshot"
	"github.com/llmgw/llmgw/gateway/usage"
)

// TestApplySealedRunsTheSnapshotItself: a sealed snapshot is run without a
// copy (the point: no second copy of 50,000 keys), its keys are served, and
// the same version handed over again through Apply rebuilds nothing.
func TestApplySealedRunsTheSnapshotItself(t *testing.T) {
	ctx := context.Background()
	l, err := usage.Open(ctx, filepath.Join(t.TempDir(), "usage.db"), usage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	s, err := New(Options{Ledger: l})
	if err != nil {
		t.Fatal(err)
	}
	_, prefix, hash, err := keyformat.Generate()
	if err != nil {
		t.Fatal(err)
	}
	snap := &snapshot.Snapshot{Keys: []snapshot.Key{{ID: "key-a", Prefix: prefix, Hash: hash, Models: []string{"*"}}}}
	if _, err := snapshot.Encode(snap); err != nil {
		t.Fatal(err)
	}
	if err := s.ApplySealed(ctx, snap); err != nil {
		t.Fatal(err)
	}
	st := s.state.Load()
	if s.Version() != snap.Version || st.snap != snap || st.idx.Snapshot() != snap {
		t.Fatalf("running %s (own copy: %v), want %s run as handed over", s.Version(), st.snap != snap, snap.Version)
	}
	if k, ok := st.idx.KeyByPrefix(prefix); !ok || k.ID != "key-a" {
		t.Fatalf("key-a not indexed: %v %v", k, ok)
	}
	if err := s.Apply(ctx, snap.Clone()); err != nil || s.state.Load() != st {
		t.Fatalf("the same version again rebuilt the state (%v)", err)
	}
}
