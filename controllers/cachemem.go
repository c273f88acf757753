package controllers

import (
	"k8s.io/apimachinery/pkg/api/meta"
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
