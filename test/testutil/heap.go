package testutil

import "runtime"

// LiveHeap is the heap in use after two collections (the second finishes
// sweeping what the first freed): what a test measures when it asks how
// much memory something holds on to.
func LiveHeap() int64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapAlloc)
}
