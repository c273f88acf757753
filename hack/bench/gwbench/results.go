package main

import (
	"encoding/json"
	"math"
	"strconv"
)

// Num is a float64 that encodes NaN and ±Inf as JSON null: a measure that
// could not be taken must not read as a number.
type Num float64

// MarshalJSON implements json.Marshaler.
func (n Num) MarshalJSON() ([]byte, error) {
	f := float64(n)
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return []byte("null"), nil
	}
	return strconv.AppendFloat(nil, f, 'g', 6, 64), nil
}

// UnmarshalJSON implements json.Unmarshaler.
func (n *Num) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*n = Num(math.NaN())
		return nil
	}
	var f float64
	if err := json.Unmarshal(b, &f); err != nil {
		return err
	}
	*n = Num(f)
	return nil
}

// Report is everything one run produced; report.json is this, and
// report.md is rendered from it.
type Report struct {
	Name     string       `json:"name"`
	Started  string       `json:"started"`
	Seconds  float64      `json:"seconds"`
	Machine  Machine      `json:"machine"`
	Settings Settings     `json:"settings"`
	Targets  []TargetInfo `json:"targets"`
	Rounds   []Round      `json:"rounds"`
	Summary  Summary      `json:"summary"`
	Goals    []Goal       `json:"goals"`
	Checks   []Check      `json:"checks"`
	Curves   []Curve      `json:"curves"`
	Plots    []string     `json:"plots"`
}

// TargetInfo says what one target is and how it was started.
type TargetInfo struct {
	Name string `json:"name"`
	Kind string `json:"kind"`
	// Command is the target's own process (for direct: the mock of the
	// request's protocol). Temp paths are shown as {dir}; no key is on it.
	Command string `json:"command"`
}

// PhaseLoad is the load average around one phase of a round.
type PhaseLoad struct {
	Phase   string  `json:"phase"`
	Start   string  `json:"load_start"`
	End     string  `json:"load_end"`
	Seconds float64 `json:"seconds"`
}

// LatencyRow is one latency distribution of one round.
type LatencyRow struct {
	Phase    string `json:"phase"` // "c1", "c8", "open1000", "streams"
	Workload string `json:"workload"`
	Target   string `json:"target"`
	Metric   string `json:"metric"` // "total" (to the end) or "first" (to the first content byte)
	Dist     Dist   `json:"dist"`
}

// ClosedRow is one closed-loop measure of one round. At c=1 the targets are
// interleaved and only counts are kept here (latencies are LatencyRows); at
// higher concurrency each target runs alone and its process's CPU is read.
type ClosedRow struct {
	Workload string  `json:"workload"`
	Target   string  `json:"target"`
	Conc     int     `json:"concurrency"`
	Requests int     `json:"requests"`
	Errors   int     `json:"errors"`
	Seconds  float64 `json:"seconds,omitempty"`
	RPS      float64 `json:"rps,omitempty"`
	// CPUPerReq is the target's own process's user+system CPU per request;
	// Mock and Client are the mock's and this benchmark process's, for
	// context (the mock's is the same work on every target).
	CPUPerReqUS       float64  `json:"cpu_per_req_us,omitempty"`
	MockCPUPerReqUS   float64  `json:"mock_cpu_per_req_us,omitempty"`
	SideCPUPerReqUS   float64  `json:"sidecar_cpu_per_req_us,omitempty"`
	ClientCPUPerReqUS float64  `json:"client_cpu_per_req_us,omitempty"`
	ErrorSamples      []string `json:"error_samples,omitempty"`
}

// OpenRow is one open-loop measure of one round.
type OpenRow struct {
	Workload string  `json:"workload"`
	Target   string  `json:"target"`
	Rate     float64 `json:"rate"`
	Seconds  float64 `json:"seconds"`
	Sent     int     `json:"sent"`
	Errors   int     `json:"errors"`
	// SendLag is how late the client sent requests against their schedule:
	// the part of the latency that is the client's, not the target's.
	SendLagP99US float64  `json:"send_lag_p99_us"`
	SendLagMaxUS float64  `json:"send_lag_max_us"`
	MaxInflight  int      `json:"max_inflight"`
	ErrorSamples []string `json:"error_samples,omitempty"`
}

// StreamSample is one sample of the streams phase.
type StreamSample struct {
	T          float64 `json:"t_s"`
	Open       int     `json:"open"`
	RSSMB      float64 `json:"rss_mb"`
	FileMB     float64 `json:"file_mb,omitempty"` // of RSSMB, file-backed (the binary's pages)
	Goroutines int     `json:"goroutines,omitempty"`
	StackMB    float64 `json:"stack_mb,omitempty"` // goroutine stacks (go_memstats_stack_inuse_bytes)
}

// StreamRow is the streams phase of one target in one round. Memory is in
// MB (10^6 bytes). Goroutines and heap are -1 where the target's process
// has no /metrics (direct: the mock), and so is everything of wave 2,
// which runs only where they exist.
type StreamRow struct {
	Target   string  `json:"target"`
	Streams  int     `json:"streams"`
	Errors   int     `json:"errors"`
	StartRSS float64 `json:"start_rss_mb"` // right after the process was ready, before any request
	IdleRSS  float64 `json:"idle_rss_mb"`  // after the warm-up, before the streams
	PeakRSS  float64 `json:"peak_rss_mb"`  // max(VmHWM, sampled VmRSS) up to the end of wave 1
	// IdleFileRSS is the file-backed part of IdleRSS (RssFile, the binary's
	// pages; at the peak, the samples say it). 0: not measured (reports
	// before 2026-12-01).
	IdleFileRSS float64 `json:"idle_file_rss_mb,omitempty"`
	// WaveFileTouched is how much of the file-backed RSS wave 1 touched:
	// the Referenced pages of the file mappings, their accessed bits
	// cleared before the wave (touched.go). 0: not measured (reports
	// before 2026-12-02, or clear_refs refused).
	WaveFileTouched float64 `json:"wave_file_touched_mb,omitempty"`
	// WaveFileHuge is how much of the file-backed RSS was mapped by huge
	// entries after wave 1 (FilePmdMapped; stage.go). Measured where
	// WaveFileTouched is (reports from 2026-12-04's eighth round on).
	WaveFileHuge float64 `json:"wave_file_huge_mb,omitempty"`
	// Wave2PeakRSS is the same through wave 2 (0 without one).
	Wave2PeakRSS float64 `json:"wave2_peak_rss_mb"`
	AfterRSS     float64 `json:"after_rss_mb"` // after the last wave closed and goroutines settled
	MaxOpen      int     `json:"max_open"`     // most streams open at once, as the client saw it
	IdleGor      int     `json:"idle_goroutines"`
	PeakGor      int     `json:"peak_goroutines"`
	AfterGor     int     `json:"after_goroutines"` // after wave 1
	Wave2Gor     int     `json:"after_wave2_goroutines"`
	// Heap in use: idle as it is (no forced GC, procState), after each
	// wave after a forced GC where the target serves /debug/pprof.
	IdleHeap  float64 `json:"idle_heap_inuse_mb"`
	AfterHeap float64 `json:"after_heap_inuse_mb"` // after wave 1
	Wave2Heap float64 `json:"after_wave2_heap_inuse_mb"`
	// Live heap (the bytes of heap objects, go_memstats_heap_alloc_bytes)
	// at the same three moments; after a wave it is what survived two
	// forced collections. 0: not measured (reports before 2026-12-05's
	// fifteenth round); -1: the target has no /metrics.
	IdleLive  float64 `json:"idle_heap_live_mb,omitempty"`
	AfterLive float64 `json:"after_heap_live_mb,omitempty"`
	Wave2Live float64 `json:"after_wave2_heap_live_mb,omitempty"`
	// Pooled are the target's established connections to the mocks: kept
	// idle by its HTTP client for reuse (two goroutines each), not leaked.
	IdlePooled  int  `json:"idle_pooled_conns"`
	AfterPooled int  `json:"after_pooled_conns"`
	GCForced    bool `json:"gc_forced"`
	// BackToIdle: see backToIdle; why not: BackReason.
	BackToIdle   bool           `json:"back_to_idle"`
	BackReason   string         `json:"back_reason,omitempty"`
	Samples      []StreamSample `json:"samples"` // wave 1
	ErrorSamples []string       `json:"error_samples,omitempty"`
}

// RecordRow is the ledger check of one gateway target in one round: the
// gateway was stopped and its SQLite ledger opened with gateway/usage.
type RecordRow struct {
	Target   string         `json:"target"`
	Requests int            `json:"requests"`
	Records  int            `json:"records"`
	ByStatus map[string]int `json:"by_status"`
	OK       bool           `json:"ok"`
	Error    string         `json:"error,omitempty"`
	// JournalLag is the gateway's llmgw_usage_journal_commit_lag_seconds
	// over the round, scraped before it was stopped (nil: not exposed, the
	// finish journal off).
	JournalLag *LagHistogram `json:"journal_lag,omitempty"`
	// LedgerOps and LedgerTransactions are the ledger writer's counters
	// over the round (0: not exposed): their ratio is its mean batch.
	LedgerOps          uint64 `json:"ledger_operations,omitempty"`
	LedgerTransactions uint64 `json:"ledger_transactions,omitempty"`
}

// Round is one repetition of every measure, on fresh processes.
type Round struct {
	Index   int          `json:"index"`
	Order   []string     `json:"target_order"`
	Phases  []PhaseLoad  `json:"phases"`
	Latency []LatencyRow `json:"latency"`
	Closed  []ClosedRow  `json:"closed"`
	Open    []OpenRow    `json:"open"`
	Streams []StreamRow  `json:"streams"`
	Records []RecordRow  `json:"records"`
}

// Curve is a percentile curve of all rounds' samples together.
type Curve struct {
	Phase    string       `json:"phase"`
	Workload string       `json:"workload"`
	Target   string       `json:"target"`
	Metric   string       `json:"metric"`
	N        int          `json:"n"`
	Points   []CurvePoint `json:"points"`
}

// Check is a correctness check; a failed one fails the run.
type Check struct {
	Name   string `json:"name"`
	OK     bool   `json:"ok"`
	Detail string `json:"detail"`
}

// Goal is one of issue 12's targets for one gateway target, from the
// medians of the rounds.
type Goal struct {
	Target   string  `json:"target"`
	Name     string  `json:"name"`
	Workload string  `json:"workload,omitempty"`
	Verdict  Verdict `json:"verdict"`
	Unit     string  `json:"unit"` // "×" (a ratio against revproxy) or "MB"
	Detail   string  `json:"detail"`
}
