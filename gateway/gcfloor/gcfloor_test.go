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
	if tu := Start(0, ""); tu != nil {
		t.Fatal("a zero floor started a tuner")
	}
	if tu := Start(8*mib, "200"); tu != nil {
		t.Fatal("GOGC from the environment was overridden")
	}
}

var sink []byte

// cyclesFor counts the collections while n bytes of garbage are allocated in
// 1 KiB pieces.
func cyclesFor(n int) uint64 {
	s := []metrics.Sample{{Name: "/gc/cycles/total:gc-cycles"}}
	runtime.GC()
	metrics.Read(s)
	before := s[0].Value.Uint64()
	for range n / 1024 {
		sink = make([]byte, 1024)
	}
	metrics.Read(s)
	return s[0].Value.Uint64() - before
}

func TestFloorMeansFewerCyclesForTheSameGarbage(t *testing.T) {
	const garbage = 96 * mib
	plain := cyclesFor(garbage)
	tu := Start(16*mib, "")
	if tu == nil {
		t.Fatal("no tuner")
	}
	defer tu.Stop()
	waitPercent(t, tu, func(p int) bool { return p > 100 })
	tuned := cyclesFor(garbage)
	t.Logf("%d MiB of garbage: %d cycles at GOGC=100, %d with a 16 MiB floor (GOGC %d)", garbage/mib, plain, tuned, tu.Percent())
	// The default goal is 4 MiB over a small live heap, the floor's 16:
	// about a quarter of the cycles; half is the bar.
	if tuned*2 > plain {
		t.Fatalf("%d cycles with the floor against %d without", tuned, plain)
	}
}

func TestALargeLiveHeapGetsDefaultPacing(t *testing.T) {
	tu := Start(8*mib, "")
	if tu == nil {
		t.Fatal("no tuner")
	}
	if Start(8*mib, "") != nil {
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
	tu := startWithTick(t, 32*mib, 20*time.Millisecond)
	defer tu.Stop()
	waitPercent(t, tu, func(p int) bool { return p > 100 })
	// Garbage the default pacing would have collected by now, below the
	// floor's goal: no cycle comes to free it.
	for range 12 * mib / 1024 {
		sink = make([]byte, 1024)
	}
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	deadline := time.Now().Add(10 * time.Second)
	for tu.Released() == 0 {
		if time.Now().After(deadline) {
			metrics.Read(s)
			t.Fatalf("no release while idle; heap objects %d MiB", s[0].Value.Uint64()/mib)
		}
		time.Sleep(5 * time.Millisecond)
	}
	metrics.Read(s)
	if got := s[0].Value.Uint64(); got > 4*mib {
		t.Fatalf("heap objects after the release: %d MiB", got/mib)
	}
	// Once per idle spell: nothing new to give back, no second forced cycle.
	time.Sleep(200 * time.Millisecond)
	if n := tu.Released(); n != 1 {
		t.Fatalf("%d releases in one idle spell", n)
	}
}

// startWithTick is Start with the idle watch's tick shortened.
func startWithTick(t *testing.T, floor uint64, tick time.Duration) *Tuner {
	t.Helper()
	old := idleTickFor
	idleTickFor = func() time.Duration { return tick }
	defer func() { idleTickFor = old }()
	tu := Start(floor, "")
	if tu == nil {
		t.Fatal("no tuner")
	}
	return tu
}
