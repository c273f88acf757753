package controllers

import (
	"context"
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/llmgw/llmgw/api/v1alpha1"
)

// updateStatuses patches only the statuses that changed; a merge patch (not
// an update) so a stale cache never causes a conflict on spec.
func (r *Reconciler) updateStatuses(ctx context.Context, in Inputs, st Statuses) error {
	var errs []error
	count := map[[2]string]float64{}
	for i := range in.Providers {
		o := &in.Providers[i]
		res := st.Providers[o.Name]
		count[[2]string{"ProviderEndpoint", readyLabel(res.Ready)}]++
		orig := o.DeepCopy()
		setCommon(&o.Status.CommonStatus, o.Generation, res.Result)
		o.Status.BaseURL = res.BaseURL
		errs = append(errs, r.patchStatus(ctx, o, orig, &orig.Status, &o.Status))
	}
	for i := range in.Aliases {
		o := &in.Aliases[i]
		res := st.Aliases[o.Name]
		count[[2]string{"ModelAlias", readyLabel(res.Ready)}]++
		orig := o.DeepCopy()
		setCommon(&o.Status.CommonStatus, o.Generation, res.Result)
		o.Status.Alias, o.Status.Primary, o.Status.Fallback, o.Status.Routes = res.Alias, res.Primary, res.Fallback, res.Routes
		errs = append(errs, r.patchStatus(ctx, o, orig, &orig.Status, &o.Status))
	}
	for i := range in.Keys {
		o := &in.Keys[i]
		res := st.Keys[o.Name]
		count[[2]string{"GatewayKey", readyLabel(res.Ready)}]++
		orig := o.DeepCopy()
		setCommon(&o.Status.CommonStatus, o.Generation, res.Result)
		o.Status.Fingerprint = res.Fingerprint
		errs = append(errs, r.patchStatus(ctx, o, orig, &orig.Status, &o.Status))
	}
	objects.Reset()
	for k, v := range count {
		objects.WithLabelValues(k[0], k[1]).Set(v)
	}
	return errors.Join(errs...)
}

func (r *Reconciler) patchStatus(ctx context.Context, obj, orig client.Object, before, after any) error {
	if equality.Semantic.DeepEqual(before, after) {
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

func setCommon(s *v1alpha1.CommonStatus, generation int64, res Result) {
	status := metav1.ConditionFalse
	if res.Ready {
		status = metav1.ConditionTrue
	}
	s.ObservedGeneration = generation
	meta.SetStatusCondition(&s.Conditions, metav1.Condition{
		Type:               v1alpha1.ConditionReady,
		Status:             status,
		Reason:             res.Reason,
		Message:            truncate(res.Message, 32768),
		ObservedGeneration: generation,
	})
}

func readyLabel(ready bool) string {
	if ready {
		return "true"
	}
	return "false"
}

// truncate keeps condition messages within the API's 32768-byte limit.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n-3] + "..."
}
