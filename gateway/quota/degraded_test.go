package quota_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/llmgw/llmgw/gateway/quota"
	"github.com/llmgw/llmgw/test/testutil"
)

// flakyShared is a shared store that can be switched off: a Memory while
// up, an error for every call while down.
type flakyShared struct {
	quota.Store
	down  atomic.Bool
	calls atomic.Int64
	used  map[string]int64
}

var errDown = errors.New("dial tcp 10.0.0.1:6379: connect: connection refused")

func newFlaky() *flakyShared { return &flakyShared{Store: quota.NewMemory()} }

func (f *flakyShared) Reserve(ctx context.Context, id string, l []quota.Limit, ttl time.Duration, now time.Time) (quota.Decision, error) {
	f.calls.Add(1)
	if f.down.Load() {
		return quota.Decision{}, errDown
	}
	return f.Store.Reserve(ctx, id, l, ttl, now)
}

func (f *flakyShared) Settle(ctx context.Context, id string, actual []int64, now time.Time) error {
	f.calls.Add(1)
	if f.down.Load() {
		return errDown
	}
	return f.Store.Settle(ctx, id, actual, now)
}

func (f *flakyShared) Ping(context.Context) error {
	if f.down.Load() {
		return errDown
	}
	return nil
}

func (f *flakyShared) Used(counter string) (int64, bool) {
	v, ok := f.used[counter]
	return v, ok
}

// recordingStore records the limits the local store was asked for.
type recordingStore struct {
	mu   sync.Mutex
	seen [][]quota.Limit
	quota.Store
}

func (r *recordingStore) Reserve(ctx context.Context, id string, l []quota.Limit, ttl time.Duration, now time.Time) (quota.Decision, error) {
	r.mu.Lock()
	r.seen = append(r.seen, append([]quota.Limit(nil), l...))
	r.mu.Unlock()
	return r.Store.Reserve(ctx, id, l, ttl, now)
}

// logBuffer is a slog logger into a buffer, safe for concurrent use.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) count(s string) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return strings.Count(b.buf.String(), s)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func (b *logBuffer) logger() *slog.Logger { return slog.New(slog.NewJSONHandler(b, nil)) }

// waitFor polls cond until it holds or 10 s pass.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestFailoverSharesLimitsAmongReadyReplicas(t *testing.T) {
	end := time.Now().Add(time.Hour)
	for _, tc := range []struct {
		name    string
		divisor int
		used    int64
		in      quota.Limit
		want    quota.Limit
	}{
		{"a bucket's capacity is divided, its rate with it", 3, 0,
			bucket("k/a/rpm", 60, time.Minute, 1), bucket("k/a/rpm", 20, time.Minute, 1)},
		{"a capacity below the divisor rounds up to 1 and stretches the period to keep the rate", 3, 0,
			bucket("k/a/rpm", 2, 2*time.Second, 1), bucket("k/a/rpm", 1, 3*time.Second, 1)},
		{"an uneven division rounds the capacity down and keeps the rate exact", 4, 0,
			bucket("k/a/tpm", 10_000, time.Minute, 500), bucket("k/a/tpm", 2500, time.Minute, 500)},
		{"one replica keeps the limit", 1, 0,
			bucket("k/a/rpm", 7, time.Minute, 1), bucket("k/a/rpm", 7, time.Minute, 1)},
		{"a window's room is what was left on the shared store, divided", 2, 60,
			window("k/a/budget/d", 100, end, 5), window("k/a/budget/d", 20, end, 5)},
		{"an overdrawn window leaves no room", 2, 150,
			window("k/a/budget/d", 100, end, 0), window("k/a/budget/d", 0, end, 0)},
		{"a window never seen on the shared store is divided whole", 3, -1,
			window("k/a/budget/d", 100, end, 5), window("k/a/budget/d", 33, end, 5)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			shared := newFlaky()
			if tc.used >= 0 {
				shared.used = map[string]int64{tc.in.Counter: tc.used}
			}
			rec := &recordingStore{Store: quota.NewMemory()}
			f := quota.NewFailover(quota.FailoverOptions{Shared: shared, NewLocal: func() quota.Store { return rec },
				Replicas: tc.divisor, Logger: slog.New(slog.DiscardHandler)})
			shared.down.Store(true)
			if _, err := f.Reserve(context.Background(), "r1", []quota.Limit{tc.in}, time.Minute, time.Now()); err != nil {
				t.Fatal(err)
			}
			if len(rec.seen) != 1 || len(rec.seen[0]) != 1 {
				t.Fatalf("the local store saw %v", rec.seen)
			}
			if got := rec.seen[0][0]; got != tc.want {
				t.Fatalf("local limit %+v, want %+v", got, tc.want)
			}
		})
	}
}

// The states a degraded replica reports are its local counters': each
// limit divided among the ready replicas; the shared store's while it
// answers.
func TestFailoverStates(t *testing.T) {
	end := time.Now().Add(time.Hour)
	for _, tc := range []struct {
		name string
		down bool
		used int64 // the use last seen on the shared store
		in   quota.Limit
		want quota.State
	}{
		{"a bucket, shared", false, 0, bucket("k/s/rpm", 60, time.Minute, 1), quota.State{Limit: 60, Remaining: 59, Reset: time.Second}},
		{"a bucket, degraded: half the capacity at half the rate", true, 0, bucket("k/s/rpm", 60, time.Minute, 1),
			quota.State{Limit: 30, Remaining: 29, Reset: 2 * time.Second}},
		{"a window, shared", false, 60, window("k/s/budget/d", 100, end, 5), quota.State{Limit: 100, Remaining: 95, Reset: time.Hour, Used: 5}},
		{"a window, degraded: the room left on the shared store, divided", true, 60, window("k/s/budget/d", 100, end, 5),
			quota.State{Limit: 20, Remaining: 15, Reset: time.Hour, Used: 5}},
		{"a tally, degraded: counted locally, undivided", true, 60, tally("k/s/budget/m", end, 5), quota.State{Reset: time.Hour, Used: 5}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			shared := newFlaky()
			shared.used = map[string]int64{tc.in.Counter: tc.used}
			f := quota.NewFailover(quota.FailoverOptions{Shared: shared, Replicas: 2, Logger: slog.New(slog.DiscardHandler)})
			shared.down.Store(tc.down)
			now := end.Add(-time.Hour)
			d, err := f.Reserve(context.Background(), "r1", []quota.Limit{tc.in}, time.Minute, now)
			if err != nil || !d.Allowed {
				t.Fatalf("Reserve: %+v %v", d, err)
			}
			if f.Health().Degraded != tc.down {
				t.Fatalf("degraded %v, want %v", f.Health().Degraded, tc.down)
			}
			wantStates(t, d, tc.want)
		})
	}
}

func TestFailoverDegradesAndRecovers(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	shared := newFlaky()
	var logs logBuffer
	var ready atomic.Int64
	ready.Store(2)
	f := quota.NewFailover(quota.FailoverOptions{Shared: shared, Replicas: 3, Logger: logs.logger(),
		ReadyReplicas: func(context.Context) int { return int(ready.Load()) },
		Probe:         5 * time.Millisecond, CountEvery: 5 * time.Millisecond})
	done := make(chan struct{})
	go func() { f.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()

	rpm := []quota.Limit{bucket("k/d/rpm", 60, time.Hour, 1)}
	now := time.Now()
	for range 10 {
		wantAllowed(t, f, "", rpm, now)
	}
	if h := f.Health(); h.Degraded || h.Transitions != 0 {
		t.Fatalf("health %+v while the store answers", h)
	}

	t.Log("the store goes away: the next call (a Settle here) fails over at once, and later calls do not touch it")
	shared.down.Store(true)
	mustSettle(t, f, "some-request", now, 0)
	h := f.Health()
	if !h.Degraded || h.LastError != errDown.Error() {
		t.Fatalf("health %+v after a failed call, want degraded with the error", h)
	}
	// Until counted, the divisor is the configured 3; then the ready 2.
	waitFor(t, "the ready replicas are counted", func() bool { return f.Health().Divisor == 2 })
	before := shared.calls.Load()
	// 60 per hour ÷ 2 = 30 here, a fresh local count.
	for range 30 {
		wantAllowed(t, f, "", rpm, now)
	}
	wantDenied(t, f, "", rpm, now, 0, 2*time.Minute)
	if n := shared.calls.Load(); n != before {
		t.Fatalf("%d calls reached the unreachable store while degraded", n-before)
	}
	// Many failed pings later: still one line.
	time.Sleep(50 * time.Millisecond)
	if n := logs.count("quota store unreachable"); n != 1 {
		t.Fatalf("%d 'unreachable' log lines for one outage, want 1:\n%s", n, logs.String())
	}

	t.Log("a count that is not known yet (0) keeps the divisor")
	ready.Store(0)
	time.Sleep(50 * time.Millisecond) // ten counting rounds
	if d := f.Health().Divisor; d != 2 {
		t.Fatalf("divisor %d after counts of 0, want it kept at 2", d)
	}

	t.Log("a replica more turns ready: the share shrinks to 20 per hour")
	ready.Store(3)
	waitFor(t, "the divisor follows the ready replicas", func() bool { return f.Health().Divisor == 3 })
	wantDenied(t, f, "", rpm, now, 0, 3*time.Minute)

	t.Log("local reservations settle locally")
	budget := []quota.Limit{window("k/d/budget/d", 90, now.Add(time.Hour), 30)}
	wantAllowed(t, f, "loc-1", budget, now) // 30 of 90÷3
	wantDenied(t, f, "loc-2", with(budget, 1), now, 0, time.Hour)
	mustSettle(t, f, "loc-1", now, 10)
	wantAllowed(t, f, "loc-3", with(budget, 20), now)

	t.Log("the store is back: the first ping recovers, one line says so")
	shared.down.Store(false)
	waitFor(t, "the store is used again", func() bool { return !f.Health().Degraded })
	if n := logs.count("quota store reachable again"); n != 1 {
		t.Fatalf("%d 'reachable again' log lines, want 1:\n%s", n, logs.String())
	}
	if h := f.Health(); h.Transitions != 2 || h.LastError != "" {
		t.Fatalf("health %+v after the recovery", h)
	}
	before = shared.calls.Load()
	// The shared bucket still holds what it held before the outage: 50.
	for range 50 {
		wantAllowed(t, f, "", rpm, now)
	}
	wantDenied(t, f, "", rpm, now, 0, time.Minute)
	if shared.calls.Load() != before+51 {
		t.Fatal("calls after the recovery did not go to the shared store")
	}
	// A reservation made locally during the outage still settles there.
	mustSettle(t, f, "loc-3", now, 0)
}

func TestFailoverFailClosed(t *testing.T) {
	shared := newFlaky()
	var logs logBuffer
	f := quota.NewFailover(quota.FailoverOptions{Shared: shared, FailClosed: true, Logger: logs.logger()})
	rpm := []quota.Limit{bucket("k/fc/rpm", 60, time.Minute, 1)}
	wantAllowed(t, f, "", rpm, time.Now())
	shared.down.Store(true)
	for range 3 {
		_, err := f.Reserve(context.Background(), "r", rpm, time.Minute, time.Now())
		if !errors.Is(err, quota.ErrStoreUnavailable) {
			t.Fatalf("Reserve while down, fail closed: %v, want ErrStoreUnavailable", err)
		}
	}
	if h := f.Health(); !h.Degraded || !h.FailClosed {
		t.Fatalf("health %+v", h)
	}
	if n := logs.count("fail closed"); n != 1 {
		t.Fatalf("%d log lines, want 1:\n%s", n, logs.String())
	}
	// A request without limits is not the store's business.
	if d, err := f.Reserve(context.Background(), "r", nil, time.Minute, time.Now()); err != nil || !d.Allowed {
		t.Fatalf("Reserve without limits: %+v %v", d, err)
	}
}

func TestFailoverPassesUpWhatIsNotAnOutage(t *testing.T) {
	srv := testutil.StartRedis(t, "")
	s := newRedisStore(t, srv, "")
	f := quota.NewFailover(quota.FailoverOptions{Shared: s, Logger: slog.New(slog.DiscardHandler)})
	_, err := f.Reserve(context.Background(), "r", []quota.Limit{{Counter: "", Kind: quota.Bucket}}, time.Minute, time.Now())
	if err == nil {
		t.Fatal("an invalid limit was accepted")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := f.Reserve(ctx, "r", []quota.Limit{bucket("k/x/rpm", 1, time.Minute, 1)}, time.Minute, time.Now()); err == nil {
		t.Fatal("a cancelled call succeeded")
	}
	if h := f.Health(); h.Degraded {
		t.Fatalf("degraded after an invalid limit and a cancelled call: %+v", h)
	}
}

// The real thing: two replicas on one redis-server that is killed and
// started again.
func TestFailoverOnRedisKilledAndBack(t *testing.T) {
	srv := testutil.StartRedis(t, "pw-failover")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var logs logBuffer
	var replicas []*quota.Failover
	var wg sync.WaitGroup
	for range 2 {
		s, err := quota.NewRedis(quota.RedisOptions{URL: srv.URL(), Password: srv.Password, Prefix: "fo:", Timeout: 200 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		f := quota.NewFailover(quota.FailoverOptions{Shared: s, Replicas: 2, Logger: logs.logger(),
			ReadyReplicas: func(context.Context) int { return 2 }, Probe: 20 * time.Millisecond})
		replicas = append(replicas, f)
		wg.Go(func() { f.Run(ctx) })
	}
	defer func() { cancel(); wg.Wait() }()

	// 60 per hour (so nothing refills during the test) over both replicas:
	// 60 in total while the store is up.
	rpm := []quota.Limit{bucket("k/kill/rpm", 60, time.Hour, 1)}
	admitted := func(n int) int {
		got := 0
		for i := range n {
			d, err := replicas[i%2].Reserve(context.Background(), "", rpm, 0, time.Now())
			if err != nil {
				t.Fatal(err)
			}
			if d.Allowed {
				got++
			}
		}
		return got
	}
	if got := admitted(100); got != 60 {
		t.Fatalf("%d of 100 admitted through 2 replicas sharing the store, want 60", got)
	}

	srv.Stop()
	waitFor(t, "both replicas are degraded", func() bool { return replicas[0].Health().Degraded && replicas[1].Health().Degraded })
	// Each replica alone: 60 ÷ 2 = 30, a fresh local count.
	if got := admitted(100); got != 60 {
		t.Fatalf("%d of 100 admitted through 2 degraded replicas, want 2 × 30", got)
	}

	srv.Restart() // empty: no persistence
	waitFor(t, "both replicas recovered", func() bool { return !replicas[0].Health().Degraded && !replicas[1].Health().Degraded })
	if got := admitted(100); got != 60 {
		t.Fatalf("%d of 100 admitted after the recovery, want 60 (a new, shared count)", got)
	}
	if n, m := logs.count("quota store unreachable"), logs.count("quota store reachable again"); n != 2 || m != 2 {
		t.Fatalf("%d 'unreachable' and %d 'reachable again' lines for one outage seen by 2 replicas, want 2 and 2:\n%s", n, m, logs.String())
	}
	if strings.Contains(logs.String(), "pw-failover") {
		t.Fatal("the store's password is in the log")
	}
}
