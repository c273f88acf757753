//go:build race

package server_test

// raceEnabled: the race detector's instrumentation changes stack frames,
// so measures of goroutine stacks are taken only without it.
const raceEnabled = true
