package source

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/llmgw/llmgw/api/gatewaystatus"
	"github.com/llmgw/llmgw/api/snapshot"
)

const reportNS, reportCM = "llmgw-system", gatewaystatus.DefaultConfigMapName

func quietLog() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// entry reads pod's report from the fake API ("" fields when absent).
func entry(t *testing.T, cs *fake.Clientset, pod string) (gatewaystatus.Report, bool) {
	t.Helper()
	cm, err := cs.CoreV1().ConfigMaps(reportNS).Get(context.Background(), reportCM, metav1.GetOptions{})
	if err != nil {
		return gatewaystatus.Report{}, false
	}
	raw, ok := cm.Data[pod]
	if !ok {
		return gatewaystatus.Report{}, false
	}
	r, err := gatewaystatus.Parse(raw)
	if err != nil {
		t.Fatalf("entry of %s does not parse: %v", pod, err)
	}
	return r, true
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func patches(cs *fake.Clientset) int {
	n := 0
	for _, a := range cs.Actions() {
		if a.GetVerb() == "patch" {
			n++
		}
	}
	return n
}

// TestReporter: each replica writes only its own key, retries until the
// controller has created the ConfigMap, writes nothing when nothing
// changed, and writes its entry again when it was removed.
func TestReporter(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cs := fake.NewClientset()
	now := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	var clock sync.Mutex
	tick := func() time.Time { clock.Lock(); defer clock.Unlock(); now = now.Add(time.Second); return now }
	reps := map[string]*reporter{}
	for _, pod := range []string{"gw-0", "gw-1"} {
		r := newReporter(cs, reportNS, reportCM, pod, quietLog())
		r.recheck, r.now = 50*time.Millisecond, tick
		reps[pod] = r
		go r.run(ctx)
	}

	t.Log("the ConfigMap does not exist yet: the first writes fail and are retried")
	reps["gw-0"].applied("sha256:v1")
	reps["gw-1"].refused("", "sha256:v1", errors.New("credential: Secret vendor-key not found"))
	eventually(t, "a failed patch", func() bool { return patches(cs) >= 1 })
	if _, ok := entry(t, cs, "gw-0"); ok {
		t.Fatal("an entry without a ConfigMap")
	}
	if _, err := cs.CoreV1().ConfigMaps(reportNS).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: reportNS, Name: reportCM},
		Data: map[string]string{"someone-else": "kept"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "both entries", func() bool {
		_, a := entry(t, cs, "gw-0")
		_, b := entry(t, cs, "gw-1")
		return a && b
	})
	r0, _ := entry(t, cs, "gw-0")
	r1, _ := entry(t, cs, "gw-1")
	if r0.Version != "sha256:v1" || r0.Refused() || r0.At.IsZero() {
		t.Errorf("gw-0: %+v", r0)
	}
	if r1.Version != "" || r1.RefusedVersion != "sha256:v1" || r1.RefusedReason != "credential: Secret vendor-key not found" {
		t.Errorf("gw-1: %+v", r1)
	}
	cm, _ := cs.CoreV1().ConfigMaps(reportNS).Get(ctx, reportCM, metav1.GetOptions{})
	if cm.Data["someone-else"] != "kept" {
		t.Errorf("a merge patch of one key dropped another: %v", cm.Data)
	}

	t.Log("the same state again writes nothing")
	before := patches(cs)
	reps["gw-0"].applied("sha256:v1")
	time.Sleep(150 * time.Millisecond) // several rechecks
	if got := patches(cs); got != before {
		t.Errorf("%d patches for an unchanged state", got-before)
	}

	t.Log("a later apply clears the refusal")
	reps["gw-1"].applied("sha256:v2")
	eventually(t, "gw-1 on v2", func() bool { r, _ := entry(t, cs, "gw-1"); return r.Version == "sha256:v2" })
	if r, _ := entry(t, cs, "gw-1"); r.Refused() || !r.At.After(r1.At) {
		t.Errorf("gw-1 after apply: %+v (previous at %v)", r, r1.At)
	}

	t.Log("an entry someone removed is written again at the next recheck")
	cm, _ = cs.CoreV1().ConfigMaps(reportNS).Get(ctx, reportCM, metav1.GetOptions{})
	delete(cm.Data, "gw-0")
	if _, err := cs.CoreV1().ConfigMaps(reportNS).Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "gw-0 again", func() bool { r, ok := entry(t, cs, "gw-0"); return ok && r.Version == "sha256:v1" })
}

// fakeSink accepts snapshots unless they carry a provider named "refuse".
type fakeSink struct {
	mu       sync.Mutex
	version  string
	rejected []error
}

func (f *fakeSink) Apply(_ context.Context, s *snapshot.Snapshot) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, p := range s.Providers {
		if p.Name == "refuse" {
			return errors.New("provider refuse: reading Secret x: not found")
		}
	}
	f.version = s.Version
	return nil
}
func (f *fakeSink) ReportReloadError(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.rejected = append(f.rejected, err)
}
func (f *fakeSink) Refresh(context.Context) error { return nil }
func (f *fakeSink) Version() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.version
}

// TestReportingSink: what the wrapped sink decides is what gets reported,
// and the sink still sees every call.
func TestReportingSink(t *testing.T) {
	inner := &fakeSink{}
	rep := newReporter(fake.NewClientset(), reportNS, reportCM, "gw-0", quietLog())
	s := reportingSink{Sink: inner, rep: rep}
	state := func() gatewaystatus.Report {
		rep.mu.Lock()
		defer rep.mu.Unlock()
		r := rep.current
		r.At = time.Time{}
		return r
	}

	good := validSnapshot()
	good.Version = "sha256:good"
	if err := s.Apply(context.Background(), good); err != nil {
		t.Fatal(err)
	}
	if got := state(); got != (gatewaystatus.Report{Version: "sha256:good"}) {
		t.Fatalf("after a good apply: %+v", got)
	}
	bad := validSnapshot()
	bad.Providers = append(bad.Providers, snapshot.Provider{Name: "refuse"})
	bad.Version = "sha256:bad"
	if err := s.Apply(context.Background(), bad); err == nil {
		t.Fatal("the fake sink must refuse")
	}
	if got := state(); got != (gatewaystatus.Report{Version: "sha256:good", RefusedVersion: "sha256:bad", RefusedReason: "provider refuse: reading Secret x: not found"}) {
		t.Fatalf("after a refusal: %+v", got)
	}
	s.ReportReloadError(errors.New("ConfigMap llmgw-system/llmgw-snapshot: not JSON"))
	if got := state(); got.RefusedVersion != "" || got.RefusedReason == "" || got.Version != "sha256:good" {
		t.Fatalf("after an unreadable snapshot: %+v", got)
	}
	if len(inner.rejected) != 1 {
		t.Fatalf("the inner sink did not see the reload error")
	}
	if err := s.Apply(context.Background(), good); err != nil || state().Refused() {
		t.Fatalf("a good apply must clear the refusal: %v %+v", err, state())
	}
}

// sealedFake is a fakeSink that also takes sealed snapshots, counting them.
type sealedFake struct {
	fakeSink
	sealed int
}

func (f *sealedFake) ApplySealed(ctx context.Context, s *snapshot.Snapshot) error {
	f.mu.Lock()
	f.sealed++
	f.mu.Unlock()
	return f.Apply(ctx, s)
}

// TestApplySealedThroughTheReporter: a sealed snapshot reaches a sink that
// takes it as such through the reporting wrapper (and is reported), and a
// sink that does not gets a plain Apply.
func TestApplySealedThroughTheReporter(t *testing.T) {
	snap := validSnapshot()
	snap.Version = "sha256:sealed"

	inner := &sealedFake{}
	rep := newReporter(fake.NewClientset(), reportNS, reportCM, "gw-0", quietLog())
	if err := applySealed(context.Background(), reportingSink{Sink: inner, rep: rep}, snap); err != nil {
		t.Fatal(err)
	}
	rep.mu.Lock()
	reported := rep.current.Version
	rep.mu.Unlock()
	if inner.sealed != 1 || inner.Version() != "sha256:sealed" || reported != "sha256:sealed" {
		t.Fatalf("sealed applies %d, running %q, reported %q", inner.sealed, inner.Version(), reported)
	}

	plain := &fakeSink{}
	if err := applySealed(context.Background(), reportingSink{Sink: plain, rep: rep}, snap); err != nil || plain.Version() != "sha256:sealed" {
		t.Fatalf("a sink without ApplySealed: %v, running %q", err, plain.Version())
	}
}
