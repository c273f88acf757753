package main

import (
	"math"
	"strings"
	"testing"
	"time"
)

func TestParseRuntimeStats(t *testing.T) {
	for _, tc := range []struct {
		name    string
		in      string
		want    runtimeStats
		wantErr bool
	}{
		{"both", "# HELP go_goroutines x\n# TYPE go_goroutines gauge\ngo_goroutines 23\ngo_memstats_heap_inuse_bytes 5.5e+06\n",
			runtimeStats{Goroutines: 23, HeapInuse: 5_500_000}, false},
		{"labelled look-alikes are ignored", "go_goroutines_total{x=\"1\"} 9\ngo_goroutines 7\ngo_memstats_heap_inuse_bytes 100\n",
			runtimeStats{Goroutines: 7, HeapInuse: 100}, false},
		{"stacks where exposed", "go_goroutines 7\ngo_memstats_heap_inuse_bytes 100\ngo_memstats_stack_inuse_bytes 1.9628032e+07\n",
			runtimeStats{Goroutines: 7, HeapInuse: 100, StackInuse: 19_628_032}, false},
		{"live heap where exposed", "go_goroutines 7\ngo_memstats_heap_alloc_bytes 8.5e+06\ngo_memstats_heap_inuse_bytes 1e+07\n",
			runtimeStats{Goroutines: 7, HeapInuse: 10_000_000, HeapAlloc: 8_500_000}, false},
		{"missing heap", "go_goroutines 7\n", runtimeStats{}, true},
		{"garbage value", "go_goroutines many\ngo_memstats_heap_inuse_bytes 1\n", runtimeStats{}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseRuntimeStats(strings.NewReader(tc.in))
			if (err != nil) != tc.wantErr || !tc.wantErr && got != tc.want {
				t.Errorf("got %+v, %v; want %+v, error %v", got, err, tc.want, tc.wantErr)
			}
		})
	}
}

func TestParseHistogram(t *testing.T) {
	const expo = "# HELP llmgw_usage_journal_commit_lag_seconds x\n# TYPE llmgw_usage_journal_commit_lag_seconds histogram\n" +
		"llmgw_usage_journal_commit_lag_seconds_bucket{le=\"0.005\"} 60\n" +
		"llmgw_usage_journal_commit_lag_seconds_bucket{le=\"0.01\"} 98\n" +
		"llmgw_usage_journal_commit_lag_seconds_bucket{le=\"+Inf\"} 100\n" +
		"llmgw_usage_journal_commit_lag_seconds_sum 0.5\nllmgw_usage_journal_commit_lag_seconds_count 100\n"
	h, err := parseHistogram(strings.NewReader(expo), journalLagMetric)
	if err != nil || h == nil || h.Count != 100 || h.Sum != 0.5 || len(h.Buckets) != 3 {
		t.Fatalf("parseHistogram = %+v, %v", h, err)
	}
	for _, tc := range []struct {
		q    float64
		want float64
	}{{0.5, 0.005}, {0.6, 0.005}, {0.9, 0.01}, {0.99, math.MaxFloat64}} {
		if got, ok := h.Quantile(tc.q); !ok || got != tc.want {
			t.Errorf("Quantile(%v) = %v, %v; want %v", tc.q, got, ok, tc.want)
		}
	}
	if h, err := parseHistogram(strings.NewReader("go_goroutines 7\n"), journalLagMetric); h != nil || err != nil {
		t.Fatalf("without the histogram: %+v, %v; want nil, nil", h, err)
	}
	if _, err := parseHistogram(strings.NewReader(journalLagMetric+"_count many\n"), journalLagMetric); err == nil {
		t.Fatal("a garbage count parsed")
	}
}

func TestLagHistogramPlus(t *testing.T) {
	a := &LagHistogram{Count: 10, Sum: 1, Buckets: []LagBucket{{0.005, 6}, {0.01, 9}, {math.MaxFloat64, 10}}}
	b := &LagHistogram{Count: 4, Sum: 0.5, Buckets: []LagBucket{{0.005, 1}, {0.01, 3}, {math.MaxFloat64, 4}}}
	got := a.plus(b)
	want := []LagBucket{{0.005, 7}, {0.01, 12}, {math.MaxFloat64, 14}}
	if got.Count != 14 || got.Sum != 1.5 || len(got.Buckets) != len(want) {
		t.Fatalf("plus = %+v", got)
	}
	for i := range want {
		if got.Buckets[i] != want[i] {
			t.Errorf("bucket %d = %+v, want %+v", i, got.Buckets[i], want[i])
		}
	}
	if a.Count != 10 || a.Buckets[0].Count != 6 {
		t.Errorf("plus changed its receiver: %+v", a)
	}
	var none *LagHistogram
	if none.plus(b) != b || a.plus(nil) != a || none.plus(nil) != nil {
		t.Error("a nil side is not the other side")
	}
	// A bound only one side has cannot be summed: it is left out.
	c := &LagHistogram{Count: 1, Buckets: []LagBucket{{0.02, 1}, {math.MaxFloat64, 1}}}
	if got := a.plus(c); len(got.Buckets) != 1 || got.Buckets[0] != (LagBucket{math.MaxFloat64, 11}) {
		t.Errorf("mismatched bounds: %+v", got.Buckets)
	}
}

func TestBackToIdle(t *testing.T) {
	idle := procState{gor: 20, heap: 5, live: -1, pooled: 1, gc: true}
	full := procState{gor: 20 + 2*255, heap: 12, live: -1, pooled: 256, gc: true} // a full pool: not a leak
	with := func(st procState, heap, live float64) procState { st.heap, st.live = heap, live; return st }
	for _, tc := range []struct {
		name           string
		after1, after2 procState
		ok             bool
		why            string
	}{
		{"exactly idle", idle, idle, true, ""},
		{"pooled connections and what wave 1 leaves are not leaks", full, full, true, ""},
		{"slack", full, procState{gor: 30 + 2*255, heap: 13.9, live: -1, pooled: 256, gc: true}, true, ""},
		{"a goroutine per stream left", procState{gor: 1020, heap: 5, live: -1, pooled: 1, gc: true}, idle, false, "after wave 1: goroutines 1020"},
		{"heap grows with every wave", full, with(full, 22, -1), false, "heap in use grew by 10.0 MB"},
		{"heap growth without a forced GC says so", procState{gor: 20, heap: 5, live: -1, pooled: 1}, procState{gor: 20, heap: 15, live: -1, pooled: 1}, false, "no GC could be forced"},
		// Where the live heap is exposed it is the one judged: spans half
		// full move heap in use, objects kept move the live heap.
		{"heap in use moved, the live heap did not", with(full, 15.8, 8.9), with(full, 18.6, 9.0), true, ""},
		{"a kilobyte a stream kept is a leak", with(full, 15, 8.5), with(full, 15, 8.5+2.1), false, "live heap grew by 2.1 MB"},
		{"only one wave exposes it: heap in use", with(full, 15, 8.5), with(full, 18, -1), false, "heap in use grew by 3.0 MB"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ok, why := backToIdle(idle, tc.after1, tc.after2, 1000)
			if ok != tc.ok || !strings.Contains(why, tc.why) {
				t.Errorf("backToIdle = %v %q, want %v containing %q", ok, why, tc.ok, tc.why)
			}
		})
	}
	none := procState{gor: -1, heap: -1, live: -1}
	if ok, why := backToIdle(none, none, none, 1000); !ok || !strings.HasPrefix(why, "not judged") {
		t.Errorf("a target without /metrics is not judged: %v %q", ok, why)
	}
	if got := heapSlackMB(1000); got < 2 || got > 2.1 {
		t.Errorf("heap slack for 1000 streams = %v MB, want about 2", got)
	}
}

func TestParseWorkloads(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    []Workload
		wantErr bool
	}{
		{"alpha/json", []Workload{{"alpha", false}}, false},
		{"alpha/sse, beta/json", []Workload{{"alpha", true}, {"beta", false}}, false},
		{"gamma/json", nil, true},
		{"alpha", nil, true},
		{"alpha/xml", nil, true},
	} {
		got, err := parseWorkloads(tc.in)
		if (err != nil) != tc.wantErr || len(got) != len(tc.want) {
			t.Errorf("parseWorkloads(%q) = %v, %v", tc.in, got, err)
			continue
		}
		for i := range got {
			if got[i] != tc.want[i] {
				t.Errorf("parseWorkloads(%q)[%d] = %v, want %v", tc.in, i, got[i], tc.want[i])
			}
		}
	}
}

func TestSelectTargets(t *testing.T) {
	var vs variantFlag
	if err := vs.Set("llmgw-quiet=--log-level error --ledger-max-bytes 0"); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		names   string
		want    string
		wantErr bool
	}{
		{"direct,revproxy,llmgw", "direct revproxy llmgw llmgw-quiet", false}, // a variant is added even when not named
		{"direct,revproxy,llmgw-quiet", "direct revproxy llmgw-quiet", false},
		{"direct,llmgw", "", true},                // no yardstick
		{"direct,revproxy,llmgw,llmgw", "", true}, // twice
		{"direct,revproxy,portkey", "", true},     // unknown
	} {
		got, err := selectTargets(tc.names, vs)
		if (err != nil) != tc.wantErr {
			t.Errorf("selectTargets(%q) error %v", tc.names, err)
			continue
		}
		var names []string
		for _, g := range got {
			names = append(names, g.Name)
		}
		if s := strings.Join(names, " "); !tc.wantErr && s != tc.want {
			t.Errorf("selectTargets(%q) = %s, want %s", tc.names, s, tc.want)
		}
	}
	if vs[0].Kind != kindGateway || strings.Join(vs[0].Flags, " ") != "--log-level error --ledger-max-bytes 0" {
		t.Errorf("variant parsed as %+v", vs[0])
	}
	for _, bad := range []string{"noequals", "=--x", "a b=--x"} {
		var v variantFlag
		if v.Set(bad) == nil {
			t.Errorf("variant %q accepted", bad)
		}
	}
}

func TestParseConfigSmokeKeepsExplicitFlags(t *testing.T) {
	c, err := parseConfig([]string{"-smoke", "-streams", "7"})
	if err != nil {
		t.Fatal(err)
	}
	if c.streams != 7 {
		t.Errorf("an explicit flag must win over the smoke preset: streams = %d", c.streams)
	}
	if c.rounds != 1 || c.openDur != time.Second || len(c.rates) != 1 || c.rates[0] != 200 || len(c.openWorkloads) != 2 {
		t.Errorf("smoke preset not applied: %+v", c)
	}
	if _, err := parseConfig([]string{"-rates", "0"}); err == nil {
		t.Error("rate 0 accepted")
	}
	if _, err := parseConfig([]string{"-name", "a/b"}); err == nil {
		t.Error("a name with a slash accepted")
	}
	d, err := parseConfig(nil)
	if err != nil {
		t.Fatal(err)
	}
	if d.rounds != 3 || d.streams != 1000 || d.rates[0] != 1000 || d.openDur != 8*time.Second || d.conc != 8 || len(d.workloads) != 4 {
		t.Errorf("defaults are not issue 12's: %+v", d)
	}
}

func TestParseCounters(t *testing.T) {
	const expo = "# TYPE llmgw_usage_ledger_operations_total counter\n" +
		"llmgw_usage_ledger_operations_total 1234\n" +
		"llmgw_usage_ledger_operations_total_created 1.7e9\n" + // a longer name with the same prefix
		"llmgw_usage_ledger_transactions_total 1.1e2\n" +
		"go_goroutines 9\n"
	got, err := parseCounters(strings.NewReader(expo), ledgerOpsMetric, ledgerTxMetric)
	if err != nil || got[ledgerOpsMetric] != 1234 || got[ledgerTxMetric] != 110 || len(got) != 2 {
		t.Fatalf("parseCounters = %v, %v", got, err)
	}
	if got, err := parseCounters(strings.NewReader("go_goroutines 7\n"), ledgerOpsMetric); err != nil || len(got) != 0 {
		t.Fatalf("without the counters: %v, %v; want none", got, err)
	}
	if _, err := parseCounters(strings.NewReader(ledgerTxMetric+" many\n"), ledgerTxMetric); err == nil {
		t.Fatal("a garbage value parsed")
	}
	if c := batchCell(RecordRow{LedgerOps: 1234, LedgerTransactions: 110}); c != "11.2 (1234 in 110)" {
		t.Errorf("batchCell = %q", c)
	}
	if c := batchCell(RecordRow{}); c != "–" {
		t.Errorf("batchCell without counters = %q", c)
	}
}
