package manifests

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// source is a pod that opens a connection: its namespace's labels and its own.
type source struct {
	name      string
	namespace map[string]string
	pod       map[string]string
}

func nsLabels(name string) map[string]string {
	return map[string]string{"kubernetes.io/metadata.name": name}
}

// admits evaluates one NetworkPolicy as the API defines it, for a TCP
// connection from src to port of a pod the policy selects (dst: the pod
// template, for named ports). ipBlock peers match no pod here: the chart
// renders none by default.
func admits(t *testing.T, np *networkingv1.NetworkPolicy, policyNamespace string, dst corev1.PodTemplateSpec, src source, port int32) bool {
	t.Helper()
	for _, r := range np.Spec.Ingress {
		if !portMatches(r.Ports, dst, port) {
			continue
		}
		if len(r.From) == 0 {
			return true
		}
		for _, p := range r.From {
			if peerMatches(t, p, policyNamespace, src) {
				return true
			}
		}
	}
	return false
}

func portMatches(ports []networkingv1.NetworkPolicyPort, dst corev1.PodTemplateSpec, port int32) bool {
	if len(ports) == 0 {
		return true
	}
	for _, p := range ports {
		if p.Protocol != nil && *p.Protocol != corev1.ProtocolTCP {
			continue
		}
		if p.Port == nil {
			return true
		}
		if p.Port.Type == intstr.Int {
			end := p.Port.IntVal
			if p.EndPort != nil {
				end = *p.EndPort
			}
			if port >= p.Port.IntVal && port <= end {
				return true
			}
			continue
		}
		for _, c := range dst.Spec.Containers {
			for _, cp := range c.Ports {
				if cp.Name == p.Port.StrVal && cp.ContainerPort == port {
					return true
				}
			}
		}
	}
	return false
}

func peerMatches(t *testing.T, p networkingv1.NetworkPolicyPeer, policyNamespace string, src source) bool {
	t.Helper()
	sel := func(ls *metav1.LabelSelector, set map[string]string) bool {
		s, err := metav1.LabelSelectorAsSelector(ls)
		if err != nil {
			t.Fatalf("selector %v: %v", ls, err)
		}
		return s.Matches(labels.Set(set))
	}
	switch {
	case p.IPBlock != nil:
		return false
	case p.NamespaceSelector == nil && p.PodSelector != nil:
		// A pod selector alone: pods of the policy's own namespace.
		return src.namespace["kubernetes.io/metadata.name"] == policyNamespace && sel(p.PodSelector, src.pod)
	case p.NamespaceSelector != nil && p.PodSelector == nil:
		return sel(p.NamespaceSelector, src.namespace)
	case p.NamespaceSelector != nil && p.PodSelector != nil:
		return sel(p.NamespaceSelector, src.namespace) && sel(p.PodSelector, src.pod)
	}
	t.Fatalf("empty NetworkPolicyPeer %+v", p)
	return false
}

// TestGatewayNetworkPolicy: in both installs the management port 9090 of
// the gateway pods admits the gateways themselves and pods of the namespace
// "monitoring" only; the data port 8080 stays open to everyone; egress is
// not restricted.
func TestGatewayNetworkPolicy(t *testing.T) {
	gatewayPod := map[string]string{"app.kubernetes.io/name": "llmgw", "app.kubernetes.io/component": "gateway"}
	sources := []struct {
		src        source
		mgmt, data bool
	}{
		{source{"a gateway (peer)", nsLabels(namespace), gatewayPod}, true, true},
		{source{"Prometheus in monitoring", nsLabels("monitoring"), map[string]string{"app.kubernetes.io/name": "prometheus"}}, true, true},
		{source{"the controller", nsLabels(namespace), map[string]string{"app.kubernetes.io/name": "llmgw", "app.kubernetes.io/component": "controller"}}, false, true},
		{source{"a mock provider", nsLabels(namespace), map[string]string{"app.kubernetes.io/name": "mock-alpha"}}, false, true},
		{source{"a client elsewhere", nsLabels("team-a"), map[string]string{"app": "client"}}, false, true},
		{source{"a gateway-labelled pod elsewhere", nsLabels("team-a"), gatewayPod}, false, true},
	}
	for _, in := range installs(t) {
		t.Run(in.Source, func(t *testing.T) {
			np := in.get(t, "NetworkPolicy", "llmgw-gateway").Obj.(*networkingv1.NetworkPolicy)
			sts := in.get(t, "StatefulSet", "llmgw-gateway").Obj.(*appsv1.StatefulSet)
			if !equalSelector(np.Spec.PodSelector, *sts.Spec.Selector) {
				t.Errorf("podSelector %v, want the gateway StatefulSet's %v", np.Spec.PodSelector, sts.Spec.Selector)
			}
			if len(np.Spec.PolicyTypes) != 1 || np.Spec.PolicyTypes[0] != networkingv1.PolicyTypeIngress || len(np.Spec.Egress) != 0 {
				t.Errorf("policyTypes %v egress %v, want Ingress only", np.Spec.PolicyTypes, np.Spec.Egress)
			}
			// The policy selects exactly the gateway pods.
			selected(t, in, "NetworkPolicy/llmgw-gateway", mustSelector(t, &np.Spec.PodSelector))
			tpl := sts.Spec.Template
			for _, s := range sources {
				if got := admits(t, np, namespace, tpl, s.src, 9090); got != s.mgmt {
					t.Errorf("%s -> 9090 (mgmt): admitted %v, want %v", s.src.name, got, s.mgmt)
				}
				if got := admits(t, np, namespace, tpl, s.src, 8080); got != s.data {
					t.Errorf("%s -> 8080 (data): admitted %v, want %v", s.src.name, got, s.data)
				}
				if admits(t, np, namespace, tpl, s.src, 9091) {
					t.Errorf("%s -> 9091: admitted, a port the gateways do not serve", s.src.name)
				}
			}
		})
	}
}

func TestHelmNetworkPolicyValues(t *testing.T) {
	if in := renderHelm(t, "--set", "gateway.networkPolicy.enabled=false"); len(in.ofKind("NetworkPolicy")) != 0 {
		t.Errorf("gateway.networkPolicy.enabled=false renders %v", in.ofKind("NetworkPolicy"))
	}
	// Only Prometheus's pods of the namespace "observability".
	in := renderHelm(t,
		"--set", "gateway.networkPolicy.mgmtFrom[0].namespaceSelector.matchLabels.kubernetes\\.io/metadata\\.name=observability",
		"--set", "gateway.networkPolicy.mgmtFrom[0].podSelector.matchLabels.app\\.kubernetes\\.io/name=prometheus")
	np := in.get(t, "NetworkPolicy", "llmgw-gateway").Obj.(*networkingv1.NetworkPolicy)
	tpl := in.get(t, "StatefulSet", "llmgw-gateway").Obj.(*appsv1.StatefulSet).Spec.Template
	prom := map[string]string{"app.kubernetes.io/name": "prometheus"}
	for _, tc := range []struct {
		src  source
		want bool
	}{
		{source{"Prometheus in observability", nsLabels("observability"), prom}, true},
		{source{"another pod in observability", nsLabels("observability"), map[string]string{"app": "grafana"}}, false},
		{source{"Prometheus in monitoring (no longer listed)", nsLabels("monitoring"), prom}, false},
		{source{"a gateway (peer)", nsLabels(namespace), tpl.Labels}, true},
	} {
		if got := admits(t, np, namespace, tpl, tc.src, 9090); got != tc.want {
			t.Errorf("%s -> 9090: admitted %v, want %v", tc.src.name, got, tc.want)
		}
		if !admits(t, np, namespace, tpl, tc.src, 8080) {
			t.Errorf("%s -> 8080: refused, the data port is open to all", tc.src.name)
		}
	}
	// An empty list: the gateways only.
	np = renderHelm(t, "--set", "gateway.networkPolicy.mgmtFrom=null").get(t, "NetworkPolicy", "llmgw-gateway").Obj.(*networkingv1.NetworkPolicy)
	if admits(t, np, namespace, tpl, source{"Prometheus in monitoring", nsLabels("monitoring"), prom}, 9090) ||
		!admits(t, np, namespace, tpl, source{"a gateway", nsLabels(namespace), tpl.Labels}, 9090) {
		t.Errorf("mgmtFrom empty: want the gateways only on 9090, got %+v", np.Spec.Ingress)
	}
}

func equalSelector(a, b metav1.LabelSelector) bool {
	return labels.Equals(a.MatchLabels, b.MatchLabels) && len(a.MatchExpressions) == 0 && len(b.MatchExpressions) == 0
}

func mustSelector(t *testing.T, ls *metav1.LabelSelector) labels.Selector {
	t.Helper()
	s, err := metav1.LabelSelectorAsSelector(ls)
	if err != nil {
		t.Fatal(err)
	}
	return s
}
