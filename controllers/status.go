package controllers

import (
	"context"
	"errors"
	"fmt"
	"strings"

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
func (r *Reconciler) updateStatuses(ctx context.Context, in Inputs, st Statuses, round statusRound) error {
	p := &statusPass{r: r, ctx: ctx, round: round, count: map[[2]string]float64{}, seen: map[objectRef]bool{}}
	for i := range in.Providers {
		o := &in.Providers[i]
		res, orig := st.Providers[o.Name], o.DeepCopy()
		o.Status.BaseURL = res.BaseURL
		p.update(o, orig, "ProviderEndpoint", &o.Status.CommonStatus, res.Result, &orig.Status, &o.Status)
	}
	for i := range in.Aliases {
		o := &in.Aliases[i]
		res, orig := st.Aliases[o.Name], o.DeepCopy()
		o.Status.Alias, o.Status.Primary, o.Status.Fallback, o.Status.Routes = res.Alias, res.Primary, res.Fallback, res.Routes
		p.update(o, orig, "ModelAlias", &o.Status.CommonStatus, res.Result, &orig.Status, &o.Status)
	}
	for i := range in.Keys {
		o := &in.Keys[i]
		res, orig := st.Keys[o.Name], o.DeepCopy()
		o.Status.Fingerprint = res.Fingerprint
		p.update(o, orig, "GatewayKey", &o.Status.CommonStatus, res.Result, &orig.Status, &o.Status)
	}
	for i := range in.Groups {
		o := &in.Groups[i]
		res, orig := st.Groups[o.Name], o.DeepCopy()
		o.Status.Keys = res.Keys
		p.update(o, orig, "BudgetGroup", &o.Status.CommonStatus, res.Result, &orig.Status, &o.Status)
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
}

// update sets o's common conditions (its kind's own fields are set by the
// caller) and patches its status when it changed from orig's: before and
// after are the two statuses.
func (p *statusPass) update(o, orig client.Object, kind string, common *v1alpha1.CommonStatus, res Result, before, after any) {
	ref := objectRef{kind, o.GetName()}
	ready := p.r.setCommon(o, ref, common, res, p.round)
	p.count[[2]string{kind, ready}]++
	p.seen[ref] = true
	p.errs = append(p.errs, p.r.patchStatus(p.ctx, o, orig, before, after))
}

// patchStatus hands the status to the background writer (statuswriter.go)
// when there is one, as under a manager, so the reconcile never waits for
// status writes; without one (a bare Reconciler in tests) it patches here.
func (r *Reconciler) patchStatus(ctx context.Context, obj, orig client.Object, before, after any) error {
	unchanged := equality.Semantic.DeepEqual(before, after)
	if r.statuses != nil {
		r.statuses.enqueue(obj, orig, unchanged)
		return nil
	}
	if unchanged {
		return nil
	}
	err := r.Client.Status().Patch(ctx, obj, client.MergeFrom(orig), client.FieldOwner(FieldOwner))
	if apierrors.IsNotFound(err) {
		return nil // deleted meanwhile; its delete event brings another round
	}
	if err != nil {
		return fmt.Errorf("patching status of %T %s: %w", obj, obj.GetName(), err)
	}
	return nil
}

// setCommon writes the four conditions into s, records an Event for each
// transition, and returns the Ready status for the metrics.
// observedGeneration moves only when the round succeeded (the snapshot that
// carries this generation is written); the conditions describe the current
// generation either way, each saying so in its own observedGeneration.
func (r *Reconciler) setCommon(obj runtime.Object, ref objectRef, s *v1alpha1.CommonStatus, res Result, round statusRound) string {
	generation := obj.(metav1.Object).GetGeneration()
	conds := r.conditions(ref, res, round)
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
	if r.Recorder != nil {
		for _, e := range transitions(before, conds) {
			r.Recorder.Eventf(obj, nil, e.Type, e.Reason, eventAction, "%s", e.Note)
		}
	}
	return strings.ToLower(string(conds[3].Status))
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
}

// truncate keeps condition messages within the API's 32768-byte limit.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n-3] + "..."
}
