package server

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/llmgw/llmgw/api/keyformat"
	"github.com/llmgw/llmgw/api/money"
	"github.com/llmgw/llmgw/api/snapshot"
	"github.com/llmgw/llmgw/gateway/quota"
	"github.com/llmgw/llmgw/gateway/usage"
)

// After a restart the memory store is empty: RecoverQuotas releases the
// reservations of interrupted requests and puts back what the ledger says
// each budget already spent this period, the keys' own and their group's.
func TestRecoverQuotasSeedsBudgets(t *testing.T) {
	ctx := context.Background()
	l, err := usage.Open(ctx, filepath.Join(t.TempDir(), "usage.db"), usage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	now := time.Date(2026, 11, 5, 12, 0, 0, 0, time.UTC)
	usd := func(s string) money.Picos { p, _ := money.ParseAmount(s); return p }
	n := 0
	spend := func(key string, at time.Time, cost, currency string) {
		n++
		r := usage.Record{RequestID: fmt.Sprint("req-", n), KeyID: key, Group: "team", Status: usage.StatusSuccess, HTTPStatus: 200,
			Cost: usd(cost), Currency: currency, CreatedAt: at, FinishedAt: at.Add(time.Second)}
		if err := l.Finish(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	spend("key-a", time.Date(2026, 10, 31, 23, 59, 0, 0, time.UTC), "100", "USD") // last month
	spend("key-a", time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC), "1", "USD")
	spend("key-a", time.Date(2026, 11, 4, 10, 0, 0, 0, time.UTC), "1", "USD")
	spend("key-a", time.Date(2026, 11, 5, 1, 0, 0, 0, time.UTC), "1", "USD")
	spend("key-a", time.Date(2026, 11, 5, 2, 0, 0, 0, time.UTC), "50", "EUR") // before a currency change
	spend("key-b", time.Date(2026, 11, 4, 23, 0, 0, 0, time.UTC), "7", "USD") // yesterday
	spend("key-b", time.Date(2026, 11, 5, 9, 0, 0, 0, time.UTC), "2", "USD")

	s, err := New(Options{Ledger: l})
	if err != nil {
		t.Fatal(err)
	}
	s.now = func() time.Time { return now }
	mem := s.quota.(*quota.Memory)
	// A reservation a shared store would still hold for a crashed request.
	crashed := quota.Limit{Counter: "k/key-c/budget/2026-11", Kind: quota.Window, Capacity: 10, End: now.Add(time.Hour), Amount: 10}
	if d, err := mem.Reserve(ctx, "req-crashed", []quota.Limit{crashed}, time.Hour, now); err != nil || !d.Allowed {
		t.Fatal(d, err)
	}
	if err := s.RecoverQuotas(ctx, []string{"req-crashed", "req-never-reserved"}); err != nil {
		t.Fatal(err)
	}
	if d, _ := mem.Reserve(ctx, "", []quota.Limit{crashed}, 0, now); !d.Allowed {
		t.Fatal("the interrupted request's reservation was not released")
	}

	snap := &snapshot.Snapshot{Groups: []snapshot.Group{{Name: "team", Budget: &snapshot.Budget{Amount: "20"}}}}
	for _, k := range []struct {
		id     string
		budget *snapshot.Budget
	}{
		{"key-a", &snapshot.Budget{Amount: "3.5", Period: snapshot.PeriodMonth}},
		{"key-b", &snapshot.Budget{Amount: "2.5", Period: snapshot.PeriodDay}},
	} {
		plain, prefix, hash, err := keyformat.Generate()
		if err != nil || plain == "" {
			t.Fatal(err)
		}
		snap.Keys = append(snap.Keys, snapshot.Key{ID: k.id, Prefix: prefix, Hash: hash, Models: []string{"*"}, Budget: k.budget, Group: "team"})
	}
	if err := s.Apply(ctx, snap); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		counter string
		room    string
	}{
		{"k/key-a/budget/2026-11", "0.5"},    // 3.5 − 3 USD this month (not October's, not the EUR)
		{"k/key-b/budget/2026-11-05", "0.5"}, // 2.5 − 2 today
		{"g/team/budget/2026-11", "8"},       // 20 − (3 + 9) this month
	} {
		var capacity money.Picos
		switch c.counter[0] {
		case 'g':
			capacity = usd("20")
		default:
			capacity = map[string]money.Picos{"k/key-a/budget/2026-11": usd("3.5"), "k/key-b/budget/2026-11-05": usd("2.5")}[c.counter]
		}
		l := quota.Limit{Counter: c.counter, Kind: quota.Window, Capacity: int64(capacity), End: now.Add(24 * time.Hour), Amount: int64(usd(c.room)) + 1}
		if d, _ := mem.Reserve(ctx, "", []quota.Limit{l}, 0, now); d.Allowed {
			t.Errorf("%s has more than %s left", c.counter, c.room)
		}
		l.Amount--
		if d, _ := mem.Reserve(ctx, "", []quota.Limit{l}, 0, now); !d.Allowed {
			t.Errorf("%s has less than %s left", c.counter, c.room)
		}
	}
	// Applying again (a reload) does not count the spend twice.
	snap.Version = ""
	snap.Limits.MaxConcurrent = 7
	if err := s.Apply(ctx, snap); err != nil {
		t.Fatal(err)
	}
	l2 := quota.Limit{Counter: "k/key-b/budget/2026-11-05", Kind: quota.Window, Capacity: int64(usd("2.5")), End: now.Add(time.Hour)}
	if d, _ := mem.Reserve(ctx, "", []quota.Limit{l2}, 0, now); !d.Allowed {
		t.Error("a second Apply seeded the spend again")
	}
}
