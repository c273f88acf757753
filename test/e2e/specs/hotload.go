package specs

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"time"
)

// HotLoadBound is what the design promises: one change served by every
// gateway replica in under a second (p99).
const HotLoadBound = time.Second

// Change is one configuration change whose hot-load is measured.
type Change struct {
	Name string
	// Apply makes the change (kubectl apply, a client Create/Update) and
	// returns once the API server has stored it.
	Apply func() error
	// Served reports whether the replica at base serves the change. It should
	// be cheap (GET /v1/models needs no provider and leaves no usage record).
	Served func(ctx context.Context, base string) bool
}

// HotLoadOptions says where and how long to look.
type HotLoadOptions struct {
	Replicas []string      // base URL of every replica: each one must serve the change
	Timeout  time.Duration // per change; a change not served by every replica by then fails
	Poll     time.Duration // between two probes of one replica
}

// Sample is one change: how long Apply took and how long after Apply
// returned the last replica served it.
type Sample struct {
	Change     string
	Apply      time.Duration   // the Apply call itself (kubectl start-up included)
	Latency    time.Duration   // Apply returned → every replica serves the change
	PerReplica []time.Duration // Apply returned → that replica serves it
}

// HotLoad is the result of MeasureHotLoad.
type HotLoad struct{ Samples []Sample }

// MeasureHotLoad applies each change in turn and waits until every replica
// serves it, polling each replica on its own goroutine. The clock starts when
// Apply returns (the change is stored in the API server); the Apply time is
// kept apart so that a slow kubectl start on a busy machine does not count as
// gateway latency, and is reported.
func MeasureHotLoad(ctx context.Context, changes []Change, opts HotLoadOptions) (HotLoad, error) {
	if opts.Poll <= 0 {
		opts.Poll = 10 * time.Millisecond
	}
	if opts.Timeout <= 0 {
		opts.Timeout = 15 * time.Second
	}
	var out HotLoad
	for _, ch := range changes {
		t0 := time.Now()
		if err := ch.Apply(); err != nil {
			return out, fmt.Errorf("change %s: apply: %w", ch.Name, err)
		}
		applied := time.Now()
		s := Sample{Change: ch.Name, Apply: applied.Sub(t0), PerReplica: make([]time.Duration, len(opts.Replicas))}
		cctx, cancel := context.WithDeadline(ctx, applied.Add(opts.Timeout))
		var wg sync.WaitGroup
		for i, base := range opts.Replicas {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for cctx.Err() == nil {
					if ch.Served(cctx, base) {
						s.PerReplica[i] = time.Since(applied)
						return
					}
					select {
					case <-cctx.Done():
					case <-time.After(opts.Poll):
					}
				}
				s.PerReplica[i] = -1
			}()
		}
		wg.Wait()
		cancel()
		for i, d := range s.PerReplica {
			if d < 0 {
				return out, fmt.Errorf("change %s: replica %s did not serve it within %v", ch.Name, opts.Replicas[i], opts.Timeout)
			}
			s.Latency = max(s.Latency, d)
		}
		out.Samples = append(out.Samples, s)
	}
	return out, nil
}

// Percentile is the nearest-rank percentile (0 < p ≤ 100) of the latencies.
func (h HotLoad) Percentile(p float64) time.Duration {
	if len(h.Samples) == 0 {
		return 0
	}
	lat := make([]time.Duration, len(h.Samples))
	for i, s := range h.Samples {
		lat[i] = s.Latency
	}
	slices.Sort(lat)
	rank := int(math.Ceil(p / 100 * float64(len(lat))))
	return lat[min(max(rank, 1), len(lat))-1]
}

// P50 is the median latency.
func (h HotLoad) P50() time.Duration { return h.Percentile(50) }

// P99 is the 99th percentile latency (with fewer than 100 changes: the maximum).
func (h HotLoad) P99() time.Duration { return h.Percentile(99) }

// MaxApply is the longest Apply call.
func (h HotLoad) MaxApply() time.Duration {
	var m time.Duration
	for _, s := range h.Samples {
		m = max(m, s.Apply)
	}
	return m
}

// Append adds the samples of another measurement.
func (h HotLoad) Append(o HotLoad) HotLoad {
	return HotLoad{Samples: append(slices.Clone(h.Samples), o.Samples...)}
}

// String is a one-line summary, e.g. for GinkgoWriter and the report.
func (h HotLoad) String() string {
	return fmt.Sprintf("%d changes: p50 %v, p99 %v, max %v (apply call itself: up to %v)",
		len(h.Samples), h.P50().Round(time.Millisecond), h.P99().Round(time.Millisecond),
		h.Percentile(100).Round(time.Millisecond), h.MaxApply().Round(time.Millisecond))
}

// Table lists every sample, one line each.
func (h HotLoad) Table() string {
	var b strings.Builder
	for _, s := range h.Samples {
		per := make([]string, len(s.PerReplica))
		for i, d := range s.PerReplica {
			per[i] = d.Round(time.Millisecond).String()
		}
		fmt.Fprintf(&b, "  %-28s apply %6v  served by all %6v  per replica [%s]\n", s.Change,
			s.Apply.Round(time.Millisecond), s.Latency.Round(time.Millisecond), strings.Join(per, " "))
	}
	return b.String()
}
