package snapshot_test

import (
	"path/filepath"
	"testing"

	"github.com/llmgw/llmgw/api/snapshot"
	"github.com/llmgw/llmgw/test/testutil"
)

// TestFileHoldsFiftyThousandKeys: the file mode takes the scale the
// Kubernetes mode is built for (the file limit once stopped at about 45,000
// keys).
func TestFileHoldsFiftyThousandKeys(t *testing.T) {
	if testing.Short() {
		t.Skip("encodes and parses 50,000 keys")
	}
	s := testutil.ScaleSnapshot(50_000, 1_000)
	path := filepath.Join(t.TempDir(), "snapshot.json")
	if err := snapshot.WriteFile(path, s); err != nil {
		t.Fatal(err)
	}
	got, err := snapshot.LoadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Keys) != 50_000 || got.Version != s.Version {
		t.Fatalf("%d keys, version %s; want 50000 and %s", len(got.Keys), got.Version, s.Version)
	}
}
