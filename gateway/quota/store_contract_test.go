package quota_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/llmgw/llmgw/gateway/quota"
)

// The contract cases (redis_contract_test.go) on the in-process stores.

func TestMemoryContract(t *testing.T) {
	storeContract(t, func(*testing.T) quota.Store { return quota.NewMemory() })
}

// A Failover whose shared store is down, with one replica: every limit is
// its own share, so the local counters must keep the whole contract.
func TestFailoverDegradedContract(t *testing.T) {
	storeContract(t, func(t *testing.T) quota.Store {
		shared := newFlaky()
		shared.down.Store(true)
		f := quota.NewFailover(quota.FailoverOptions{Shared: shared, Replicas: 1, Logger: slog.New(slog.DiscardHandler)})
		// The first call finds the store down and turns degraded.
		if _, err := f.Reserve(context.Background(), "", []quota.Limit{bucket("warm-up", 1, time.Minute, 0)}, 0, t0); err != nil {
			t.Fatal(err)
		}
		if !f.Health().Degraded {
			t.Fatal("not degraded")
		}
		return f
	})
}
