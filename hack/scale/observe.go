package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/llmgw/llmgw/api/snapshot"
)

// byteWatch is a raw watch on the snapshot's ConfigMaps with the gateway's
// label selector: the bytes it reads are what each gateway's informer
// receives (client-go's default JSON, binaryData in base64).
type byteWatch struct {
	n      atomic.Int64
	cancel context.CancelFunc
}

func (k *kube) watchBytes(ctx context.Context) (*byteWatch, error) {
	ctx, cancel := context.WithCancel(ctx)
	h, cm, err := k.head(ctx)
	if err != nil || h == nil {
		cancel()
		return nil, fmt.Errorf("reading the head before watching: %v", err)
	}
	rc, err := k.cs.CoreV1().RESTClient().Get().Namespace(k.c.namespace).Resource("configmaps").
		Param("watch", "true").Param("labelSelector", snapshot.Selector(snapshot.DefaultConfigMapName)).
		Param("resourceVersion", cm.ResourceVersion).Param("allowWatchBookmarks", "false").Stream(ctx)
	if err != nil {
		cancel()
		return nil, err
	}
	w := &byteWatch{cancel: cancel}
	go func() {
		defer rc.Close()
		buf := make([]byte, 64<<10)
		for {
			n, err := rc.Read(buf)
			w.n.Add(int64(n))
			if err != nil {
				return
			}
		}
	}()
	return w, nil
}

func (w *byteWatch) bytes() int64 { return w.n.Load() }
func (w *byteWatch) stop()        { w.cancel() }

func newParts(before, after *snapshot.Head) int {
	if before == nil || after == nil {
		return 0
	}
	old := map[string]bool{}
	for _, r := range before.Parts() {
		old[r.Name] = true
	}
	n := 0
	for _, r := range after.Parts() {
		if !old[r.Name] {
			n++
		}
	}
	return n
}

func describeHead(h *snapshot.Head) snapshotSize {
	s := snapshotSize{Version: h.Version, KeyShards: len(h.Keys), Keys: headKeys(h), ConfigBytes: h.Config.Bytes}
	s.CompressedBytes = h.Config.Bytes
	for _, r := range h.Keys {
		s.CompressedBytes += r.Bytes
		s.LargestShardBytes = max(s.LargestShardBytes, r.Bytes)
	}
	b, _ := json.Marshal(h)
	s.HeadBytes = len(b)
	return s
}

// memory reads every llmgw container's memory from the kubelet's summary
// API (through the API server's node proxy) and the gateways' own metrics.
func (k *kube) memory(ctx context.Context, gws *gateways) (map[string]memSample, error) {
	out := map[string]memSample{}
	pods, err := k.cs.CoreV1().Pods(k.c.namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	nodes := map[string]bool{}
	for _, p := range pods.Items {
		nodes[p.Spec.NodeName] = true
	}
	for node := range nodes {
		raw, err := k.cs.CoreV1().RESTClient().Get().AbsPath("/api/v1/nodes", node, "proxy/stats/summary").DoRaw(ctx)
		if err != nil {
			return nil, fmt.Errorf("kubelet summary of %s: %w", node, err)
		}
		var sum struct {
			Pods []struct {
				PodRef     struct{ Name, Namespace string }
				Containers []struct {
					Name   string
					Memory struct {
						WorkingSetBytes, RSSBytes uint64
					}
				}
			}
		}
		if err := json.Unmarshal(raw, &sum); err != nil {
			return nil, err
		}
		for _, p := range sum.Pods {
			if p.PodRef.Namespace != k.c.namespace {
				continue
			}
			for _, c := range p.Containers {
				out[p.PodRef.Name] = memSample{WorkingSetMiB: mib(c.Memory.WorkingSetBytes), RSSMiB: mib(c.Memory.RSSBytes)}
			}
		}
	}
	for _, gw := range gws.list {
		m, err := gws.metrics(ctx, gw, "process_resident_memory_bytes", "go_memstats_heap_inuse_bytes")
		if err != nil {
			return nil, fmt.Errorf("metrics of %s: %w", gw.pod, err)
		}
		s := out[gw.pod]
		s.ProcessRSSMiB, s.GoHeapInuseMiB = mib(uint64(m["process_resident_memory_bytes"])), mib(uint64(m["go_memstats_heap_inuse_bytes"]))
		out[gw.pod] = s
	}
	for name, s := range out {
		logf("memory: %-45s working set %7.1f MiB, RSS %7.1f MiB, process RSS %7.1f MiB, Go heap in use %7.1f MiB",
			name, s.WorkingSetMiB, s.RSSMiB, s.ProcessRSSMiB, s.GoHeapInuseMiB)
	}
	return out, nil
}

func mib(b uint64) float64 { return float64(b) / (1 << 20) }

// gatewayReloads reads each gateway's "snapshot assembled" log lines since
// the run started.
func (k *kube) gatewayReloads(ctx context.Context, gws *gateways, since time.Time) []reload {
	var out []reload
	for _, gw := range gws.list {
		for _, line := range k.logLines(ctx, gw.pod, since, "snapshot assembled") {
			var r reload
			if json.Unmarshal([]byte(line), &r) == nil {
				r.Pod = gw.pod
				out = append(out, r)
			}
		}
	}
	return out
}

// controllerPublishes reads the controller's "published snapshot" lines.
func (k *kube) controllerPublishes(ctx context.Context, since time.Time) []publish {
	pods, err := k.cs.CoreV1().Pods(k.c.namespace).List(ctx, metav1.ListOptions{LabelSelector: k.c.controllerSel})
	if err != nil || len(pods.Items) == 0 {
		return nil
	}
	var out []publish
	for _, p := range pods.Items {
		for _, line := range k.logLines(ctx, p.Name, since, "published snapshot") {
			var pub publish
			if json.Unmarshal([]byte(line), &pub) == nil {
				out = append(out, pub)
			}
		}
	}
	return out
}

func (k *kube) logLines(ctx context.Context, pod string, since time.Time, msg string) []string {
	t := metav1.NewTime(since)
	rc, err := k.cs.CoreV1().Pods(k.c.namespace).GetLogs(pod, &corev1.PodLogOptions{SinceTime: &t}).Stream(ctx)
	if err != nil {
		return nil
	}
	defer rc.Close()
	var out []string
	sc := bufio.NewScanner(io.LimitReader(rc, 256<<20))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if strings.Contains(sc.Text(), `"msg":"`+msg+`"`) {
			out = append(out, sc.Text())
		}
	}
	return out
}
