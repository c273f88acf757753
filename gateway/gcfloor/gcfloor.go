// Package gcfloor keeps the garbage collector's heap goal at or above a
// floor while the live heap is small, and leaves Go's default pacing alone
// once it is not.
//
// With GOGC=100 the collector starts a cycle when the heap reaches twice
// what the last one left live (at least 4 MiB). The gateway's live heap at
// rest is ≈ 2 MiB, nearly all of it the registries the linked packages'
// init functions build (the Kubernetes scheme, protobuf descriptors), so
// under load it collected every ≈ 2 MiB allocated: every 150-odd stream
// requests, each cycle marking the same static 2 MiB again. A floor of F
// lets the heap reach F before a cycle while live + live's scan roots < F/2
// or so, and turns into plain GOGC=100 above it: the peak of many open
// streams, where the live heap is tens of MiB, is paced exactly as before.
// What it costs is at most F − 4 MiB more heap between cycles while the
// live heap is small, and given back once the process idles (watchIdle;
// docs/BENCHMARK.md, "the heap floor and the batch delay").
package gcfloor

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"sync/atomic"
	"time"
)

// Default is the floor `llmgw gateway` runs with unless told otherwise.
const Default = 8 << 20

// maxPercent bounds the GOGC the tuner sets: with a very small live heap
// the floor alone would ask for thousands, and a sudden burst of live data
// then gets that much slack before the first cycle sees it.
const maxPercent = 400

// metric names read after every cycle.
var names = [...]string{"/gc/heap/live:bytes", "/gc/scan/stack:bytes", "/gc/scan/globals:bytes"}

// Tuner re-sets GOGC after every collection; Stop ends it and puts the
// percent it found back.
type Tuner struct {
	floor   uint64
	base    int // the GOGC in force when it started
	stopped atomic.Bool
	mu      sync.Mutex // an adjustment and Stop, so Stop's restore is the last word
	samples [len(names)]metrics.Sample
	percent atomic.Int64 // the last percent set, for tests and logs

	idleTick  time.Duration // how often the idle watch looks
	idleAfter time.Duration // how long allocation stays quiet before a release
	done      chan struct{}
	released  atomic.Int64 // idle releases so far
}

// active holds the process's one tuner: GOGC is the process's, and a
// second tuner would take the first one's percent for its base.
var active atomic.Bool

// Start tunes GOGC for a heap goal of at least floor bytes, and gives the
// floor's memory back once allocation has been quiet for idleAfter (at
// least one idle tick). It returns nil (nothing to tune) when floor is 0,
// when the collector is off or set by the GOGC environment variable (an
// operator's explicit choice wins), or when a tuner is already running in
// this process.
func Start(floor uint64, idleAfter time.Duration, gogcEnv string) *Tuner {
	if floor == 0 || gogcEnv != "" || !active.CompareAndSwap(false, true) {
		return nil
	}
	base := debug.SetGCPercent(100)
	debug.SetGCPercent(base)
	if base <= 0 {
		active.Store(false)
		return nil
	}
	t := &Tuner{floor: floor, base: base, idleTick: idleTickFor(), idleAfter: idleAfter, done: make(chan struct{})}
	for i, n := range names {
		t.samples[i].Name = n
	}
	t.percent.Store(int64(base))
	t.adjust()
	t.arm()
	go t.watchIdle()
	return t
}

// DefaultIdleRelease is how long allocation stays quiet before `llmgw
// gateway` gives the floor's memory back (--gc-idle-release): long enough
// that traffic in bursts with pauses of a second or two keeps its heap. A
// release 250 ms into every pause made the next burst fault ≈ 1 page a
// request back in and cost ≈ 13 % more CPU a stream request than keeping
// the pages (docs/BENCHMARK.md, seventeenth round).
const DefaultIdleRelease = 5 * time.Second

// idleTick is how often the idle watch looks: memory comes back within a
// tick of idleAfter after the last request. Looking often costs nothing
// that counts (a metrics read), and a release needs the heap to have grown
// past the default pacing's goal since the last one, so however often the
// traffic pauses there are no more forced collections than GOGC=100 would
// run.
const idleTick = 250 * time.Millisecond

// idleAllocRate is the allocation rate below which a tick counts as idle:
// about twenty stream requests a second (at 14 KB each). Under it the floor saves next to
// nothing (a cycle every few seconds either way) and what it holds is
// memory for nothing.
const idleAllocRate = 256 << 10 // bytes a second

// idleTickFor is idleTick, shortened by tests.
var idleTickFor = func() time.Duration { return idleTick }

// watchIdle gives back what the floor holds once the process is idle. The
// floor lets the heap grow to floor bytes between cycles, and the runtime
// keeps the pages of a heap that large (its scavenger returns only what
// lies 10 % above the goal, and the goal stays at the floor), so a process
// that stops allocating would hold them for good: after a tick that
// allocated less than idleAllocRate, if the heap's pages in hand —
// objects, garbage or not, plus free pages not yet returned — pass what
// Go's default pacing would keep, one forced collection frees the garbage
// and returns every free page to the OS. Until the heap grows past that
// again there is nothing to give back, so a quiet process pays for one
// collection, not one a tick.
//
// Quiet means quiet for idleAfter, in ticks in a row: a release empties
// the heap's pages, and traffic that comes back pays to fault them in
// again, every page (on the benchmark VM a burst after each release cost
// more CPU than the floor saved; docs/BENCHMARK.md, seventeenth round).
func (t *Tuner) watchIdle() {
	tick := time.NewTicker(t.idleTick)
	defer tick.Stop()
	quiet := max(uint64(idleAllocRate*t.idleTick/time.Second), 1)
	need := quietTicks(t.idleAfter, t.idleTick)
	streak := 0
	s := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}, {Name: "/gc/heap/live:bytes"},
		{Name: "/memory/classes/heap/objects:bytes"}, {Name: "/memory/classes/heap/unused:bytes"}, {Name: "/memory/classes/heap/free:bytes"}}
	metrics.Read(s)
	last := s[0].Value.Uint64()
	for {
		select {
		case <-t.done:
			return
		case <-tick.C:
		}
		metrics.Read(s)
		allocs, live := s[0].Value.Uint64(), s[1].Value.Uint64()
		inHand := s[2].Value.Uint64() + s[3].Value.Uint64() + s[4].Value.Uint64()
		if allocs-last < quiet {
			streak++
		} else {
			streak = 0
		}
		due := streak >= need && releaseDue(allocs-last, quiet, inHand, live)
		last = allocs
		if !due {
			continue
		}
		debug.FreeOSMemory()
		t.released.Add(1)
	}
}

// quietTicks is how many quiet ticks in a row make idleAfter: at least one.
func quietTicks(idleAfter, tick time.Duration) int {
	return max(1, int((idleAfter+tick-1)/tick))
}

// releaseDue says whether a look that saw allocated bytes since the last
// one (quiet or more is busy) and inHand bytes of heap pages, with this
// live heap, should give memory back.
func releaseDue(allocated, quiet, inHand, live uint64) bool {
	return allocated < quiet && inHand > defaultRetained(live)
}

// defaultRetained is about what the runtime keeps of a heap at GOGC=100
// with this live heap: the goal, and the scavenger's 10 % above it
// (runtime/mgcscavenge.go, retainExtraPercent).
func defaultRetained(live uint64) uint64 {
	return max(2*live, heapMinimum) * 11 / 10
}

// Released is how many times the idle watch gave memory back.
func (t *Tuner) Released() int { return int(t.released.Load()) }

// sentinel is collected by every cycle; its cleanup runs the next
// adjustment and arms a new one. It holds a pointer so that it is not a
// tiny allocation (whose cleanups may never run).
type sentinel struct {
	_ [16]byte
	p *int
}

func (t *Tuner) arm() {
	runtime.AddCleanup(&sentinel{}, func(t *Tuner) {
		if t.stopped.Load() {
			return
		}
		t.adjust()
		t.arm()
	}, t)
}

// adjust sets the percent that puts the next goal at the floor, given what
// the last cycle left: Go's goal is live + (live + stacks + globals) ×
// GOGC/100. Never below the base percent, never above maxPercent.
func (t *Tuner) adjust() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.stopped.Load() {
		return
	}
	metrics.Read(t.samples[:])
	live, stacks, globals := t.samples[0].Value.Uint64(), t.samples[1].Value.Uint64(), t.samples[2].Value.Uint64()
	p := percentFor(t.floor, live, live+stacks+globals, t.base)
	if int64(p) != t.percent.Load() {
		t.percent.Store(int64(p))
		debug.SetGCPercent(p)
	}
}

// percentFor is the GOGC that makes the goal reach floor, between base and
// maxPercent. The runtime's goal is the larger of live + roots ×
// GOGC/100 and its minimum heap, 4 MiB × GOGC/100, so neither may pass
// the floor.
func percentFor(floor, live, roots uint64, base int) int {
	if roots == 0 || live >= floor {
		return base
	}
	p := min((floor-live)*100/roots, floor*100/heapMinimum)
	return min(max(int(p), base), max(base, maxPercent))
}

// heapMinimum is the runtime's goal at GOGC=100 however small the live heap
// (runtime/mgcpacer.go, defaultHeapMinimum).
const heapMinimum = 4 << 20

// Percent is the GOGC the tuner set last.
func (t *Tuner) Percent() int { return int(t.percent.Load()) }

// Stop ends the tuning and restores the base percent.
func (t *Tuner) Stop() {
	if t == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.stopped.Swap(true) {
		return
	}
	close(t.done)
	debug.SetGCPercent(t.base)
	active.Store(false)
}
