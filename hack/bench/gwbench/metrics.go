package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

// runtimeStats are the Go runtime figures a target exposes on /metrics.
type runtimeStats struct {
	Goroutines int
	HeapInuse  uint64 // bytes
	StackInuse uint64 // bytes of goroutine stacks; 0 where not exposed
	// HeapAlloc is the bytes of heap objects (go_memstats_heap_alloc_bytes):
	// after a forced GC, what is live. HeapInuse also counts the free
	// slots of every span that holds a live object. 0 where not exposed.
	HeapAlloc uint64
}

var mgmtClient = &http.Client{Timeout: 5 * time.Second}

// scrape reads go_goroutines and go_memstats_heap_inuse_bytes (and
// go_memstats_stack_inuse_bytes where present) from a Prometheus text
// exposition at base+"/metrics".
func scrape(ctx context.Context, base string) (runtimeStats, error) {
	body, err := getMetrics(ctx, base)
	if err != nil {
		return runtimeStats{}, err
	}
	defer body.Close()
	return parseRuntimeStats(body)
}

// getMetrics GETs base+"/metrics"; the caller closes the body.
func getMetrics(ctx context.Context, base string) (io.ReadCloser, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	resp, err := mgmtClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("scraping %s: %w", base, err)
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		return nil, fmt.Errorf("scraping %s: HTTP %d", base, resp.StatusCode)
	}
	return resp.Body, nil
}

// parseRuntimeStats picks the two unlabelled gauges out of a text
// exposition; both must be present.
func parseRuntimeStats(r io.Reader) (runtimeStats, error) {
	var st runtimeStats
	var seen int
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		name, val, ok := strings.Cut(sc.Text(), " ")
		if !ok {
			continue
		}
		switch name {
		case "go_goroutines":
			f, err := strconv.ParseFloat(strings.TrimSpace(val), 64)
			if err != nil {
				return st, fmt.Errorf("go_goroutines %q: %w", val, err)
			}
			st.Goroutines, seen = int(f), seen|1
		case "go_memstats_heap_inuse_bytes":
			f, err := strconv.ParseFloat(strings.TrimSpace(val), 64)
			if err != nil {
				return st, fmt.Errorf("go_memstats_heap_inuse_bytes %q: %w", val, err)
			}
			st.HeapInuse, seen = uint64(f), seen|2
		case "go_memstats_stack_inuse_bytes":
			if f, err := strconv.ParseFloat(strings.TrimSpace(val), 64); err == nil {
				st.StackInuse = uint64(f)
			}
		case "go_memstats_heap_alloc_bytes":
			if f, err := strconv.ParseFloat(strings.TrimSpace(val), 64); err == nil {
				st.HeapAlloc = uint64(f)
			}
		}
	}
	if err := sc.Err(); err != nil {
		return st, err
	}
	if seen != 3 {
		return st, fmt.Errorf("/metrics lacks go_goroutines or go_memstats_heap_inuse_bytes")
	}
	return st, nil
}

// forceGC asks the target for a heap profile with gc=1, which runs a
// garbage collection first (net/http/pprof), so the heap read after it is
// live data rather than garbage waiting for the next cycle. It reports
// whether the target serves /debug/pprof on its management port. With
// save, the profile is also written there.
func forceGC(ctx context.Context, base string, save io.Writer) bool {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/debug/pprof/heap?gc=1", nil)
	if err != nil {
		return false
	}
	resp, err := mgmtClient.Do(req)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	if save == nil || resp.StatusCode != http.StatusOK {
		save = io.Discard
	}
	_, _ = io.Copy(save, resp.Body)
	return resp.StatusCode == http.StatusOK
}

// journalLagMetric is the gateway's histogram of how long a final usage
// record was a journal line only (the finish journal's OS-crash window).
const journalLagMetric = "llmgw_usage_journal_commit_lag_seconds"

// LagHistogram is a scraped cumulative histogram.
type LagHistogram struct {
	Buckets []LagBucket `json:"buckets"` // cumulative, by upper bound
	Count   uint64      `json:"count"`
	Sum     float64     `json:"sum_seconds"`
}

// plus is the histogram of h's observations and o's together (either may
// be nil: not exposed). Buckets are matched by bound; a bound only one of
// them has cannot be placed in the other, so the sum keeps the bounds both
// have.
func (h *LagHistogram) plus(o *LagHistogram) *LagHistogram {
	if h == nil {
		return o
	}
	if o == nil {
		return h
	}
	sum := &LagHistogram{Count: h.Count + o.Count, Sum: h.Sum + o.Sum}
	for _, b := range h.Buckets {
		for _, c := range o.Buckets {
			if c.LE == b.LE {
				sum.Buckets = append(sum.Buckets, LagBucket{LE: b.LE, Count: b.Count + c.Count})
				break
			}
		}
	}
	return sum
}

// LagBucket is one cumulative bucket: Count observations ≤ LE seconds.
type LagBucket struct {
	LE    float64 `json:"le"` // +Inf as math.MaxFloat64 (JSON has no infinity)
	Count uint64  `json:"count"`
}

// Quantile is the upper bound of the bucket holding quantile q, in seconds
// (math.MaxFloat64: beyond the last finite bound); ok is false when empty.
func (h *LagHistogram) Quantile(q float64) (float64, bool) {
	if h == nil || h.Count == 0 {
		return 0, false
	}
	need := q * float64(h.Count)
	for _, b := range h.Buckets {
		if float64(b.Count) >= need {
			return b.LE, true
		}
	}
	return math.MaxFloat64, true
}

func parseHistogram(r io.Reader, name string) (*LagHistogram, error) {
	var h LagHistogram
	seen := false
	err := eachSample(r, func(series string) bool { return strings.HasPrefix(series, name) }, func(series string, f float64) error {
		switch rest := series[len(name):]; {
		case rest == "_count":
			h.Count, seen = uint64(f), true
		case rest == "_sum":
			h.Sum = f
		case strings.HasPrefix(rest, `_bucket{le="`) && strings.HasSuffix(rest, `"}`):
			le := strings.TrimSuffix(strings.TrimPrefix(rest, `_bucket{le="`), `"}`)
			bound := math.MaxFloat64
			if le != "+Inf" {
				var err error
				if bound, err = strconv.ParseFloat(le, 64); err != nil {
					return fmt.Errorf("%s: %w", series, err)
				}
			}
			h.Buckets = append(h.Buckets, LagBucket{LE: bound, Count: uint64(f)})
		}
		return nil
	})
	if err != nil || !seen {
		return nil, err
	}
	return &h, nil
}

// eachSample calls fn with every sample of a text exposition whose series
// (name and labels) want accepts, its value parsed.
func eachSample(r io.Reader, want func(series string) bool, fn func(series string, v float64) error) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		series, val, ok := strings.Cut(sc.Text(), " ")
		if !ok || !want(series) {
			continue
		}
		f, err := strconv.ParseFloat(strings.TrimSpace(val), 64)
		if err != nil {
			return fmt.Errorf("%s %q: %w", series, val, err)
		}
		if err := fn(series, f); err != nil {
			return err
		}
	}
	return sc.Err()
}

// The gateway's ledger writer counters: their ratio over a round is its
// mean batch (operations a transaction).
const (
	ledgerOpsMetric = "llmgw_usage_ledger_operations_total"
	ledgerTxMetric  = "llmgw_usage_ledger_transactions_total"
)

// scrapeLedger reads a gateway's /metrics once for the finish journal's
// lag histogram (nil: not exposed) and the ledger writer's counters (a
// name not exposed is missing from the map).
func scrapeLedger(ctx context.Context, base string) (*LagHistogram, map[string]float64, error) {
	body, err := getMetrics(ctx, base)
	if err != nil {
		return nil, nil, err
	}
	defer body.Close()
	text, err := io.ReadAll(body)
	if err != nil {
		return nil, nil, fmt.Errorf("scraping %s: %w", base, err)
	}
	lag, err := parseHistogram(bytes.NewReader(text), journalLagMetric)
	if err != nil {
		return nil, nil, err
	}
	counters, err := parseCounters(bytes.NewReader(text), ledgerOpsMetric, ledgerTxMetric)
	return lag, counters, err
}

func parseCounters(r io.Reader, names ...string) (map[string]float64, error) {
	out := map[string]float64{}
	err := eachSample(r, func(series string) bool { return slices.Contains(names, series) }, func(series string, f float64) error {
		out[series] = f
		return nil
	})
	return out, err
}
