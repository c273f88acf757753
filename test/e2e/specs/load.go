package specs

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/llmgw/llmgw/test/testutil"
)

// Load is a paced load (testutil.StartLoad: a fixed number of requests a
// second, each on its own goroutine, so a slow answer does not slow the pace)
// whose statuses are counted. A load that must see no failure runs well below
// the limits of the key it uses, on any machine.
type Load struct{ l *testutil.Load }

// StartLoad calls call perSecond times a second until Stop; call returns the
// HTTP status of its request, or -1 when it could not be sent.
func StartLoad(perSecond int, call func() int) *Load {
	return &Load{l: testutil.StartLoad(perSecond, call)}
}

// Stop ends the load, waits for the requests in flight, and returns the count
// of each status.
func (l *Load) Stop() Statuses { return Statuses(l.l.Stop()) }

// Statuses counts requests by HTTP status (-1: not sent).
type Statuses map[int]int

// Total is the number of requests.
func (s Statuses) Total() int {
	n := 0
	for _, c := range s {
		n += c
	}
	return n
}

// Only reports whether every request got want (and there was at least one).
func (s Statuses) Only(want int) bool { return len(s) == 1 && s[want] > 0 }

// String is "1200×200, 3×502", sorted by status.
func (s Statuses) String() string {
	var parts []string
	for _, code := range slices.Sorted(maps.Keys(s)) {
		parts = append(parts, fmt.Sprintf("%d×%d", s[code], code))
	}
	if len(parts) == 0 {
		return "no requests"
	}
	return strings.Join(parts, ", ")
}
