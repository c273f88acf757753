//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package usage

import (
	"syscall"
	"time"
)

// processCPU is user+system CPU time of the whole process: on a shared
// machine it measures what a record costs, where wall-clock ns/op measures
// how busy the neighbours are.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
