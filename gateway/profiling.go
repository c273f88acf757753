package gateway

import (
	"errors"
	"net/http"
	"net/http/pprof"
	"runtime"
)

// Profiling is what the management port offers for profiling.
type Profiling struct {
	// Disabled keeps /debug/pprof off the management port.
	Disabled bool
	// BlockRate and MutexFraction turn on the block and mutex profiles
	// (runtime.SetBlockProfileRate, runtime.SetMutexProfileFraction); 0
	// leaves them off, since sampling costs time on every blocking event
	// or contended lock.
	BlockRate, MutexFraction int
}

func (p Profiling) validate(mgmtAddr string) error {
	if p.BlockRate < 0 || p.MutexFraction < 0 {
		return errors.New("gateway: the block profile rate and mutex profile fraction must be ≥ 0")
	}
	if (p.BlockRate > 0 || p.MutexFraction > 0) && (p.Disabled || mgmtAddr == "") {
		return errors.New("gateway: block and mutex profiling need the management port's /debug/pprof")
	}
	return nil
}

// apply sets the process-wide sampling rates. The rates stay set for the
// life of the process (they are runtime-global).
func (p Profiling) apply() {
	if p.BlockRate > 0 {
		runtime.SetBlockProfileRate(p.BlockRate)
	}
	if p.MutexFraction > 0 {
		runtime.SetMutexProfileFraction(p.MutexFraction)
	}
}

// registerProfiles serves net/http/pprof on the management mux, registered
// here by hand: the package's own init registers the same handlers on
// http.DefaultServeMux, which no llmgw listener serves, so profiles are
// reachable on the management port and nowhere else. Index also serves the
// named profiles (heap, goroutine, block, mutex, allocs, threadcreate).
func registerProfiles(mux *http.ServeMux) {
	mux.HandleFunc("GET /debug/pprof/", pprof.Index)
	mux.HandleFunc("GET /debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("GET /debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("GET /debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("POST /debug/pprof/symbol", pprof.Symbol) // go tool pprof posts addresses
	mux.HandleFunc("GET /debug/pprof/trace", pprof.Trace)
}
