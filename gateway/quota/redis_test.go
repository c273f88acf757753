package quota_test

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/llmgw/llmgw/gateway/quota"
	"github.com/llmgw/llmgw/test/testutil"
)

var testPrefixes atomic.Int64

// newRedisStore is a store on srv with a prefix of its own, so tests that
// share a server never see each other's counters.
func newRedisStore(t *testing.T, srv *testutil.RedisServer, prefix string) *quota.Redis {
	t.Helper()
	if prefix == "" {
		prefix = "t" + strconv.FormatInt(testPrefixes.Add(1), 10) + ":"
	}
	s, err := quota.NewRedis(quota.RedisOptions{URL: srv.URL(), Password: srv.Password, Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func TestRedisContract(t *testing.T) {
	srv := testutil.StartRedis(t, "")
	storeContract(t, func(t *testing.T) quota.Store { return newRedisStore(t, srv, "") })
}

func TestRedisReplicasShareCounters(t *testing.T) {
	srv := testutil.StartRedis(t, "s3cret-test-password")
	prefix := "shared:"
	replicas := []*quota.Redis{newRedisStore(t, srv, prefix), newRedisStore(t, srv, prefix), newRedisStore(t, srv, prefix)}
	// 60 per minute with a burst of 10, hammered by three replicas in
	// parallel at the same instant: exactly 10 pass, whoever asks.
	rpm := []quota.Limit{bucket("k/shared/rpm", 10, 10*time.Second, 1)}
	var allowed atomic.Int64
	var wg sync.WaitGroup
	for i := range 90 {
		wg.Go(func() {
			d, err := replicas[i%3].Reserve(context.Background(), "", rpm, 0, t0)
			if err != nil {
				t.Error(err)
				return
			}
			if d.Allowed {
				allowed.Add(1)
			}
		})
	}
	wg.Wait()
	if got := allowed.Load(); got != 10 {
		t.Fatalf("%d of 90 admitted across 3 replicas, want 10 (the burst)", got)
	}
	// A minute later, exactly 60 more (the refill), again spread over replicas.
	allowed.Store(0)
	for i := range 90 {
		wg.Go(func() {
			// Every second of the minute, as the clock of whichever replica.
			now := t0.Add(time.Duration(i*2/3+1) * time.Second)
			if d, err := replicas[i%3].Reserve(context.Background(), "", rpm, 0, now); err == nil && d.Allowed {
				allowed.Add(1)
			}
		})
	}
	wg.Wait()
	// The clocks come out of order, so some refill is never seen: at most
	// the minute's 60, never a replica's own bucket on top.
	if got := allowed.Load(); got > 60 {
		t.Fatalf("%d admitted in the next minute, want at most 60", got)
	}

	// A reservation made through one replica is settled through another.
	end := t0.Add(time.Hour)
	budget := []quota.Limit{window("k/shared/budget/d", 100, end, 100)}
	wantAllowed(t, replicas[0], "req-1", budget, t0)
	wantDenied(t, replicas[1], "req-2", with(budget, 1), t0, 0, time.Hour)
	mustSettle(t, replicas[2], "req-1", t0, 30)
	wantAllowed(t, replicas[1], "req-3", with(budget, 70), t0)
	if used, ok := replicas[1].Used("k/shared/budget/d"); !ok || used != 100 {
		t.Fatalf("replica 1 remembers use %d (%v), want 100", used, ok)
	}

	// The states are the shared counters': what one replica took, the
	// others report; a tally on one replica is the window on another.
	spend := []quota.Limit{tally("k/shared/budget/m", end, 40), bucket("k/shared/tpm", 600, time.Minute, 100)}
	wantStates(t, mustReserve(t, replicas[0], "req-4", spend, t0),
		quota.State{Reset: time.Hour, Used: 40}, quota.State{Limit: 600, Remaining: 500, Reset: 10 * time.Second})
	wantStates(t, mustReserve(t, replicas[1], "req-5", []quota.Limit{window("k/shared/budget/m", 100, end, 10), spend[1]}, t0),
		quota.State{Limit: 100, Remaining: 50, Reset: time.Hour, Used: 50}, quota.State{Limit: 600, Remaining: 400, Reset: 20 * time.Second})
	if used, ok := replicas[0].Used("k/shared/budget/m"); !ok || used != 40 {
		t.Fatalf("replica 0 remembers the tally's use %d (%v), want 40", used, ok)
	}
}

func TestRedisExpiry(t *testing.T) {
	srv := testutil.StartRedis(t, "")
	s := newRedisStore(t, srv, "exp:")
	c := srv.Client()
	defer c.Close()
	ctx := context.Background()
	now := time.Now()

	// A reservation that is never settled expires after its TTL, and what
	// it took stays taken.
	end := now.Add(time.Hour)
	budget := []quota.Limit{window("k/x/budget/d", 100, end, 70)}
	if d, err := s.Reserve(ctx, "lost", budget, 200*time.Millisecond, now); err != nil || !d.Allowed {
		t.Fatalf("Reserve: %+v %v", d, err)
	}
	if n, _ := c.Exists(ctx, "exp:r:lost").Result(); n != 1 {
		t.Fatal("no reservation entry after Reserve")
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		n, err := c.Exists(ctx, "exp:r:lost").Result()
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the reservation entry did not expire within 10s of a 200ms TTL")
		}
		time.Sleep(20 * time.Millisecond)
	}
	mustSettle(t, s, "lost", now, 0) // too late: nothing to give back
	wantDenied(t, s, "again", with(budget, 31), now, 0, time.Hour)

	// Every counter has a TTL: a window until its end plus the grace (1
	// min), a bucket until it would be full again plus the grace.
	ttl, err := c.PTTL(ctx, "exp:w:k/x/budget/d").Result()
	if err != nil {
		t.Fatal(err)
	}
	if want := time.Until(end) + time.Minute; ttl <= 0 || ttl > want+time.Second || ttl < want-5*time.Second {
		t.Fatalf("window TTL %v, want about %v", ttl, want)
	}
	// A tally is a window: its key lives until its end plus the grace.
	tallyEnd := now.Add(2 * time.Hour)
	wantAllowed(t, s, "", []quota.Limit{tally("k/x/budget/m", tallyEnd, 5)}, now)
	ttl, err = c.PTTL(ctx, "exp:w:k/x/budget/m").Result()
	if err != nil {
		t.Fatal(err)
	}
	if want := time.Until(tallyEnd) + time.Minute; ttl <= 0 || ttl > want+time.Second || ttl < want-5*time.Second {
		t.Fatalf("tally TTL %v, want about %v", ttl, want)
	}
	wantAllowed(t, s, "", []quota.Limit{bucket("k/x/tpm", 1000, time.Minute, 500)}, now)
	ttl, err = c.PTTL(ctx, "exp:b:k/x/tpm").Result()
	if err != nil {
		t.Fatal(err)
	}
	// 500 of 1000 per minute: full again in 30 s.
	if want := 30*time.Second + time.Minute; ttl <= 0 || ttl > want+time.Second || ttl < want-5*time.Second {
		t.Fatalf("bucket TTL %v, want about %v", ttl, want)
	}
	// A full bucket needs no key beyond the grace.
	wantAllowed(t, s, "", []quota.Limit{bucket("k/y/tpm", 1000, time.Minute, 0)}, now)
	if ttl, _ := c.PTTL(ctx, "exp:b:k/y/tpm").Result(); ttl > time.Minute {
		t.Fatalf("full bucket TTL %v, want at most the grace", ttl)
	}
}

func TestRedisOptions(t *testing.T) {
	srv := testutil.StartRedis(t, "the-real-password")
	for _, tc := range []struct {
		name, url, password, wantErr string
		forbid                       string // must not appear in the error
	}{
		{"a password in the URL is refused without echoing it", "redis://:hunter2pw@127.0.0.1:1", "", "must not contain a password", "hunter2pw"},
		{"a user and password in the URL too", "redis://admin:hunter2pw@127.0.0.1:1", "", "must not contain a password", "hunter2pw"},
		{"another scheme is refused", "http://127.0.0.1:1", "", `scheme "http"`, ""},
		{"a broken URL is refused without echoing it", "redis://:hunter2pw@[::1", "", "does not parse", "hunter2pw"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := quota.NewRedis(quota.RedisOptions{URL: tc.url, Password: tc.password})
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("NewRedis(%q): %v, want an error containing %q", tc.url, err, tc.wantErr)
			}
			if tc.forbid != "" && strings.Contains(err.Error(), tc.forbid) {
				t.Fatalf("the error echoes the password: %v", err)
			}
		})
	}
	t.Run("the password authenticates; without it the store refuses", func(t *testing.T) {
		ctx := context.Background()
		good, err := quota.NewRedis(quota.RedisOptions{URL: srv.URL(), Password: "the-real-password"})
		if err != nil {
			t.Fatal(err)
		}
		defer good.Close()
		if err := good.Ping(ctx); err != nil {
			t.Fatalf("Ping with the password: %v", err)
		}
		bad, err := quota.NewRedis(quota.RedisOptions{URL: srv.URL(), Password: "not-the-password-xyz"})
		if err != nil {
			t.Fatal(err)
		}
		defer bad.Close()
		_, err = bad.Reserve(ctx, "r", []quota.Limit{bucket("k/p/rpm", 1, time.Minute, 1)}, time.Minute, time.Now())
		if err == nil {
			t.Fatal("Reserve with a wrong password succeeded")
		}
		if strings.Contains(err.Error(), "the-real-password") || strings.Contains(err.Error(), "not-the-password-xyz") {
			t.Fatalf("the error shows a password: %v", err)
		}
	})
	t.Run("invalid limits are refused before any call", func(t *testing.T) {
		s := newRedisStore(t, srv, "")
		for _, l := range []quota.Limit{
			{Counter: "", Kind: quota.Bucket, Capacity: 1, Period: time.Minute},
			{Counter: "c", Kind: quota.Bucket, Capacity: 0, Period: time.Minute},
			{Counter: "c", Kind: quota.Bucket, Capacity: 1, Period: 0},
			{Counter: "c", Kind: quota.Window, Capacity: 1, Amount: -1},
			{Counter: "c", Kind: 0, Capacity: 1},
		} {
			if _, err := s.Reserve(context.Background(), "r", []quota.Limit{l}, time.Minute, time.Now()); err == nil {
				t.Errorf("Reserve accepted %+v", l)
			}
		}
	})
}

func TestRedisUnreachableFailsFast(t *testing.T) {
	srv := testutil.StartRedis(t, "")
	s, err := quota.NewRedis(quota.RedisOptions{URL: srv.URL(), Timeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	rpm := []quota.Limit{bucket("k/down/rpm", 5, time.Minute, 1)}
	wantAllowed(t, s, "", rpm, time.Now())
	srv.Stop()
	start := time.Now()
	_, err = s.Reserve(ctx, "r", rpm, time.Minute, time.Now())
	if err == nil {
		t.Fatal("Reserve succeeded with the store down")
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Fatalf("Reserve took %v to fail with the store down, want well under 2s", took)
	}
	if err := s.Settle(ctx, "r", []int64{0}, time.Now()); err == nil {
		t.Fatal("Settle succeeded with the store down")
	}
	srv.Restart()
	// The client reconnects by itself.
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := s.Ping(ctx)
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no reconnect within 10s: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	wantAllowed(t, s, "", rpm, time.Now())
}

func TestRedisSettleArity(t *testing.T) {
	srv := testutil.StartRedis(t, "")
	s := newRedisStore(t, srv, "")
	end := t0.Add(time.Hour)
	wantAllowed(t, s, "r1", []quota.Limit{window("k/ar/budget/d", 100, end, 10), bucket("k/ar/tpm", 10, time.Minute, 1)}, t0)
	err := s.Settle(context.Background(), "r1", []int64{1}, t0)
	if err == nil || !strings.Contains(err.Error(), "1 amounts for a reservation of 2 limits") {
		t.Fatalf("Settle with one amount for two limits: %v", err)
	}
	// The reservation is still there and settles properly.
	mustSettle(t, s, "r1", t0, 100, 1)
	wantDenied(t, s, "r2", []quota.Limit{window("k/ar/budget/d", 100, end, 1)}, t0, 0, time.Hour)
}

// go-redis retries a command once on a broken connection, and the first
// attempt may have run: the same id must not take twice.
func TestRedisReserveIsIdempotentPerID(t *testing.T) {
	srv := testutil.StartRedis(t, "")
	s := newRedisStore(t, srv, "")
	end := t0.Add(time.Hour)
	budget := []quota.Limit{window("k/l/budget/d", 100, end, 60)}
	wantAllowed(t, s, "r1", budget, t0)
	// The retry takes nothing and reports the counter as the first call
	// left it.
	d := mustReserve(t, s, "r1", budget, t0)
	if !d.Allowed {
		t.Fatalf("the retried reservation was refused: %+v", d)
	}
	wantStates(t, d, quota.State{Limit: 100, Remaining: 40, Reset: time.Hour, Used: 60})
	mustSettle(t, s, "r1", t0, 60)
	wantAllowed(t, s, "r2", with(budget, 40), t0)
	wantDenied(t, s, "r3", with(budget, 1), t0, 0, time.Hour)

	_, err := s.Reserve(context.Background(), "r4", append(budget, budget[0]), time.Hour, t0)
	if err == nil || !strings.Contains(err.Error(), "named twice") {
		t.Fatalf("Reserve naming a counter twice: %v", err)
	}
	_, err = s.Reserve(context.Background(), "r5", budget, 0, t0)
	if err == nil {
		t.Fatal("Reserve with an id and no ttl succeeded")
	}
}

// Not in the shared contract: it needs time to go back after the settle,
// which the memory store's sweep (dropping ended windows) rightly ignores.
func TestRedisSettleAfterWindowEndIsIgnored(t *testing.T) {
	srv := testutil.StartRedis(t, "")
	s := newRedisStore(t, srv, "")
	end := t0.Add(time.Minute)
	budget := []quota.Limit{window("k/i/budget/d", 100, end, 50)}
	wantAllowed(t, s, "r1", budget, t0)
	mustSettle(t, s, "r1", end.Add(time.Second), 0)
	// The window still counts 50 (the settle came too late to give back).
	wantDenied(t, s, "r2", with(budget, 51), t0.Add(30*time.Second), 0, 30*time.Second)
}
