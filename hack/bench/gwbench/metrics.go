package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// runtimeStats are the Go runtime figures a target exposes on /metrics.
type runtimeStats struct {
	Goroutines int
	HeapInuse  uint64 // bytes
}

var mgmtClient = &http.Client{Timeout: 5 * time.Second}

// scrape reads go_goroutines and go_memstats_heap_inuse_bytes from a
// Prometheus text exposition at base+"/metrics".
func scrape(ctx context.Context, base string) (runtimeStats, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/metrics", nil)
	if err != nil {
		return runtimeStats{}, err
	}
	resp, err := mgmtClient.Do(req)
	if err != nil {
		return runtimeStats{}, fmt.Errorf("scraping %s: %w", base, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return runtimeStats{}, fmt.Errorf("scraping %s: HTTP %d", base, resp.StatusCode)
	}
	return parseRuntimeStats(resp.Body)
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
// whether the target serves /debug/pprof on its management port.
func forceGC(ctx context.Context, base string) bool {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/debug/pprof/heap?gc=1", nil)
	if err != nil {
		return false
	}
	resp, err := mgmtClient.Do(req)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode == http.StatusOK
}
