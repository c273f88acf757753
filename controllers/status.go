package controllers

import (
	"context"
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/llmgw/llmgw/api/v1alpha1"
)

// statusRound is everything one round of status writing needs besides the
// objects: what the gateways run, and why the last snapshot write failed.
type statusRound struct {
	fleet    fleet
	writeErr error
}

// updateStatuses brings every object's status up to date — also when the
// snapshot write failed, so that a new object never sits there without any
// condition — and patches only the statuses that changed; a merge patch (not
// an update) so a stale cache never causes a conflict on spec.
//
// The objects in `in` are the cache's own (listed without a deep copy): they
// are read, never written; an object whose status must change is copied.
func (r *Reconciler) updateStatuses(ctx context.Context, in Inputs, st Statuses, round statusRound) error {
	p := &statusPass{r: r, ctx: ctx, round: round, count: map[[2]string]float64{}, seen: map[objectRef]bool{},
		events: eventBudget{recorder: r.Recorder, normal: maxNormalEventsPerRound}}
	if r.verified == nil {
		r.verified = map[objectRef]wantedStatus{}
	}
	for i := range in.Providers {
		orig := &in.Providers[i]
		id := objectID(r.Namespace, orig)
		res := st.Providers[id]
		if o := p.wants(orig, "ProviderEndpoint", id, res.Result, res.BaseURL); o != nil {
			o := o.(*v1alpha1.ProviderEndpoint)
			o.Status.BaseURL = res.BaseURL
			p.update(o, orig, &o.Status.CommonStatus, &orig.Status, &o.Status, nil)
		}
	}
	for i := range in.Aliases {
		orig := &in.Aliases[i]
		id := objectID(r.Namespace, orig)
		res := st.Aliases[id]
		if o := p.wants(orig, "ModelAlias", id, res.Result, aliasFields(res)); o != nil {
			o := o.(*v1alpha1.ModelAlias)
			o.Status.Alias, o.Status.Primary, o.Status.Fallback, o.Status.Routes = res.Alias, res.Primary, res.Fallback, res.Routes
			p.update(o, orig, &o.Status.CommonStatus, &orig.Status, &o.Status, nil)
		}
	}
	var keys keyCounts
	for i := range in.Keys {
		orig := &in.Keys[i]
		id := objectID(r.Namespace, orig)
		res := st.Keys[id]
		keys.add(&res)
		if o := p.wants(orig, "GatewayKey", id, res.Result, keyFieldsOf(&res)); o != nil {
			o := o.(*v1alpha1.GatewayKey)
			o.Status.Fingerprint = res.Fingerprint
			o.Status.Rotation = res.Rotation.DeepCopy()
			// A copy for the closure: res itself must not escape, for
			// each of 50,000 keys, when only a few statuses change.
			changed := res
			p.update(o, orig, &o.Status.CommonStatus, &orig.Status, &o.Status, func() { p.keyLifecycle(o, &orig.Status, &changed) })
		}
	}
	keys.publish()
	for i := range in.Groups {
		orig := &in.Groups[i]
		id := objectID(r.Namespace, orig)
		res := st.Groups[id]
		if o := p.wants(orig, "BudgetGroup", id, res.Result, res.Keys); o != nil {
			o := o.(*v1alpha1.BudgetGroup)
			o.Status.Keys = res.Keys
			p.update(o, orig, &o.Status.CommonStatus, &orig.Status, &o.Status, nil)
		}
	}
	if p.events.suppressed != nil {
		p.events.summarize(r.snapshotObject(ctx))
	}
	r.forgetConditions(p.seen)
	objects.Reset()
	for k, v := range p.count {
		objects.WithLabelValues(k[0], k[1]).Set(v)
	}
	return errors.Join(p.errs...)
}

// statusPass is one round of updateStatuses: what every object's status
// goes through whatever its kind.
type statusPass struct {
	r     *Reconciler
	ctx   context.Context
	round statusRound
	count map[[2]string]float64 // kind, ready → objects
	seen  map[objectRef]bool
	errs  []error
	// The object wants decided on, for update.
	ref    objectRef
	res    Result
	conds  []metav1.Condition
	want   wantedStatus
	events eventBudget
}

// wants decides obj's conditions and returns a copy of obj to set its
// status on, or nil when the status is the one already verified in place
// for this very resourceVersion (wantedStatus): at 50,000 objects, copying
// and comparing every status on every reconcile was most of its time.
// id is obj's objectID; extra is the kind's own status fields (comparable).
func (p *statusPass) wants(obj client.Object, kind, id string, res Result, extra any) client.Object {
	ref := objectRef{kind, id}
	p.seen[ref] = true
	if !res.describes(obj) {
		// Listed after the compilation it would need (statusesOnly): its
		// own event brings that compilation, and its status with it.
		return nil
	}
	conds := p.r.conditions(ref, res, p.round)
	w := wantedStatus{resourceVersion: obj.GetResourceVersion(), generation: obj.GetGeneration(),
		observed: p.round.writeErr == nil, extra: extra}
	for i, c := range conds {
		w.conds[i] = condKey{c.Status, c.Reason, c.Message}
	}
	p.count[[2]string{kind, strings.ToLower(string(conds[3].Status))}]++
	if v, ok := p.r.verified[ref]; ok && v == w {
		return nil
	}
	p.ref, p.res, p.conds, p.want = ref, res, conds, w
	return obj.DeepCopyObject().(client.Object)
}

// update sets o's common conditions (its kind's own fields are set by the
// caller, and then its own conditions by more, when not nil) and patches
// its status when it changed from orig's: before and after are the two
// statuses.
func (p *statusPass) update(o, orig client.Object, common *v1alpha1.CommonStatus, before, after any, more func()) {
	p.r.setCommon(o, p.ref, common, p.conds, p.round, &p.events)
	if more != nil {
		more()
	}
	handed, err := p.r.patchStatus(p.ctx, o, orig, before, after)
	p.errs = append(p.errs, err)
	if handed || err != nil {
		// Not verified until the cache shows the written status.
		delete(p.r.verified, p.ref)
		return
	}
	p.r.verified[p.ref] = p.want
}

// wantedStatus is what a status pass decided for an object, and the
// resourceVersion whose status was found equal to it with nothing left to
// write: the same decision for the same resourceVersion needs no second
// look. Any write to the object (ours included) changes its
// resourceVersion, so a status edited by hand, or a patch the writer gave
// up on, is looked at again.
type wantedStatus struct {
	resourceVersion string
	generation      int64
	observed        bool
	conds           [4]condKey
	extra           any
}

// aliasFields is a ModelAlias's own status fields in comparable form.
func aliasFields(res AliasResult) string {
	var b strings.Builder
	for _, f := range []string{res.Alias, res.Primary, res.Fallback} {
		b.WriteString(f)
		b.WriteByte(0)
	}
	for _, rt := range res.Routes {
		for _, f := range []string{rt.Provider, rt.Model, rt.BaseURL} {
			b.WriteString(f)
			b.WriteByte(0)
		}
	}
	return b.String()
}

type condKey struct {
	status         metav1.ConditionStatus
	reason, detail string
}

// patchStatus hands the status to the background writer (statuswriter.go)
// when there is one, as under a manager, so the reconcile never waits for
// status writes; without one (a bare Reconciler in tests) it patches here.
// handed says a write is under way (or was made).
func (r *Reconciler) patchStatus(ctx context.Context, obj, orig client.Object, before, after any) (handed bool, err error) {
	unchanged := equality.Semantic.DeepEqual(before, after)
	if r.statuses != nil {
		return r.statuses.enqueue(obj, orig, unchanged), nil
	}
	if unchanged {
		return false, nil
	}
	err = r.Client.Status().Patch(ctx, obj, client.MergeFrom(orig), client.FieldOwner(FieldOwner))
	if apierrors.IsNotFound(err) {
		return true, nil // deleted meanwhile; its delete event brings another round
	}
	if err != nil {
		return true, fmt.Errorf("patching status of %T %s: %w", obj, obj.GetName(), err)
	}
	return true, nil
}

// setCommon writes the four conditions into s and records an Event for
// each transition.
// observedGeneration moves only when the round succeeded (the snapshot that
// carries this generation is written); the conditions describe the current
// generation either way, each saying so in its own observedGeneration.
func (r *Reconciler) setCommon(obj runtime.Object, ref objectRef, s *v1alpha1.CommonStatus, conds []metav1.Condition, round statusRound, events *eventBudget) {
	generation := obj.(metav1.Object).GetGeneration()
	before := r.lastConditions(ref, s.Conditions)
	for _, c := range conds {
		c.ObservedGeneration = generation
		c.Message = truncate(c.Message, 32768)
		meta.SetStatusCondition(&s.Conditions, c)
	}
	if round.writeErr == nil {
		s.ObservedGeneration = generation
	}
	r.rememberConditions(ref, conds)
	for _, e := range transitions(before, conds) {
		events.record(obj, ref.Kind, e)
	}
}

// conditions are the object's four conditions, in conditionOrder.
func (r *Reconciler) conditions(ref objectRef, res Result, round statusRound) []metav1.Condition {
	prog := programmedCondition(res, r.pubs.since(ref, res.Digest), round.writeErr, round.fleet, r.pubs.seqOf)
	return []metav1.Condition{
		fromCompile(v1alpha1.ConditionAccepted, res.Accepted),
		fromCompile(v1alpha1.ConditionResolvedRefs, res.ResolvedRefs),
		prog,
		readyCondition(res, prog),
	}
}

func fromCompile(typ string, c Condition) metav1.Condition {
	status := metav1.ConditionFalse
	if c.Status {
		status = metav1.ConditionTrue
	}
	return metav1.Condition{Type: typ, Status: status, Reason: c.Reason, Message: c.Message}
}

// lastConditions is what the controller last decided for ref, or, after a
// restart, what the object's status says. Remembering it rather than
// trusting the cache keeps a status write the cache has not seen yet from
// producing its Events twice.
func (r *Reconciler) lastConditions(ref objectRef, conds []metav1.Condition) condSet {
	r.mu.Lock()
	defer r.mu.Unlock()
	if s, ok := r.decided[ref]; ok {
		return s
	}
	return stateOf(conds)
}

func (r *Reconciler) rememberConditions(ref objectRef, conds []metav1.Condition) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.decided == nil {
		r.decided = map[objectRef]condSet{}
	}
	r.decided[ref] = stateOf(conds)
}

// forgetConditions drops the memory of objects that are gone.
func (r *Reconciler) forgetConditions(seen map[objectRef]bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for ref := range r.decided {
		if !seen[ref] {
			delete(r.decided, ref)
		}
	}
	for ref := range r.verified {
		if !seen[ref] {
			delete(r.verified, ref)
		}
	}
	for ref := range r.keyStates {
		if !seen[ref] {
			delete(r.keyStates, ref)
		}
	}
}

// truncate keeps condition messages within the API's 32768-byte limit.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n-3] + "..."
}

// snapshotObject is the snapshot's head ConfigMap as read now (nil when it
// cannot be read): where Events about the namespace as a whole go.
func (r *Reconciler) snapshotObject(ctx context.Context) runtime.Object {
	if r.APIReader == nil {
		return nil
	}
	var cm corev1.ConfigMap
	if err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: r.Namespace, Name: r.ConfigMapName}, &cm); err != nil {
		return nil
	}
	return &cm
}
