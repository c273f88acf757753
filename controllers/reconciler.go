package controllers

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/llmgw/llmgw/api/snapshot"
	"github.com/llmgw/llmgw/api/v1alpha1"
)

// The ConfigMap's name and data key are the contract in package snapshot.
const (
	// VersionAnnotation repeats the snapshot version so that "did it change"
	// needs no JSON parsing and `kubectl get -o yaml` shows it at a glance.
	VersionAnnotation = "llmgw.dev/snapshot-version"
	ManagedByLabel    = "app.kubernetes.io/managed-by"
	ManagedByValue    = "llmgw-controller"
	ComponentLabel    = "app.kubernetes.io/component"
	ComponentValue    = "snapshot"
	// FieldOwner names the controller in managedFields of everything it writes.
	FieldOwner = "llmgw-controller"
)

// The RBAC the controller needs, and no more: read the four kinds, the
// Secrets (to see which credentials exist) and the Services (to see which
// in-cluster providers exist, with which ports), patch their status, write the
// snapshot ConfigMap, read the one the gateways report into (and create it),
// list the gateway Pods (which are ready), hold its leader Lease, record
// Events (events.k8s.io/v1; the core group for leader election's).
// make manifests turns these into config/rbac/role.yaml. create cannot be
// limited by resourceNames, nor can list/watch with a label selector or the
// deletion of the snapshot's parts, whose names carry their content hash.
//
// +kubebuilder:rbac:groups=llmgw.dev,namespace=llmgw-system,resources=providerendpoints;modelaliases;gatewaykeys;budgetgroups,verbs=list;watch
// +kubebuilder:rbac:groups=llmgw.dev,namespace=llmgw-system,resources=providerendpoints/status;modelaliases/status;gatewaykeys/status;budgetgroups/status,verbs=patch
// +kubebuilder:rbac:groups="",namespace=llmgw-system,resources=secrets,verbs=list;watch
// +kubebuilder:rbac:groups="",namespace=llmgw-system,resources=services,verbs=list;watch
// +kubebuilder:rbac:groups="",namespace=llmgw-system,resources=configmaps,verbs=create;list;watch;delete
// +kubebuilder:rbac:groups="",namespace=llmgw-system,resources=configmaps,resourceNames=llmgw-snapshot,verbs=get;update
// +kubebuilder:rbac:groups="",namespace=llmgw-system,resources=configmaps,resourceNames=llmgw-gateway-status,verbs=get;list;watch
// +kubebuilder:rbac:groups="",namespace=llmgw-system,resources=pods,verbs=list;watch
// +kubebuilder:rbac:groups=coordination.k8s.io,namespace=llmgw-system,resources=leases,verbs=create
// +kubebuilder:rbac:groups=coordination.k8s.io,namespace=llmgw-system,resources=leases,resourceNames=llmgw-controller-leader,verbs=get;update
// +kubebuilder:rbac:groups="",namespace=llmgw-system,resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=events.k8s.io,namespace=llmgw-system,resources=events,verbs=create;patch

var (
	snapshotWrites = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "llmgw_controller_snapshot_writes_total",
		Help: "Writes of the snapshot ConfigMap (one per new snapshot version).",
	})
	compiles = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "llmgw_controller_compiles_total",
		Help: "Compilations of the namespace's objects into a snapshot (after debouncing).",
	})
	// publishSeconds is the controller's half of a hot load: from the first
	// event of a burst (debounce included) to the new head written; the
	// gateways' half is llmgw_snapshot_apply_seconds.
	publishSeconds = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "llmgw_controller_publish_seconds",
		Help:    "From the first change of a burst to the new snapshot's head ConfigMap written: debounce, listing, compiling and writing.",
		Buckets: []float64{0.05, 0.1, 0.25, 0.5, 0.75, 1, 1.5, 2, 3, 5, 10, 30},
	})
	objects = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "llmgw_controller_objects",
		Help: "Objects seen in the last compilation, by kind and Ready condition status (true, false, unknown).",
	}, []string{"kind", "ready"})
)

func init() { metrics.Registry.MustRegister(snapshotWrites, compiles, publishSeconds, objects) }

// Reconciler compiles the whole namespace at once: every event maps to one
// request, so the work queue itself collapses bursts, and the debounce below
// waits for a burst to end before compiling.
type Reconciler struct {
	Client client.Client
	// APIReader reads the ConfigMap uncached, so the "only on change" check
	// never compares against a cache that has not seen our last write.
	APIReader client.Reader
	// Namespace is the controller's own: the snapshot, the ProviderEndpoints
	// and the Secrets and Services they reference are there.
	Namespace string
	// WatchNamespaces are the other namespaces whose ModelAliases,
	// GatewayKeys and BudgetGroups are compiled too (namespaces.go).
	WatchNamespaces []string
	ConfigMapName   string
	Limits          snapshot.Limits
	// Debounce is the quiet period after the last event before compiling;
	// DebounceMax bounds the wait under a continuous stream of events.
	Debounce, DebounceMax time.Duration
	// Now is the clock (tests may pin it); nil means time.Now.
	Now func() time.Time
	Log logr.Logger
	// Gateways finds the gateway replicas and what they report; nil: no
	// gateway is looked for (Programmed stays Unknown, NoGateways).
	Gateways *GatewayWatch
	// Recorder records an Event per condition transition; nil records none.
	Recorder events.EventRecorder
	// ExpiryWarning is how long before its expiresAt a key is ExpiringSoon
	// (--key-expiry-warning; 0: never).
	ExpiryWarning time.Duration
	// OwnerLabels are the label keys copied into the snapshot's owners
	// (--owner-labels), as OwnerLabelKeys returns them.
	OwnerLabels []string

	mu                    sync.Mutex
	firstEvent, lastEvent time.Time
	// burstStart is the first event of the burst this round answers (for
	// the publish log line: event → published).
	burstStart time.Time
	writes     int64
	// delivery is the publisher's memory (publish.go).
	delivery delivery
	// statuses writes statuses in the background (statuswriter.go); nil:
	// patchStatus writes them itself.
	statuses *statusWriter
	// pubs is touched by Reconcile only (MaxConcurrentReconciles: 1).
	pubs    publications
	decided map[objectRef]condSet
	// keyStates is, per GatewayKey, the lifecycle last decided (rotation,
	// expiry warning: keyevents.go); guarded by mu, as decided.
	keyStates map[objectRef]keyState
	// verified is, per object, the status last found in place with
	// nothing left to write (status.go); touched by Reconcile only.
	verified map[objectRef]wantedStatus
	// memo carries each GatewayKey's own compilation from one reconcile
	// to the next (compilememo.go); touched by Reconcile only.
	memo *CompileMemo
	// inputsChanged: an event since the last round may change what
	// Compile sees (guarded by mu). compiled is the last published
	// compilation (Reconcile only).
	inputsChanged bool
	compiled      *compilation
}

// Writes is how many times this reconciler wrote the ConfigMap.
func (r *Reconciler) Writes() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.writes
}

func (r *Reconciler) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

func (r *Reconciler) request() reconcile.Request {
	return reconcile.Request{NamespacedName: types.NamespacedName{Namespace: r.Namespace, Name: r.ConfigMapName}}
}

// touch records an event and schedules the namespace's one request. input
// says the event may change what Compile sees (one of the four kinds, a
// Secret, a Service, the snapshot ConfigMap); the gateways' Pods and
// reports only change Programmed.
func (r *Reconciler) touch(q workqueue.TypedRateLimitingInterface[reconcile.Request], input bool) {
	r.mu.Lock()
	r.inputsChanged = r.inputsChanged || input
	now := r.now()
	if r.firstEvent.IsZero() {
		r.firstEvent = now
	}
	r.lastEvent = now
	r.mu.Unlock()
	q.AddAfter(r.request(), r.Debounce)
}

// settle says how much longer to wait before compiling (0: now) and, when it
// is time, closes the current burst.
func (r *Reconciler) settle() time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.firstEvent.IsZero() {
		return 0
	}
	now := r.now()
	quiet := r.Debounce - now.Sub(r.lastEvent)
	capped := r.DebounceMax - now.Sub(r.firstEvent)
	if wait := min(quiet, capped); wait > 0 {
		return wait
	}
	r.burstStart = r.firstEvent
	r.firstEvent, r.lastEvent = time.Time{}, time.Time{}
	return 0
}

// enqueueAll maps every event to the one request; input: see touch.
func (r *Reconciler) enqueueAll(input bool) handler.EventHandler {
	return handler.Funcs{
		CreateFunc: func(_ context.Context, _ event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			r.touch(q, input)
		},
		UpdateFunc: func(_ context.Context, _ event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			r.touch(q, input)
		},
		DeleteFunc: func(_ context.Context, _ event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			r.touch(q, input)
		},
		GenericFunc: func(_ context.Context, _ event.GenericEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			r.touch(q, input)
		},
	}
}

// SetupWithManager registers the watches: the four kinds (spec changes only,
// so our own status writes do not loop, and for keys and groups a change of
// their owner labels), Secrets (only when their set of data keys changes),
// Services (only when their set of ports changes) and the snapshot ConfigMap
// (to repair edits and deletion).
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	spec := builder.WithPredicates(predicate.GenerationChangedPredicate{})
	owned := spec
	if len(r.OwnerLabels) > 0 {
		owned = builder.WithPredicates(predicate.Or[client.Object](predicate.GenerationChangedPredicate{}, ownerLabelsChanged(r.OwnerLabels)))
	}
	secretKeysChanged := builder.WithPredicates(predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			o, ok1 := e.ObjectOld.(*corev1.Secret)
			n, ok2 := e.ObjectNew.(*corev1.Secret)
			return !ok1 || !ok2 || !slices.Equal(secretKeys(o), secretKeys(n))
		},
	})
	servicePortsChanged := builder.WithPredicates(predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			o, ok1 := e.ObjectOld.(*corev1.Service)
			n, ok2 := e.ObjectNew.(*corev1.Service)
			return !ok1 || !ok2 || !slices.Equal(servicePorts(o), servicePorts(n))
		},
	})
	b := ctrl.NewControllerManagedBy(mgr).
		Named("snapshot").
		WithOptions(controller.Options{MaxConcurrentReconciles: 1}).
		Watches(&v1alpha1.ProviderEndpoint{}, r.enqueueAll(true), spec).
		Watches(&v1alpha1.ModelAlias{}, r.enqueueAll(true), spec).
		Watches(&v1alpha1.GatewayKey{}, r.enqueueAll(true), owned).
		Watches(&v1alpha1.BudgetGroup{}, r.enqueueAll(true), owned).
		Watches(&corev1.Secret{}, r.enqueueAll(true), secretKeysChanged).
		Watches(&corev1.Service{}, r.enqueueAll(true), servicePortsChanged).
		Watches(&corev1.ConfigMap{}, r.enqueueAll(true), builder.OnlyMetadata, r.snapshotEvents())
	if g := r.Gateways; g != nil {
		// What the gateways run decides Programmed: their reports, and
		// which of their Pods exist and are ready.
		b = b.Watches(&corev1.Pod{}, r.enqueueAll(false), builder.WithPredicates(predicate.Funcs{UpdateFunc: podChanged})).
			WatchesRawSource(source.Kind(g.cache, client.Object(&corev1.ConfigMap{}), r.enqueueAll(false)))
	}
	return b.Complete(r)
}

// podChanged: only what newFleet looks at.
func podChanged(e event.UpdateEvent) bool {
	o, ok1 := e.ObjectOld.(*corev1.Pod)
	n, ok2 := e.ObjectNew.(*corev1.Pod)
	if !ok1 || !ok2 {
		return true
	}
	return podReady(o) != podReady(n) || !containersStarted(o).Equal(containersStarted(n)) ||
		(o.DeletionTimestamp == nil) != (n.DeletionTimestamp == nil) || o.Status.Phase != n.Status.Phase
}

// Reconcile compiles the namespace, publishes the snapshot if its version
// changed, and brings every object's status up to date.
func (r *Reconciler) Reconcile(ctx context.Context, _ reconcile.Request) (reconcile.Result, error) {
	if wait := r.settle(); wait > 0 {
		return reconcile.Result{RequeueAfter: wait}, nil
	}
	log := r.Log.WithValues("namespace", r.Namespace)
	if c := r.reusable(); c != nil {
		// Only what the gateways run changed (a report, a Pod): the last
		// compilation stands, and only Programmed can move. At 50,000
		// keys a compile per report doubled the work of every change.
		return r.statusesOnly(ctx, c)
	}
	t0 := time.Now()
	in, err := r.inputs(ctx)
	if err != nil {
		r.forceCompile()
		return reconcile.Result{}, err
	}
	t1 := time.Now()
	snap, st := Compile(in)
	compiles.Inc()
	// Compile may have patched the last compilation's statuses in place
	// (compileincr.go): that compilation is gone, whether or not this
	// round gets as far as recording st.
	r.forceCompile()
	// Where a change's time goes, on the publish line: since the burst's
	// first event (debounce and any round still running before this one),
	// listing, compiling.
	r.mu.Lock()
	if !r.burstStart.IsZero() {
		log = log.WithValues("sinceEventMs", t0.Sub(r.burstStart).Milliseconds())
	}
	r.mu.Unlock()
	log = log.WithValues("listMs", t1.Sub(t0).Milliseconds(), "compileMs", time.Since(t1).Milliseconds())
	var writeErr error
	if err := st.Invalid; err != nil {
		// Compile validates each object on its own, so this is a bug; the
		// gateways keep serving the previous snapshot.
		log.Error(err, "compiled snapshot is invalid; keeping the published one")
		writeErr = fmt.Errorf("the compiled snapshot is invalid (a controller bug): %w", err)
	} else if err := r.publish(ctx, log, &snap); err != nil {
		log.Error(err, "writing the snapshot failed; statuses say so, retrying")
		writeErr = err
	} else {
		r.pubs.published(snap.Version, st.digests())
	}
	// Statuses are written whatever happened to the snapshot: a new object
	// then says why it is not served rather than nothing at all.
	round := statusRound{writeErr: writeErr}
	if r.Gateways != nil {
		if round.fleet, err = r.Gateways.fleet(ctx); err != nil {
			return reconcile.Result{}, err
		}
	}
	if writeErr == nil {
		r.compiled = &compilation{st: st}
	}
	if err := r.updateStatuses(ctx, in, st, round); err != nil {
		return reconcile.Result{}, errors.Join(writeErr, err)
	}
	if writeErr != nil {
		return reconcile.Result{}, writeErr // retried with the work queue's backoff
	}
	return r.expiryRequeue(st), nil
}

// expiryRequeue comes back when a key's status changes with the time alone
// (it expires, its expiry warning starts, its previous key's grace ends):
// though no object changed.
func (r *Reconciler) expiryRequeue(st Statuses) reconcile.Result {
	var res reconcile.Result
	if st.NextExpiry != nil {
		res.RequeueAfter = st.NextExpiry.Sub(r.now()) + time.Second
	}
	return res
}

// compilation is what the last published compile decided.
type compilation struct {
	st Statuses
}

// reusable returns the last compilation when nothing Compile looks at has
// changed since (no input event, no key expired since), and clears the
// change flag for this round; nil means compile.
func (r *Reconciler) reusable() *compilation {
	r.mu.Lock()
	changed := r.inputsChanged
	r.inputsChanged = false
	r.mu.Unlock()
	c := r.compiled
	if changed || c == nil || (c.st.NextExpiry != nil && !r.now().Before(*c.st.NextExpiry)) {
		return nil
	}
	return c
}

// forceCompile makes the next round compile (its inputs could not be read,
// or its publish failed and must be retried).
func (r *Reconciler) forceCompile() {
	r.compiled = nil
}

// statusesOnly is a round for a change in the gateways alone: statuses from
// the last compilation, with the fleet as it is now, set on the objects as
// they are now (their statuses may have been written since; an object
// newer than the compilation is left to the one its event brings).
func (r *Reconciler) statusesOnly(ctx context.Context, c *compilation) (reconcile.Result, error) {
	in, err := r.inputs(ctx)
	if err != nil {
		return reconcile.Result{}, err
	}
	var round statusRound
	if r.Gateways != nil {
		if round.fleet, err = r.Gateways.fleet(ctx); err != nil {
			return reconcile.Result{}, err
		}
	}
	if err := r.updateStatuses(ctx, in, c.st, round); err != nil {
		return reconcile.Result{}, err
	}
	return r.expiryRequeue(c.st), nil
}

func (r *Reconciler) inputs(ctx context.Context) (Inputs, error) {
	if r.memo == nil {
		r.memo = NewCompileMemo()
	}
	in := Inputs{Namespace: r.Namespace, Now: r.now(), Limits: r.Limits, ExpiryWarning: r.ExpiryWarning, OwnerLabels: r.OwnerLabels,
		Secrets: map[string][]string{}, Services: map[string][]int32{}, Memo: r.memo}
	// No deep copy of 50,000 objects per reconcile: Compile and the status
	// pass only read them (the status pass copies what it changes).
	var sl corev1.SecretList
	var svl corev1.ServiceList
	for _, ns := range append([]string{r.Namespace}, r.WatchNamespaces...) {
		opts := []client.ListOption{client.InNamespace(ns), client.UnsafeDisableDeepCopy}
		var pl v1alpha1.ProviderEndpointList
		var al v1alpha1.ModelAliasList
		var kl v1alpha1.GatewayKeyList
		var gl v1alpha1.BudgetGroupList
		lists := []client.ObjectList{&pl, &al, &kl, &gl}
		if ns == r.Namespace {
			lists = append(lists, &sl, &svl)
		}
		for _, l := range lists {
			if err := r.Client.List(ctx, l, opts...); err != nil {
				return in, fmt.Errorf("listing %T in namespace %s: %w", l, ns, err)
			}
		}
		// Providers elsewhere are listed only to be told why they are not
		// compiled (NamespaceNotAllowed), never silently ignored.
		in.Providers, in.Aliases = appendAll(in.Providers, pl.Items), appendAll(in.Aliases, al.Items)
		in.Keys, in.Groups = appendAll(in.Keys, kl.Items), appendAll(in.Groups, gl.Items)
	}
	for i := range sl.Items {
		in.Secrets[sl.Items[i].Name] = secretKeys(&sl.Items[i])
	}
	for i := range svl.Items {
		in.Services[svl.Items[i].Name] = servicePorts(&svl.Items[i])
	}
	return in, nil
}

// appendAll is append that keeps the list's own slice when there is nothing
// to add to: the common single-namespace case copies no objects.
func appendAll[T any](to, items []T) []T {
	if len(to) == 0 {
		return items
	}
	return append(to, items...)
}
