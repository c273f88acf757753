package controllers

import (
	"context"
	"fmt"
	"reflect"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Status writes at scale. A reconcile decides every object's status at once,
// but writing them is one API call per changed object: 50,000 new keys are
// 50,000 patches, minutes even at a generous client rate. So the reconcile
// only hands the statuses it wants to a statusWriter and moves on; a pool of
// workers patches them in the background with a client of its own (its own
// rate limiter, so a backlog of statuses never delays the next snapshot's
// writes). Per object there is at most one patch in flight, and a newer
// wanted status replaces one that was not sent yet.

var (
	statusBacklog = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "llmgw_controller_status_backlog",
		Help: "Objects whose wanted status is not written yet (waiting or being patched).",
	})
	statusPatches = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "llmgw_controller_status_patches_total",
		Help: "Status patches by result: ok, unchanged (nothing to send), gone (the object was deleted), retry, dropped (gave up after retries).",
	}, []string{"result"})
)

func init() { metrics.Registry.MustRegister(statusBacklog, statusPatches) }

// statusMaxRetries bounds the retries of one failing patch; the next
// reconcile hands the status over again anyway.
const statusMaxRetries = 5

type statusKey struct {
	kind string // Go type, e.g. *v1alpha1.GatewayKey
	name string
}

type statusWant struct {
	obj  client.Object // the object with the wanted status
	orig client.Object // the object as the reconcile read it
}

// statusWriter patches statuses in the background; Start runs it.
type statusWriter struct {
	client  client.Client
	workers int
	log     logr.Logger
	queue   workqueue.TypedRateLimitingInterface[statusKey]

	mu      sync.Mutex
	pending map[statusKey]statusWant
	// busy is the key being patched; answer is the server's reply to the
	// last patch of a key whose newer status waits: it, not the reconcile's
	// older read, is what the next patch is computed against.
	busy   map[statusKey]bool
	answer map[statusKey]client.Object
	idle   *sync.Cond
}

func newStatusWriter(c client.Client, workers int, log logr.Logger) *statusWriter {
	w := &statusWriter{
		client: c, workers: max(workers, 1), log: log,
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.NewTypedItemExponentialFailureRateLimiter[statusKey](100*time.Millisecond, 10*time.Second),
			workqueue.TypedRateLimitingQueueConfig[statusKey]{Name: "llmgw-status"}),
		pending: map[statusKey]statusWant{},
		busy:    map[statusKey]bool{},
		answer:  map[statusKey]client.Object{},
	}
	w.idle = sync.NewCond(&w.mu)
	return w
}

func keyOf(obj client.Object) statusKey {
	return statusKey{kind: fmt.Sprintf("%T", obj), name: obj.GetNamespace() + "/" + obj.GetName()}
}

// enqueue hands over obj's wanted status (orig: as read) and says whether
// a write follows. It never blocks. unchanged says the status equals what
// the reconcile read: nothing to do, unless an earlier status for the
// object is still waiting or being written (then this one must win, even
// though the cache has not seen the other).
func (w *statusWriter) enqueue(obj, orig client.Object, unchanged bool) bool {
	k := keyOf(obj)
	w.mu.Lock()
	defer w.mu.Unlock()
	_, waiting := w.pending[k]
	if unchanged && !waiting && !w.busy[k] && w.answer[k] == nil {
		return false
	}
	w.pending[k] = statusWant{obj: slim(obj), orig: slim(orig)}
	statusBacklog.Set(float64(w.backlogLocked()))
	w.queue.Add(k)
	return true
}

func (w *statusWriter) backlogLocked() int {
	n := len(w.pending)
	for k := range w.busy {
		if _, ok := w.pending[k]; !ok {
			n++
		}
	}
	return n
}

// Backlog is how many objects still wait for their status to be written.
func (w *statusWriter) Backlog() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.backlogLocked()
}

// Start runs the workers until ctx ends (manager.Runnable); what is still
// pending then is dropped: the next leader decides every status again.
func (w *statusWriter) Start(ctx context.Context) error {
	var wg sync.WaitGroup
	for range w.workers {
		wg.Go(func() {
			for w.next(ctx) {
			}
		})
	}
	<-ctx.Done()
	w.queue.ShutDown()
	wg.Wait()
	return nil
}

// NeedLeaderElection: only the leader reconciles, so only it writes.
func (w *statusWriter) NeedLeaderElection() bool { return true }

func (w *statusWriter) next(ctx context.Context) bool {
	k, shutdown := w.queue.Get()
	if shutdown {
		return false
	}
	defer w.queue.Done(k)
	w.mu.Lock()
	want, ok := w.pending[k]
	delete(w.pending, k)
	base := w.answer[k]
	delete(w.answer, k)
	if ok {
		w.busy[k] = true
	}
	w.mu.Unlock()
	if !ok {
		return true // a newer hand-over was written already
	}
	if base == nil {
		base = want.orig
	}
	result, err := w.patch(ctx, want.obj, base)
	w.mu.Lock()
	delete(w.busy, k)
	_, newer := w.pending[k]
	switch {
	case err != nil && !newer && w.queue.NumRequeues(k) < statusMaxRetries:
		// Retried with backoff unless a newer status came meanwhile.
		w.pending[k] = want
		w.queue.AddRateLimited(k)
		result = "retry"
	case err != nil:
		w.queue.Forget(k)
		if !newer {
			result = "dropped"
		}
	default:
		w.queue.Forget(k)
		if newer && result == "ok" {
			w.answer[k] = want.obj // the server's reply, filled in by Patch
		}
	}
	statusBacklog.Set(float64(w.backlogLocked()))
	if len(w.pending) == 0 && len(w.busy) == 0 {
		w.idle.Broadcast()
	}
	w.mu.Unlock()
	statusPatches.WithLabelValues(result).Inc()
	if err != nil && result != "retry" {
		w.log.Error(err, "writing a status failed; the next reconcile tries again", "kind", k.kind, "name", k.name)
	}
	return true
}

// patch sends what differs between base's status and obj's as a merge
// patch. Only the status: base may be an older read or a newer reply, and a
// resourceVersion in a merge patch would be a precondition.
func (w *statusWriter) patch(ctx context.Context, obj, base client.Object) (string, error) {
	from := obj.DeepCopyObject().(client.Object)
	if err := copyStatus(from, base); err != nil {
		return "", err
	}
	p := client.MergeFrom(from)
	data, err := p.Data(obj)
	if err != nil {
		return "", fmt.Errorf("computing the status patch of %s: %w", obj.GetName(), err)
	}
	if string(data) == "{}" {
		return "unchanged", nil
	}
	err = w.client.Status().Patch(ctx, obj, client.RawPatch(p.Type(), data), client.FieldOwner(FieldOwner))
	if apierrors.IsNotFound(err) {
		return "gone", nil // deleted meanwhile; its delete event brings another round
	}
	if err != nil {
		return "", fmt.Errorf("patching status of %T %s: %w", obj, obj.GetName(), err)
	}
	return "ok", nil
}

// slim copies of what a status patch needs (namespace, name, status) are
// what a backlog holds: at 50,000 new keys, whole objects (spec, metadata)
// twice over would be hundreds of megabytes.
func slim(obj client.Object) client.Object {
	out := reflect.New(reflect.TypeOf(obj).Elem()).Interface().(client.Object)
	out.SetNamespace(obj.GetNamespace())
	out.SetName(obj.GetName())
	out.SetUID(obj.GetUID())
	if err := copyStatus(out, obj); err != nil {
		return obj.DeepCopyObject().(client.Object) // not a kind with a Status field
	}
	// copyStatus shares the status's slices and maps with obj: deep-copy
	// them through the generated DeepCopy of the status type.
	st := reflect.ValueOf(out).Elem().FieldByName("Status")
	if m := st.Addr().MethodByName("DeepCopy"); m.IsValid() && m.Type().NumIn() == 0 && m.Type().NumOut() == 1 {
		st.Set(m.Call(nil)[0].Elem())
	}
	return out
}

// copyStatus sets dst's Status field to src's (both the same kind).
func copyStatus(dst, src client.Object) error {
	d := reflect.ValueOf(dst).Elem().FieldByName("Status")
	s := reflect.ValueOf(src).Elem().FieldByName("Status")
	if !d.IsValid() || !s.IsValid() || d.Type() != s.Type() {
		return fmt.Errorf("%T has no Status field like %T's", dst, src)
	}
	d.Set(s)
	return nil
}

// waitIdle blocks until nothing is pending or being written, or ctx ends.
func (w *statusWriter) waitIdle(ctx context.Context) error {
	stop := context.AfterFunc(ctx, func() {
		w.mu.Lock()
		w.idle.Broadcast()
		w.mu.Unlock()
	})
	defer stop()
	w.mu.Lock()
	defer w.mu.Unlock()
	for len(w.pending) > 0 || len(w.busy) > 0 {
		if ctx.Err() != nil {
			return context.Cause(ctx)
		}
		w.idle.Wait()
	}
	return nil
}
