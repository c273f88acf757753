package testutil

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"
)

// Load sends requests at a fixed rate until Stop and counts their statuses.
// A load that must see zero failures is paced: it stays below the limits it
// runs under on any machine, instead of running as fast as the machine
// allows (which, on a quiet fast machine, trips the rate limit).
type Load struct {
	mu       sync.Mutex
	statuses map[int]int
	stop     chan struct{}
	wg       sync.WaitGroup
}

// StartLoad calls call perSecond times a second, each call on its own
// goroutine (so a slow answer does not slow the pace); call returns the
// request's HTTP status (or -1 when it could not be sent).
func StartLoad(perSecond int, call func() int) *Load {
	l := &Load{statuses: map[int]int{}, stop: make(chan struct{})}
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		t := time.NewTicker(time.Second / time.Duration(perSecond))
		defer t.Stop()
		for {
			select {
			case <-l.stop:
				return
			case <-t.C:
			}
			l.wg.Add(1)
			go func() {
				defer l.wg.Done()
				code := call()
				l.mu.Lock()
				l.statuses[code]++
				l.mu.Unlock()
			}()
		}
	}()
	return l
}

// Stop ends the load, waits for the requests in flight, and returns how many
// got each status.
func (l *Load) Stop() map[int]int {
	close(l.stop)
	l.wg.Wait()
	l.mu.Lock()
	defer l.mu.Unlock()
	return maps.Clone(l.statuses)
}

// OnlyStatus reports whether every request got want, and describes the
// counts for a failure message.
func OnlyStatus(statuses map[int]int, want int) (ok bool, desc string) {
	var parts []string
	for _, code := range slices.Sorted(maps.Keys(statuses)) {
		parts = append(parts, fmt.Sprintf("%d×%d", statuses[code], code))
	}
	return len(statuses) == 1 && statuses[want] > 0, strings.Join(parts, ", ")
}
