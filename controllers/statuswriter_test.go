package controllers

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/llmgw/llmgw/api/v1alpha1"
)

// fakeStatusAPI is a fake API server whose status patches take `delay` and
// can fail; it records how many patches run at once, per object and in all.
type fakeStatusAPI struct {
	client.Client
	delay time.Duration

	mu          sync.Mutex
	inflight    map[string]int
	maxPerObj   int
	total, peak int
	patches     atomic.Int32
	fail        func(name string, n int) error // nil: succeed
}

func newFakeStatusAPI(t *testing.T, keys int, delay time.Duration) *fakeStatusAPI {
	t.Helper()
	scheme, err := Scheme()
	if err != nil {
		t.Fatal(err)
	}
	b := fake.NewClientBuilder().WithScheme(scheme).WithStatusSubresource(&v1alpha1.GatewayKey{})
	for i := range keys {
		b = b.WithObjects(&v1alpha1.GatewayKey{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: fmt.Sprintf("k%d", i)}})
	}
	f := &fakeStatusAPI{delay: delay, inflight: map[string]int{}}
	f.Client = interceptor.NewClient(b.Build(), interceptor.Funcs{
		SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, p client.Patch, opts ...client.SubResourcePatchOption) error {
			name := obj.GetName()
			f.mu.Lock()
			f.inflight[name]++
			f.total++
			f.maxPerObj = max(f.maxPerObj, f.inflight[name])
			f.peak = max(f.peak, f.total)
			f.mu.Unlock()
			defer func() {
				f.mu.Lock()
				f.inflight[name]--
				f.total--
				f.mu.Unlock()
			}()
			n := int(f.patches.Add(1))
			time.Sleep(f.delay)
			if f.fail != nil {
				if err := f.fail(name, n); err != nil {
					return err
				}
			}
			return c.Status().Patch(ctx, obj, p, opts...)
		},
	})
	return f
}

func (f *fakeStatusAPI) fingerprint(t *testing.T, name string) string {
	t.Helper()
	var gk v1alpha1.GatewayKey
	if err := f.Get(context.Background(), client.ObjectKey{Namespace: "ns", Name: name}, &gk); err != nil {
		t.Fatal(err)
	}
	return gk.Status.Fingerprint
}

// want hands the writer a status for key name, as a reconcile would: orig is
// what it read (the fake's current object), obj the same with the status.
func want(t *testing.T, w *statusWriter, f *fakeStatusAPI, name, fingerprint string) {
	t.Helper()
	var orig v1alpha1.GatewayKey
	if err := f.Get(context.Background(), client.ObjectKey{Namespace: "ns", Name: name}, &orig); err != nil {
		t.Fatal(err)
	}
	obj := orig.DeepCopy()
	obj.Status.Fingerprint = fingerprint
	w.enqueue(obj, &orig, orig.Status.Fingerprint == fingerprint)
}

func runWriter(t *testing.T, f *fakeStatusAPI, workers int) *statusWriter {
	t.Helper()
	w := newStatusWriter(f, workers, logr.Discard())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = w.Start(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return w
}

func idle(t *testing.T, w *statusWriter) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := w.waitIdle(ctx); err != nil {
		t.Fatalf("status writer not idle: %v (backlog %d)", err, w.Backlog())
	}
}

// TestStatusWriterOneInFlightPerObject: a burst of statuses for one object
// while its patches are slow is coalesced, never two patches at once, and
// the last wanted status is what the API server ends with.
func TestStatusWriterOneInFlightPerObject(t *testing.T) {
	f := newFakeStatusAPI(t, 1, 20*time.Millisecond)
	w := runWriter(t, f, 8)
	for i := range 30 {
		want(t, w, f, "k0", fmt.Sprintf("v%d", i))
		time.Sleep(2 * time.Millisecond)
	}
	idle(t, w)
	if got := f.fingerprint(t, "k0"); got != "v29" {
		t.Fatalf("final status %q, want the last one, v29", got)
	}
	if f.maxPerObj != 1 {
		t.Fatalf("%d patches of one object in flight at once", f.maxPerObj)
	}
	if n := f.patches.Load(); n >= 30 {
		t.Fatalf("%d patches for 30 hand-overs: nothing coalesced", n)
	}
}

// TestStatusWriterIsConcurrentAndNonBlocking: handing over 200 statuses
// returns at once, and they are written by several workers in parallel.
func TestStatusWriterIsConcurrentAndNonBlocking(t *testing.T) {
	const n, workers = 200, 8
	f := newFakeStatusAPI(t, n, 10*time.Millisecond)
	w := runWriter(t, f, workers)
	objs := make([][2]*v1alpha1.GatewayKey, n)
	for i := range objs {
		var orig v1alpha1.GatewayKey
		if err := f.Get(context.Background(), client.ObjectKey{Namespace: "ns", Name: fmt.Sprintf("k%d", i)}, &orig); err != nil {
			t.Fatal(err)
		}
		obj := orig.DeepCopy()
		obj.Status.Fingerprint = "new"
		objs[i] = [2]*v1alpha1.GatewayKey{obj, &orig}
	}
	start := time.Now()
	for _, o := range objs {
		w.enqueue(o[0], o[1], false)
	}
	if d := time.Since(start); d > 500*time.Millisecond {
		t.Fatalf("handing over %d statuses took %v: the reconcile would wait for the writes", n, d)
	}
	idle(t, w)
	for i := range n {
		if got := f.fingerprint(t, fmt.Sprintf("k%d", i)); got != "new" {
			t.Fatalf("k%d: status %q", i, got)
		}
	}
	if f.peak < 2 || f.peak > workers {
		t.Fatalf("at most %d patches at once, want between 2 and %d", f.peak, workers)
	}
	if w.Backlog() != 0 {
		t.Fatalf("backlog %d after idle", w.Backlog())
	}
}

// TestStatusWriterRevertWins: a status handed over while an earlier one is
// still being written, equal to what the reconcile read (its cache has not
// seen the earlier write), must still be written: it is the newest decision.
func TestStatusWriterRevertWins(t *testing.T) {
	f := newFakeStatusAPI(t, 1, 100*time.Millisecond)
	w := runWriter(t, f, 2)
	var orig v1alpha1.GatewayKey
	if err := f.Get(context.Background(), client.ObjectKey{Namespace: "ns", Name: "k0"}, &orig); err != nil {
		t.Fatal(err)
	}
	changed := orig.DeepCopy()
	changed.Status.Fingerprint = "changed"
	w.enqueue(changed, &orig, false)
	time.Sleep(30 * time.Millisecond) // the patch is in flight
	w.enqueue(orig.DeepCopy(), &orig, true)
	idle(t, w)
	if got := f.fingerprint(t, "k0"); got != "" {
		t.Fatalf("final status %q, want the reverted empty one", got)
	}
}

func TestStatusWriterErrors(t *testing.T) {
	cases := []struct {
		name        string
		fail        func(name string, n int) error
		wantStatus  string
		wantPatches int32
	}{
		{"transient errors are retried", func(_ string, n int) error {
			if n <= 2 {
				return apierrors.NewServiceUnavailable("busy")
			}
			return nil
		}, "new", 3},
		{"a deleted object is dropped", func(string, int) error {
			return apierrors.NewNotFound(schema.GroupResource{Group: "llmgw.dev", Resource: "gatewaykeys"}, "k0")
		}, "", 1},
		{"retries are bounded", func(string, int) error { return errors.New("always") }, "", statusMaxRetries + 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFakeStatusAPI(t, 1, 0)
			f.fail = c.fail
			w := runWriter(t, f, 2)
			want(t, w, f, "k0", "new")
			idle(t, w)
			if got := f.fingerprint(t, "k0"); got != c.wantStatus {
				t.Fatalf("status %q, want %q", got, c.wantStatus)
			}
			if n := f.patches.Load(); n != c.wantPatches {
				t.Fatalf("%d patches, want %d", n, c.wantPatches)
			}
		})
	}
}

// TestStatusWriterUnchangedIsFree: a status equal to what was read, with
// nothing pending for the object, costs no patch and no copy.
func TestStatusWriterUnchangedIsFree(t *testing.T) {
	f := newFakeStatusAPI(t, 1, 0)
	w := runWriter(t, f, 1)
	want(t, w, f, "k0", "")
	idle(t, w)
	if n := f.patches.Load(); n != 0 || w.Backlog() != 0 {
		t.Fatalf("%d patches, backlog %d for an unchanged status", n, w.Backlog())
	}
}

// TestStatusWriterHoldsSlimCopies: what waits is the status (and the name),
// not the whole object, and it does not share memory with the caller's
// object, which the reconcile goes on using.
func TestStatusWriterHoldsSlimCopies(t *testing.T) {
	w := newStatusWriter(nil, 1, logr.Discard())
	orig := &v1alpha1.GatewayKey{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "k", Labels: map[string]string{"big": "metadata"}},
		Spec: v1alpha1.GatewayKeySpec{KeyHash: "sha256:" + fmt.Sprintf("%064d", 0), Models: []string{"*"}}}
	obj := orig.DeepCopy()
	obj.Status.Conditions = []metav1.Condition{{Type: "Ready", Message: "wanted"}}
	w.enqueue(obj, orig, false)
	obj.Status.Conditions[0].Message = "changed by the caller afterwards"
	got := w.pending[keyOf(obj)].obj.(*v1alpha1.GatewayKey)
	if got.Status.Conditions[0].Message != "wanted" {
		t.Fatalf("the pending status shares the caller's memory: %q", got.Status.Conditions[0].Message)
	}
	if got.Name != "k" || got.Namespace != "ns" || got.Labels != nil || got.Spec.KeyHash != "" {
		t.Fatalf("pending copy is not slim: %+v", got.ObjectMeta)
	}
}
