package controllers

import (
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// lastApplied is the annotation client-side `kubectl apply` leaves on every
// object: a second copy of the whole spec.
const lastApplied = "kubectl.kubernetes.io/last-applied-configuration"

// trimForCache drops what the controller never reads from every object it
// caches: managedFields and kubectl's last-applied annotation. At 50,000
// GatewayKeys they are most of each cached object's size.
func trimForCache(obj any) (any, error) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return obj, nil // a tombstone on delete
	}
	m.SetManagedFields(nil)
	if a := m.GetAnnotations(); a != nil {
		if _, ok := a[lastApplied]; ok {
			delete(a, lastApplied)
			m.SetAnnotations(a)
		}
	}
	return obj, nil
}

// identityOnly is the part of an object's metadata a cache needs to track
// it (name, UID, resourceVersion, creation and deletion): what the
// transforms that strip Secrets and Services to what Compile reads keep.
func identityOnly(m *metav1.ObjectMeta) metav1.ObjectMeta {
	return metav1.ObjectMeta{
		Name: m.Name, Namespace: m.Namespace, UID: m.UID,
		ResourceVersion: m.ResourceVersion, CreationTimestamp: m.CreationTimestamp,
		DeletionTimestamp: m.DeletionTimestamp,
	}
}
