package source

import (
	"context"
	"io"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"k8s.io/client-go/tools/cache"

	"github.com/llmgw/llmgw/api/snapshot"
	"github.com/llmgw/llmgw/gateway/server"
	"github.com/llmgw/llmgw/gateway/usage"
	"github.com/llmgw/llmgw/test/testutil"
)

// BenchmarkScaleReload is a gateway's reload at 50,000 keys and 1,000
// aliases, after the parts are in its informer's store: assemble (cold: every
// part decoded, as at start; one-key: one shard decoded, the others cached)
// and the server's ApplySealed (build the state, swap), as the Kubernetes
// source runs it. Run with
//
//	go test ./gateway/source -run '^$' -bench ScaleReload -benchtime 5x
func BenchmarkScaleReload(b *testing.B) {
	s := testutil.ScaleSnapshot(50_000, 1_000)
	ctx := context.Background()
	ledger, err := usage.Open(ctx, filepath.Join(b.TempDir(), "usage.db"), usage.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer ledger.Close()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	srv, err := server.New(server.Options{Ledger: ledger, Logger: log, Credentials: staticCredentials{}})
	if err != nil {
		b.Fatal(err)
	}
	h := &assemblerHarness{}
	h.assembler = &assembler{namespace: "ns", head: snapshot.DefaultConfigMapName, log: log,
		parts: map[string]decodedPart{}, waitReport: partWaitReport}
	h.apply = func(snap *snapshot.Snapshot) {
		if err := applySealed(ctx, srv, snap); err != nil {
			b.Fatal(err)
		}
	}
	h.reject = func(err error) { b.Fatal(err) }
	publish := func() {
		parts, head, err := testutil.SnapshotConfigMaps("ns", snapshot.DefaultConfigMapName, s, 0)
		if err != nil {
			b.Fatal(err)
		}
		for _, p := range append(parts, head) {
			if err := h.store.Update(p); err != nil {
				b.Fatal(err)
			}
		}
	}
	h.store = cache.NewStore(cache.MetaNamespaceKeyFunc)
	publish()
	h.sync()
	// Only h.sync() is timed (wall and CPU): publishing is the controller's.
	measure := func(b *testing.B, cold bool) {
		var cpu time.Duration
		i := 0
		for b.Loop() {
			b.StopTimer()
			i++
			s.Keys[i].Disabled = !s.Keys[i].Disabled
			s.Version = ""
			if cold {
				h.store = cache.NewStore(cache.MetaNamespaceKeyFunc)
				h.parts = map[string]decodedPart{}
			}
			publish()
			b.StartTimer()
			c0 := testutil.CPUTime()
			h.sync()
			cpu += testutil.CPUTime() - c0
		}
		b.ReportMetric(float64(cpu)/float64(b.N), "cpu-ns/op")
		if srv.Version() != s.Version {
			b.Fatalf("running %s, published %s", srv.Version(), s.Version)
		}
	}
	b.Run("cold", func(b *testing.B) { measure(b, true) })
	b.Run("one-key-changed", func(b *testing.B) { measure(b, false) })
}

type staticCredentials struct{}

func (staticCredentials) Resolve(context.Context, string, snapshot.Credential) (string, error) {
	return "sk-bench", nil
}
