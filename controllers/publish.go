package controllers

import (
	"context"
	"fmt"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/llmgw/llmgw/api/snapshot"
)

func (r *Reconciler) publish(ctx context.Context, log logr.Logger, version string, body []byte) error {
	want := map[string]string{snapshot.ConfigMapKey: string(body)}
	var cm corev1.ConfigMap
	err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: r.Namespace, Name: r.ConfigMapName}, &cm)
	switch {
	case apierrors.IsNotFound(err):
		cm = corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: r.Namespace, Name: r.ConfigMapName}}
		r.label(&cm, version)
		cm.Data = want
		if err := r.Client.Create(ctx, &cm, client.FieldOwner(FieldOwner)); err != nil {
			return fmt.Errorf("creating ConfigMap %s: %w", r.ConfigMapName, err)
		}
	case err != nil:
		return fmt.Errorf("reading ConfigMap %s: %w", r.ConfigMapName, err)
	default:
		before := cm.DeepCopy()
		r.label(&cm, version)
		cm.Data, cm.BinaryData = want, nil
		if equality.Semantic.DeepEqual(before, &cm) {
			return nil
		}
		if err := r.Client.Update(ctx, &cm, client.FieldOwner(FieldOwner)); err != nil {
			return fmt.Errorf("updating ConfigMap %s: %w", r.ConfigMapName, err)
		}
	}
	r.mu.Lock()
	r.writes++
	r.mu.Unlock()
	snapshotWrites.Inc()
	log.Info("published snapshot", "configMap", r.ConfigMapName, "version", version, "bytes", len(body))
	return nil
}

func (r *Reconciler) label(cm *corev1.ConfigMap, version string) {
	if cm.Labels == nil {
		cm.Labels = map[string]string{}
	}
	cm.Labels[ManagedByLabel] = ManagedByValue
	cm.Labels[ComponentLabel] = ComponentValue
	if cm.Annotations == nil {
		cm.Annotations = map[string]string{}
	}
	cm.Annotations[VersionAnnotation] = version
}
