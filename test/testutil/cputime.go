package testutil

import (
	"testing"
	"time"
)

// CPUPerOp runs the benchmark body via b.Loop and reports the process's CPU
// time per operation ("cpu-ns/op") next to the wall time.
func CPUPerOp(b *testing.B, body func()) {
	b.Helper()
	var start time.Duration
	first := true
	for b.Loop() {
		if first {
			start, first = CPUTime(), false
		}
		body()
	}
	if b.N > 0 {
		b.ReportMetric(float64(CPUTime()-start)/float64(b.N), "cpu-ns/op")
	}
}
