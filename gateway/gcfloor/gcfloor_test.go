package gcfloor

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"testing"
	"time"
)

const mib = 1 << 20

func TestPercentFor(t *testing.T) {
	for _, c := range []struct {
		name               string
		floor, live, roots uint64
		want               int
	}{
		{"the gateway at rest: the minimum heap caps it", 8 * mib, 2 * mib, 5 * mib / 2, 200},
		{"roots alone would reach the floor sooner", 8 * mib, 3 * mib, 4 * mib, 125},
		{"live half the floor: default pacing", 8 * mib, 4 * mib, 9 * mib / 2, 100},
		{"live above the floor", 8 * mib, 20 * mib, 21 * mib, 100},
		{"a tiny heap under a large floor: capped", 64 * mib, mib, mib, maxPercent},
		{"no roots read", 8 * mib, 0, 0, 100},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := percentFor(c.floor, c.live, c.roots, 100); got != c.want {
				t.Fatalf("percentFor(%d, %d, %d) = %d, want %d", c.floor, c.live, c.roots, got, c.want)
			}
		})
	}
	if got := percentFor(8*mib, 20*mib, 21*mib, 150); got != 150 {
		t.Fatalf("a base above 100 is kept: got %d", got)
	}
}

func TestStartLeavesAnExplicitChoiceAlone(t *testing.T) {
	if tu := Start(0, 0, ""); tu != nil {
		t.Fatal("a zero floor started a tuner")
	}
	if tu := Start(8*mib, 0, "200"); tu != nil {
		t.Fatal("GOGC from the environment was overridden")
	}
}

var sink []byte

// goalAfterGC is the collector's heap goal right after a full cycle: the
// heap size at which the next one starts, so the garbage a cycle is paced
// for is this less the live heap. (Counting cycles while allocating is not
// a measure: how far the heap overshoots its goal during a cycle depends on
// how fast the loop allocates against the marking.)
func goalAfterGC() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/goal:bytes"}}
	runtime.GC()
	metrics.Read(s)
	return s[0].Value.Uint64()
}

func TestFloorRaisesTheGoalOfASmallHeap(t *testing.T) {
	plain := goalAfterGC()
	tu := Start(16*mib, 0, "")
	if tu == nil {
		t.Fatal("no tuner")
	}
	defer tu.Stop()
	waitPercent(t, tu, func(p int) bool { return p > 100 })
	tuned := goalAfterGC()
	t.Logf("heap goal %d KiB at GOGC=100, %d KiB with a 16 MiB floor (GOGC %d)", plain>>10, tuned>>10, tu.Percent())
	// The default goal of a small live heap is the 4 MiB minimum; the floor's
	// is the floor, give or take the live heap's rounding.
	if plain > 5*mib || tuned < 15*mib || tuned > 17*mib {
		t.Fatalf("goal %d KiB without the floor, %d KiB with it", plain>>10, tuned>>10)
	}
}

func TestALargeLiveHeapGetsDefaultPacing(t *testing.T) {
	tu := Start(8*mib, 0, "")
	if tu == nil {
		t.Fatal("no tuner")
	}
	if Start(8*mib, 0, "") != nil {
		t.Fatal("a second tuner started beside the first")
	}
	waitPercent(t, tu, func(p int) bool { return p > 100 })
	live := make([]*[1024]byte, 16*mib/1024) // pointers, so it is live data to mark
	for i := range live {
		live[i] = new([1024]byte)
	}
	waitPercent(t, tu, func(p int) bool { return p == 100 })
	runtime.KeepAlive(live)
	live = nil
	waitPercent(t, tu, func(p int) bool { return p > 100 })
	tu.Stop()
	if p := debug.SetGCPercent(100); p != 100 {
		t.Fatalf("Stop left GOGC at %d", p)
	}
}

// waitPercent collects until the tuner's percent satisfies ok: its
// adjustment runs after a cycle, on the runtime's cleanup goroutine.
func waitPercent(t *testing.T, tu *Tuner, ok func(int) bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !ok(tu.Percent()) {
		if time.Now().After(deadline) {
			t.Fatalf("GOGC still %d", tu.Percent())
		}
		runtime.GC()
		time.Sleep(time.Millisecond)
	}
}

func TestIdleGivesBackWhatTheFloorHolds(t *testing.T) {
	tu := startFloored(t)
	// Garbage the default pacing would have collected by now, below the
	// floor's goal: no cycle comes to free it.
	garbage(12 * mib)
	// A test goroutine stalled mid-loop on a busy machine may see a release
	// before all its garbage exists; the next quiet look frees the rest.
	objects := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	deadline := time.Now().Add(10 * time.Second)
	for {
		metrics.Read(objects)
		if tu.Released() > 0 && objects[0].Value.Uint64() <= 4*mib {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no release while idle: %d releases, heap objects %d MiB", tu.Released(), objects[0].Value.Uint64()/mib)
		}
		time.Sleep(5 * time.Millisecond)
	}
	// Nothing allocated since: nothing to give back, no further forced cycle.
	n := tu.Released()
	time.Sleep(200 * time.Millisecond)
	if got := tu.Released(); got != n {
		t.Fatalf("%d releases without allocating in between", got-n)
	}
}

// A cycle that ran just before the process went idle left little garbage,
// but the pages of a heap grown to the floor stay in hand: the runtime's
// scavenger keeps what lies under the (floored) goal. The idle watch must
// return them too.
func TestIdleGivesBackFreePagesAfterACycle(t *testing.T) {
	tu := startFloored(t)
	free := []metrics.Sample{{Name: "/memory/classes/heap/free:bytes"}}
	var n int
	for attempt := 1; ; attempt++ {
		garbage(24 * mib)
		n = tu.Released()
		runtime.GC()
		metrics.Read(free)
		if free[0].Value.Uint64() >= 8*mib {
			break
		}
		// A release ran meanwhile (the test goroutine stalled long enough
		// to look idle) and returned the pages first: set it up again.
		if attempt == 5 {
			t.Fatalf("only %d MiB of free pages in hand after the cycle, 5 times", free[0].Value.Uint64()/mib)
		}
	}
	waitRelease(t, tu, n)
	metrics.Read(free)
	if got := free[0].Value.Uint64(); got > 2*mib {
		t.Fatalf("free pages in hand after the release: %d MiB", got/mib)
	}
}

func TestReleaseDue(t *testing.T) {
	const quiet = 64 << 10
	for _, c := range []struct {
		name                    string
		allocated, inHand, live uint64
		want                    bool
	}{
		{"quiet, the floor's pages in hand", 0, 8 * mib, 1 * mib, true},
		{"quiet, just under the quiet rate", quiet - 1, 8 * mib, 1 * mib, true},
		// Allocating without a cycle is not idle: e5340ab's "a tick
		// without a cycle" forced a collection here.
		{"allocating, the floor's pages in hand", quiet, 8 * mib, 1 * mib, false},
		{"allocating fast", 100 * mib, 30 * mib, 1 * mib, false},
		{"quiet, no more than default pacing keeps (4 MiB + 10 %)", 0, 4 * mib * 11 / 10, 1 * mib, false},
		{"quiet, just over it", 0, 4*mib*11/10 + 1, 1 * mib, true},
		{"quiet, a large live heap holds its own goal", 0, 40 * mib, 20 * mib, false},
		{"quiet, a large live heap with more in hand than twice it", 0, 50 * mib, 20 * mib, true},
	} {
		if got := releaseDue(c.allocated, quiet, c.inHand, c.live); got != c.want {
			t.Errorf("%s: releaseDue(%d, %d, %d, %d) = %v", c.name, c.allocated, quiet, c.inHand, c.live, got)
		}
	}
}

// waitRelease waits for the idle watch's release after the n-th.
func waitRelease(t *testing.T, tu *Tuner, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for tu.Released() <= n {
		if time.Now().After(deadline) {
			s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}, {Name: "/memory/classes/heap/free:bytes"}}
			metrics.Read(s)
			t.Fatalf("no release while idle; heap objects %d MiB, free pages %d MiB", s[0].Value.Uint64()/mib, s[1].Value.Uint64()/mib)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// startFloored starts a 32 MiB floor with a 20 ms idle tick and waits for
// its first raised percent; the test's cleanup stops it.
func startFloored(t *testing.T) *Tuner {
	t.Helper()
	tu := startWithTick(t, 32*mib, 20*time.Millisecond, 0)
	t.Cleanup(tu.Stop)
	waitPercent(t, tu, func(p int) bool { return p > 100 })
	return tu
}

// garbage allocates n bytes in 1 KiB pieces, none kept.
func garbage(n int) {
	for range n / 1024 {
		sink = make([]byte, 1024)
	}
}

// startWithTick is Start with the idle watch's tick shortened.
func startWithTick(t *testing.T, floor uint64, tick, idleAfter time.Duration) *Tuner {
	t.Helper()
	old := idleTickFor
	idleTickFor = func() time.Duration { return tick }
	defer func() { idleTickFor = old }()
	tu := Start(floor, idleAfter, "")
	if tu == nil {
		t.Fatal("no tuner")
	}
	return tu
}

func TestQuietTicks(t *testing.T) {
	const tick = 250 * time.Millisecond
	for _, c := range []struct {
		idleAfter time.Duration
		want      int
	}{{0, 1}, {time.Millisecond, 1}, {tick, 1}, {tick + 1, 2}, {2 * time.Second, 8}, {time.Minute, 240}} {
		if got := quietTicks(c.idleAfter, tick); got != c.want {
			t.Errorf("quietTicks(%v, %v) = %d, want %d", c.idleAfter, tick, got, c.want)
		}
	}
}

// The release waits for idleAfter of quiet after the last allocation: a
// lower bound, which a slow machine (late ticks) only makes later.
func TestReleaseWaitsForTheQuietSpell(t *testing.T) {
	const tick, idleAfter = 20 * time.Millisecond, 400 * time.Millisecond
	tu := startWithTick(t, 32*mib, tick, idleAfter)
	t.Cleanup(tu.Stop)
	waitPercent(t, tu, func(p int) bool { return p > 100 })
	n := tu.Released()
	garbage(12 * mib)
	last := time.Now()
	waitRelease(t, tu, n)
	// The tick the garbage ended in was busy; the release comes on the
	// quietTicks-th quiet tick after it.
	if since := time.Since(last); since < idleAfter-tick {
		t.Fatalf("released %v after the last allocation, before %v of quiet", since, idleAfter)
	}
}
