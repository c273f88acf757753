//go:build unix

package testutil

import (
	"syscall"
	"time"
)

// CPUTime is the CPU time (user + system, every thread: GC included) this
// process has used. Benchmarks report it per operation beside wall time,
// because on a shared machine wall time mostly measures the neighbours.
func CPUTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
