package mockproviders

import (
	"maps"
	"strconv"
	"sync"
)

// Calls is the body of GET /mock/calls. It counts protocol calls only: every
// request that is not /healthz or /mock/*, including the ones the mock rejected,
// so a test can prove a provider was called exactly once, or never.
type Calls struct {
	Total    int64            `json:"total"`
	ByPath   map[string]int64 `json:"by_path"`
	ByFault  map[string]int64 `json:"by_fault"`  // "status=503", "chunks=5", ...; "invalid" for a rejected directive
	ByStatus map[string]int64 `json:"by_status"` // the HTTP status the mock answered with ("200", "401", ...)
}

// maxPaths caps by_path so a client probing random URLs cannot grow memory without bound.
const maxPaths = 64

type callCounter struct {
	mu sync.Mutex
	c  Calls
}

func newCallCounter() *callCounter {
	cc := &callCounter{}
	cc.reset()
	return cc
}

func (cc *callCounter) reset() {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	cc.c = Calls{ByPath: map[string]int64{}, ByFault: map[string]int64{}, ByStatus: map[string]int64{}}
}

func (cc *callCounter) arrive(path string) {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	cc.c.Total++
	if _, ok := cc.c.ByPath[path]; !ok && len(cc.c.ByPath) >= maxPaths {
		path = "other"
	}
	cc.c.ByPath[path]++
}

func (cc *callCounter) faults(labels []string) {
	if len(labels) == 0 {
		return
	}
	cc.mu.Lock()
	defer cc.mu.Unlock()
	for _, l := range labels {
		cc.c.ByFault[l]++
	}
}

func (cc *callCounter) status(code int) {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	cc.c.ByStatus[strconv.Itoa(code)]++
}

func (cc *callCounter) snapshot() Calls {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	return Calls{Total: cc.c.Total, ByPath: maps.Clone(cc.c.ByPath), ByFault: maps.Clone(cc.c.ByFault), ByStatus: maps.Clone(cc.c.ByStatus)}
}
