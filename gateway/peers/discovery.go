package peers

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-json-experiment/json"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// Annotations on a claim whose ledger was handed off when its replica was
// scaled away. HandedOffAnnotation names the replica that took the records;
// the others say when and how many, for operators.
const (
	HandedOffAnnotation        = "llmgw.dev/ledger-handed-off-to"
	HandedOffAtAnnotation      = "llmgw.dev/ledger-handed-off-at"
	HandedOffRecordsAnnotation = "llmgw.dev/ledger-handed-off-records"
)

// DiscoveryConfig says which StatefulSet and volume claims to follow.
type DiscoveryConfig struct {
	Client        kubernetes.Interface
	Namespace     string
	StatefulSet   string // e.g. llmgw-gateway
	ClaimTemplate string // e.g. data: claims are <ClaimTemplate>-<StatefulSet>-<ordinal>
	Logger        *slog.Logger
}

// Membership is the replica set as the API last described it.
type Membership struct {
	Known    bool     // false until the StatefulSet was read once
	Replicas int      // spec.replicas (nil → 1): the expected ordinals are 0..Replicas-1
	Ready    int      // status.readyReplicas
	Members  []string // pod names <sts>-0 … <sts>-(Replicas-1)
	Stranded []string // claims of ordinals >= Replicas not handed off, by ordinal
}

// Others are the members other than self.
func (m Membership) Others(self string) []string {
	var out []string
	for _, p := range m.Members {
		if p != self {
			out = append(out, p)
		}
	}
	return out
}

func (m Membership) clone() Membership {
	m.Members = slices.Clone(m.Members)
	m.Stranded = slices.Clone(m.Stranded)
	return m
}

// StaticMembership is the membership of a gateway that does not ask the
// cluster (standalone, or discovery turned off): ordinals 0..replicas-1 of
// self's StatefulSet, all counted ready. A self that is not
// <statefulset>-<ordinal> (a laptop's host name) is alone whatever replicas
// says: there is no name to derive siblings from.
func StaticMembership(self string, replicas int) Membership {
	if _, err := Ordinal(self); err != nil {
		return Membership{Known: true, Replicas: 1, Ready: 1, Members: []string{self}}
	}
	replicas = max(replicas, 1)
	sts := self[:strings.LastIndexByte(self, '-')]
	return Membership{Known: true, Replicas: replicas, Ready: replicas, Members: memberNames(sts, replicas)}
}

func memberNames(sts string, replicas int) []string {
	out := make([]string, replicas)
	for n := range out {
		out[n] = sts + "-" + strconv.Itoa(n)
	}
	return out
}

// ClaimName is the claim the StatefulSet controller creates for pod from the
// volumeClaimTemplate named template: ClaimName("data", "llmgw-gateway-2") is
// "data-llmgw-gateway-2".
func ClaimName(template, pod string) string { return template + "-" + pod }

// Ordinal is the ordinal of a StatefulSet pod name <statefulset>-<ordinal>.
func Ordinal(pod string) (int, error) {
	i := strings.LastIndexByte(pod, '-')
	if i <= 0 {
		return 0, fmt.Errorf("peers: pod name %q is not <statefulset>-<ordinal>", pod)
	}
	n, err := parseOrdinal(pod[i+1:])
	if err != nil {
		return 0, fmt.Errorf("peers: pod name %q is not <statefulset>-<ordinal>: %w", pod, err)
	}
	return n, nil
}

// ClaimOrdinal is the ordinal of claim if it is one of statefulSet's claims
// from template (<template>-<statefulSet>-<ordinal>), and an error for any
// other claim. Only the name is looked at: claims are not assumed to carry
// labels.
func ClaimOrdinal(template, statefulSet, claim string) (int, error) {
	rest, ok := strings.CutPrefix(claim, template+"-"+statefulSet+"-")
	if !ok {
		return 0, fmt.Errorf("peers: claim %q is not %s-%s-<ordinal>", claim, template, statefulSet)
	}
	n, err := parseOrdinal(rest)
	if err != nil {
		return 0, fmt.Errorf("peers: claim %q is not %s-%s-<ordinal>: %w", claim, template, statefulSet, err)
	}
	return n, nil
}

// parseOrdinal accepts the decimal form the StatefulSet controller writes
// and nothing else: no sign, no leading zero, so that "x-01" is not taken
// for the claim of ordinal 1.
func parseOrdinal(s string) (int, error) {
	n, err := strconv.Atoi(s)
	if err != nil {
		return 0, fmt.Errorf("ordinal %q: %w", s, err)
	}
	if n < 0 || strconv.Itoa(n) != s {
		return 0, fmt.Errorf("ordinal %q is not in canonical decimal form", s)
	}
	return n, nil
}

// Discovery follows the gateway StatefulSet and its volumes through the API
// instead of a --replicas flag kept equal to spec.replicas by hand, so that
// `kubectl scale` and an autoscaler change the peer set within seconds.
//
// It needs exactly this RBAC in its namespace: statefulsets get, list and
// watch restricted to the one name (the list and watch carry the field
// selector metadata.name=<name>, which resourceNames authorize), and
// persistentvolumeclaims list, watch and patch. No pods, no endpoints, nothing
// cluster-scoped: membership is the StatefulSet's spec (the ordinals that
// should exist), not which pods happen to be up; a missing peer is reported
// missing by the caller, as before.
//
// A volume of an ordinal at or above spec.replicas belongs to a replica that
// was scaled away. Its records are still on it (the StatefulSet controller
// keeps the claim by default); unless the departing replica handed them to
// one that stays and said so on the claim (HandedOffAnnotation), the volume is
// "stranded" and Membership reports it, so that an answer can say records may
// be missing and an operator can act.
type Discovery struct {
	cfg       DiscoveryConfig
	log       *slog.Logger
	now       func() time.Time
	stsStore  cache.Store
	pvcStore  cache.Store
	stsInf    cache.Controller
	pvcInf    cache.Controller
	started   atomic.Bool
	synced    atomic.Bool
	current   atomic.Pointer[Membership]
	mu        sync.Mutex // serializes refresh: the two informers call it from their own goroutines
	gone      bool       // the StatefulSet was known and then deleted (under mu)
	warnStart bool       // a non-zero spec.ordinals.start was reported (under mu)
}

// NewDiscovery checks cfg and prepares the watches; Start runs them.
func NewDiscovery(cfg DiscoveryConfig) (*Discovery, error) {
	switch {
	case cfg.Client == nil:
		return nil, errors.New("peers: discovery needs a Kubernetes client")
	case cfg.Namespace == "":
		return nil, errors.New("peers: discovery needs the namespace")
	case cfg.StatefulSet == "":
		return nil, errors.New("peers: discovery needs the StatefulSet name")
	case cfg.ClaimTemplate == "":
		return nil, errors.New("peers: discovery needs the volumeClaimTemplate name")
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	d := &Discovery{cfg: cfg, log: log.With("statefulset", cfg.StatefulSet), now: time.Now}
	refresh := cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { d.refresh() },
		UpdateFunc: func(any, any) { d.refresh() },
		DeleteFunc: func(any) { d.refresh() },
	}

	// The StatefulSet by name only: the field selector is what lets RBAC
	// resourceNames authorize the list and the watch.
	byName := fields.OneTermEqualSelector("metadata.name", cfg.StatefulSet).String()
	sts := cfg.Client.AppsV1().StatefulSets(cfg.Namespace)
	stsLW := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.FieldSelector = byName
			return sts.List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.FieldSelector = byName
			return sts.Watch(ctx, o)
		},
	}
	d.stsStore, d.stsInf = cache.NewInformerWithOptions(cache.InformerOptions{
		ListerWatcher: cache.ToListWatcherWithWatchListSemantics(stsLW, cfg.Client),
		ObjectType:    &appsv1.StatefulSet{},
		Handler:       refresh,
	})

	// Every claim of the namespace: the names are filtered in refresh, as
	// the claims' labels are the StatefulSet's selector, which may change
	// and is not ours to assume.
	pvc := cfg.Client.CoreV1().PersistentVolumeClaims(cfg.Namespace)
	pvcLW := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return pvc.List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			return pvc.Watch(ctx, o)
		},
	}
	d.pvcStore, d.pvcInf = cache.NewInformerWithOptions(cache.InformerOptions{
		ListerWatcher: cache.ToListWatcherWithWatchListSemantics(pvcLW, cfg.Client),
		ObjectType:    &corev1.PersistentVolumeClaim{},
		Handler:       refresh,
	})
	return d, nil
}

// Start runs the watches until ctx ends and returns once both caches have
// synced, or with an error when ctx ends first or the API refuses the
// reads (missing RBAC: better said at once than retried silently until a
// deadline). It may be called once.
func (d *Discovery) Start(ctx context.Context) error {
	if !d.started.CompareAndSwap(false, true) {
		return errors.New("peers: discovery already started")
	}
	if err := d.probe(ctx); err != nil {
		return err
	}
	go d.stsInf.RunWithContext(ctx)
	go d.pvcInf.RunWithContext(ctx)
	if !cache.WaitForCacheSync(ctx.Done(), d.stsInf.HasSynced, d.pvcInf.HasSynced) {
		return fmt.Errorf("peers: watching StatefulSet %s/%s and its claims: %w",
			d.cfg.Namespace, d.cfg.StatefulSet, context.Cause(ctx))
	}
	// Events seen before the sync were not turned into a membership (half a
	// picture: claims without the StatefulSet would all look stranded); the
	// stores hold all of them now.
	d.synced.Store(true)
	d.refresh()
	return nil
}

// probe makes one read of each kind, so that a refusal (RBAC, credentials)
// is an error from Start rather than a reflector retrying in the background.
// Other failures (the API briefly unreachable) are left to the informers.
func (d *Discovery) probe(ctx context.Context) error {
	_, err := d.cfg.Client.AppsV1().StatefulSets(d.cfg.Namespace).Get(ctx, d.cfg.StatefulSet, metav1.GetOptions{})
	if refused(err) {
		return fmt.Errorf("peers: reading StatefulSet %s/%s: %w", d.cfg.Namespace, d.cfg.StatefulSet, err)
	}
	_, err = d.cfg.Client.CoreV1().PersistentVolumeClaims(d.cfg.Namespace).List(ctx, metav1.ListOptions{Limit: 1})
	if refused(err) {
		return fmt.Errorf("peers: listing PersistentVolumeClaims in %s: %w", d.cfg.Namespace, err)
	}
	return nil
}

func refused(err error) bool {
	return apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err)
}

// Membership is the membership from the watch caches as of the last event:
// one atomic load and a copy of two short slices.
func (d *Discovery) Membership() Membership {
	m := d.current.Load()
	if m == nil {
		return Membership{}
	}
	return m.clone()
}

// Replicas reads spec.replicas from the API now (nil → 1). At SIGTERM the
// cache may not have seen a scale-down yet, and whether this replica is
// going away decides whether it hands its records off.
func (d *Discovery) Replicas(ctx context.Context) (int, error) {
	s, err := d.cfg.Client.AppsV1().StatefulSets(d.cfg.Namespace).Get(ctx, d.cfg.StatefulSet, metav1.GetOptions{})
	if err != nil {
		return 0, fmt.Errorf("peers: reading StatefulSet %s/%s: %w", d.cfg.Namespace, d.cfg.StatefulSet, err)
	}
	return specReplicas(s), nil
}

func specReplicas(s *appsv1.StatefulSet) int {
	if s.Spec.Replicas == nil {
		return 1
	}
	return max(int(*s.Spec.Replicas), 0) // the API rejects < 0; a hand-made fake might not
}

// MarkHandedOff records on claim that its ledger's records were handed to
// the replica to: the claim is no longer stranded.
func (d *Discovery) MarkHandedOff(ctx context.Context, claim, to string, records int) error {
	if _, err := ClaimOrdinal(d.cfg.ClaimTemplate, d.cfg.StatefulSet, claim); err != nil {
		return err
	}
	if to == "" {
		return errors.New("peers: a hand-off needs the receiving replica")
	}
	if records < 0 {
		return fmt.Errorf("peers: hand-off of %d records", records)
	}
	return d.patchAnnotations(ctx, claim, map[string]*string{
		HandedOffAnnotation:        &to,
		HandedOffAtAnnotation:      new(d.now().UTC().Format(time.RFC3339)),
		HandedOffRecordsAnnotation: new(strconv.Itoa(records)),
	})
}

// ClearHandedOff removes the hand-off annotations from claim: a replica that
// comes back on its volume writes records there again. A claim without them,
// or no claim at all, is not an error.
func (d *Discovery) ClearHandedOff(ctx context.Context, claim string) error {
	if _, err := ClaimOrdinal(d.cfg.ClaimTemplate, d.cfg.StatefulSet, claim); err != nil {
		return err
	}
	// A JSON merge patch deletes a key set to null, and deleting an absent
	// key is a no-op, so no read is needed first.
	err := d.patchAnnotations(ctx, claim, map[string]*string{
		HandedOffAnnotation:        nil,
		HandedOffAtAnnotation:      nil,
		HandedOffRecordsAnnotation: nil,
	})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

func (d *Discovery) patchAnnotations(ctx context.Context, claim string, ann map[string]*string) error {
	type meta struct {
		Annotations map[string]*string `json:"annotations"`
	}
	body, err := json.Marshal(struct {
		Metadata meta `json:"metadata"`
	}{meta{ann}})
	if err != nil {
		return fmt.Errorf("peers: hand-off patch: %w", err)
	}
	_, err = d.cfg.Client.CoreV1().PersistentVolumeClaims(d.cfg.Namespace).
		Patch(ctx, claim, types.MergePatchType, body, metav1.PatchOptions{})
	if err != nil {
		return fmt.Errorf("peers: annotating claim %s/%s: %w", d.cfg.Namespace, claim, err)
	}
	return nil
}

// refresh recomputes the membership from both stores and logs what changed.
func (d *Discovery) refresh() {
	if !d.synced.Load() {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	prev := d.current.Load()
	if prev == nil {
		prev = &Membership{}
	}
	next := d.compute(prev)
	d.logChanges(prev, next)
	d.current.Store(next)
}

// compute is called under mu.
func (d *Discovery) compute(prev *Membership) *Membership {
	obj, ok, _ := d.stsStore.GetByKey(d.cfg.Namespace + "/" + d.cfg.StatefulSet)
	s, _ := obj.(*appsv1.StatefulSet)
	var next Membership
	switch {
	case ok && s != nil:
		if d.gone {
			d.gone = false
			d.log.Info("gateway StatefulSet is back")
		}
		if st := s.Spec.Ordinals; st != nil && st.Start != 0 && !d.warnStart {
			d.warnStart = true
			d.log.Warn("StatefulSet spec.ordinals.start is not 0; peers are still taken as ordinals 0..replicas-1",
				"start", st.Start)
		}
		next = Membership{Known: true, Replicas: specReplicas(s), Ready: int(s.Status.ReadyReplicas)}
		next.Members = memberNames(d.cfg.StatefulSet, next.Replicas)
	case prev.Known:
		// Deleted, possibly with --cascade=orphan to be recreated: its pods
		// may still run, so the last membership stands until it is back.
		if !d.gone {
			d.gone = true
			d.log.Warn("gateway StatefulSet was deleted; keeping the last known membership",
				"replicas", prev.Replicas)
		}
		next = Membership{Known: true, Replicas: prev.Replicas, Ready: prev.Ready, Members: prev.Members}
	default:
		// Without the replica count every claim would look stranded.
		return &next
	}

	type claim struct {
		ordinal int
		name    string
	}
	var stranded []claim
	for _, o := range d.pvcStore.List() {
		pvc, ok := o.(*corev1.PersistentVolumeClaim)
		if !ok {
			continue
		}
		n, err := ClaimOrdinal(d.cfg.ClaimTemplate, d.cfg.StatefulSet, pvc.Name)
		if err != nil || n < next.Replicas || pvc.Annotations[HandedOffAnnotation] != "" {
			continue
		}
		stranded = append(stranded, claim{n, pvc.Name})
	}
	slices.SortFunc(stranded, func(a, b claim) int { return cmp.Compare(a.ordinal, b.ordinal) })
	for _, c := range stranded {
		next.Stranded = append(next.Stranded, c.name)
	}
	return &next
}

// logChanges logs each change once, when the events bring it.
func (d *Discovery) logChanges(prev, next *Membership) {
	switch {
	case !prev.Known && next.Known:
		d.log.Info("gateway replicas discovered", "replicas", next.Replicas, "ready", next.Ready)
	case prev.Known && prev.Replicas != next.Replicas:
		d.log.Info("gateway replicas changed", "from", prev.Replicas, "to", next.Replicas)
	}
	if prev.Known && next.Known && prev.Ready != next.Ready {
		// Ready moves with every rollout and restart: debug only.
		d.log.Debug("gateway ready replicas changed", "from", prev.Ready, "to", next.Ready)
	}
	for _, c := range next.Stranded {
		if !slices.Contains(prev.Stranded, c) {
			d.log.Warn("stranded ledger: a removed replica's volume holds records no replica serves (until its hand-off completes, or an import takes them)",
				"claim", c, "namespace", d.cfg.Namespace)
		}
	}
	for _, c := range prev.Stranded {
		if !slices.Contains(next.Stranded, c) {
			d.log.Info("stranded ledger cleared", "claim", c, "reason", d.clearedBecause(c, next))
		}
	}
}

// clearedBecause says why claim c is no longer stranded, for the log.
func (d *Discovery) clearedBecause(c string, next *Membership) string {
	if n, err := ClaimOrdinal(d.cfg.ClaimTemplate, d.cfg.StatefulSet, c); err == nil && n < next.Replicas {
		return "its replica is back"
	}
	if _, ok, _ := d.pvcStore.GetByKey(d.cfg.Namespace + "/" + c); !ok {
		return "the claim was deleted"
	}
	return "handed off"
}
