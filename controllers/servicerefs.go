package controllers

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
)

// servicePorts lists a Service's port numbers, sorted and without
// duplicates (one number may be served over TCP and UDP): all Compile needs
// of a Service to resolve a ProviderEndpoint's spec.service, and what a
// Service update must change to recompile.
func servicePorts(s *corev1.Service) []int32 {
	ports := make([]int32, 0, len(s.Spec.Ports))
	for _, p := range s.Spec.Ports {
		ports = append(ports, p.Port)
	}
	slices.Sort(ports)
	return slices.Compact(ports)
}

// stripService keeps of a cached Service what servicePorts reads and what a
// cache needs to track it: selectors, cluster IPs, labels and annotations
// (kubectl's last-applied copy among them) are never read, and a namespace
// may hold many Services that are no provider.
func stripService(obj any) (any, error) {
	s, ok := obj.(*corev1.Service)
	if !ok {
		return obj, nil // a tombstone on delete: nothing to strip
	}
	out := &corev1.Service{
		TypeMeta:   s.TypeMeta,
		ObjectMeta: identityOnly(&s.ObjectMeta),
	}
	if len(s.Spec.Ports) > 0 {
		out.Spec.Ports = make([]corev1.ServicePort, len(s.Spec.Ports))
		for i, p := range s.Spec.Ports {
			out.Spec.Ports[i] = corev1.ServicePort{Name: p.Name, Protocol: p.Protocol, Port: p.Port}
		}
	}
	return out, nil
}
