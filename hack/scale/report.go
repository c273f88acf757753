package main

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"time"
)

type report struct {
	Keys, Aliases         int
	BaselineKeys          int
	Started               time.Time
	BulkCreate, Converged float64 // seconds
	StatusesDone          float64 // seconds after the bulk was served, 0: not waited for
	Snapshot              snapshotSize
	StatusesAtConvergence statusCount
	StatusesAtEnd         statusCount
	MemoryAtScale         map[string]memSample
	MemoryAfterSamples    map[string]memSample
	Samples               []sampleResult
	Reloads               []reload
	Publishes             []publish
}

type snapshotSize struct {
	Version                            string
	Keys, KeyShards                    int
	CompressedBytes, LargestShardBytes int
	ConfigBytes, HeadBytes             int
}

type statusCount struct {
	At                 time.Time
	Listed, WithStatus int
	Err                string `json:",omitempty"`
}

type memSample struct {
	WorkingSetMiB, RSSMiB, ProcessRSSMiB, GoHeapInuseMiB float64
}

type sampleResult struct {
	Key        string
	CreateCall float64   // ms
	Served     float64   // ms until the last gateway served it
	PerGateway []float64 // ms
	WatchBytes int64     // bytes one snapshot watcher received for the change
	NewParts   int
}

// reload is a gateway's "snapshot assembled" log line.
type reload struct {
	Pod          string
	Time         time.Time `json:"time"`
	Version      string    `json:"version"`
	Keys         int       `json:"keys"`
	PartsDecoded int       `json:"partsDecoded"`
	AssembleMs   float64   `json:"assembleMs"`
	ApplyMs      float64   `json:"applyMs"`
}

// publish is the controller's "published snapshot" log line.
type publish struct {
	Version      string `json:"version"`
	Keys         int    `json:"keys"`
	KeyShards    int    `json:"keyShards"`
	Bytes        int    `json:"bytes"`
	PartsCreated int    `json:"partsCreated"`
	BytesSent    int    `json:"bytesSent"`
	PartsDeleted int    `json:"partsDeleted"`
	SplitMs      int    `json:"splitMs"`
	PublishMs    int    `json:"publishMs"`
}

func percentile(v []float64, p float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Sorted(slices.Values(v))
	i := int(p/100*float64(len(s)) + 0.5)
	return s[min(max(i-1, 0), len(s)-1)]
}

func (r *report) print(w io.Writer) {
	fmt.Fprintf(w, "\n== scale report: %d keys (+%d before), %d aliases ==\n", r.Keys, r.BaselineKeys, r.Aliases)
	fmt.Fprintf(w, "bulk create %.0f s; published and on every gateway %.0f s later\n", r.BulkCreate, r.Converged)
	s := r.Snapshot
	fmt.Fprintf(w, "snapshot: %d keys, %d key shards, %d bytes compressed in all (largest shard %d, config part %d, head %d)\n",
		s.Keys, s.KeyShards, s.CompressedBytes, s.LargestShardBytes, s.ConfigBytes, s.HeadBytes)
	var served, watch, parts []float64
	for _, x := range r.Samples {
		served = append(served, x.Served)
		watch = append(watch, float64(x.WatchBytes))
		parts = append(parts, float64(x.NewParts))
	}
	fmt.Fprintf(w, "apply → served by every gateway (%d samples): p50 %.0f ms, p99 %.0f ms, max %.0f ms\n",
		len(served), percentile(served, 50), percentile(served, 99), percentile(served, 100))
	fmt.Fprintf(w, "bytes on the wire per one-key change (one watcher): p50 %.0f, max %.0f; new parts p50 %.0f\n",
		percentile(watch, 50), percentile(watch, 100), percentile(parts, 50))
	var apply, assemble []float64
	for _, x := range r.Reloads {
		if x.Keys >= r.Keys {
			apply = append(apply, x.ApplyMs)
			assemble = append(assemble, x.AssembleMs)
		}
	}
	fmt.Fprintf(w, "gateway reloads at scale (%d): assemble p50 %.0f ms, max %.0f ms; apply p50 %.0f ms, p99 %.0f ms, max %.0f ms\n",
		len(apply), percentile(assemble, 50), percentile(assemble, 100), percentile(apply, 50), percentile(apply, 99), percentile(apply, 100))
	var pubMs, splitMs []float64
	for _, p := range r.Publishes {
		if p.Keys >= r.Keys {
			pubMs = append(pubMs, float64(p.PublishMs))
			splitMs = append(splitMs, float64(p.SplitMs))
		}
	}
	fmt.Fprintf(w, "controller publishes at scale (%d): split p50 %.0f ms, publish p50 %.0f ms, max %.0f ms\n",
		len(pubMs), percentile(splitMs, 50), percentile(pubMs, 50), percentile(pubMs, 100))
	if r.StatusesDone > 0 {
		fmt.Fprintf(w, "every status written %.0f s after the bulk was served\n", r.StatusesDone)
	}
	fmt.Fprintf(w, "statuses written: %d/%d at convergence, %d/%d at the end (%.0f s later)\n",
		r.StatusesAtConvergence.WithStatus, r.StatusesAtConvergence.Listed, r.StatusesAtEnd.WithStatus, r.StatusesAtEnd.Listed,
		r.StatusesAtEnd.At.Sub(r.StatusesAtConvergence.At).Seconds())
	for _, m := range []struct {
		name string
		mem  map[string]memSample
	}{{"at scale", r.MemoryAtScale}, {"after the samples", r.MemoryAfterSamples}} {
		for _, pod := range slices.Sorted(maps.Keys(m.mem)) {
			x := m.mem[pod]
			fmt.Fprintf(w, "memory %s: %-40s working set %.0f MiB, RSS %.0f MiB (process RSS %.0f MiB, Go heap %.0f MiB)\n",
				m.name, pod, x.WorkingSetMiB, x.RSSMiB, x.ProcessRSSMiB, x.GoHeapInuseMiB)
		}
	}
}
