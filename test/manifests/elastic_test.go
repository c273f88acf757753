package manifests

// Elastic gateways: the gateways find their peer set in their StatefulSet
// (no --replicas), a replica scaled away hands its records off before it
// exits, and the chart can hand spec.replicas to a HorizontalPodAutoscaler.

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// checkElasticGateway: the gateway StatefulSet of either install names
// itself and its claim template to the gateway, repeats no replica count,
// keeps its claims, and gives a replica scaled away the time to drain and
// hand its records off before SIGKILL.
func checkElasticGateway(t *testing.T, sts *appsv1.StatefulSet) {
	t.Helper()
	spec := sts.Spec.Template.Spec
	args := spec.Containers[0].Args
	if v, ok := flagValue(args, "replicas"); ok {
		t.Errorf("--replicas=%s: the gateways find the peer set in the StatefulSet, no flag repeats it", v)
	}
	if v, _ := flagValue(args, "statefulset"); v != sts.Name {
		t.Errorf("--statefulset=%q, want the gateways' own StatefulSet %q; args %v", v, sts.Name, args)
	}
	if len(sts.Spec.VolumeClaimTemplates) == 1 {
		if v, _ := flagValue(args, "ledger-claim-template"); v != sts.Spec.VolumeClaimTemplates[0].Name || v != "data" {
			t.Errorf("--ledger-claim-template=%q, want the volumeClaimTemplate's name %q (data)", v, sts.Spec.VolumeClaimTemplates[0].Name)
		}
	}
	if p := sts.Spec.PersistentVolumeClaimRetentionPolicy; p == nil ||
		p.WhenDeleted != appsv1.RetainPersistentVolumeClaimRetentionPolicyType || p.WhenScaled != appsv1.RetainPersistentVolumeClaimRetentionPolicyType {
		t.Errorf("persistentVolumeClaimRetentionPolicy %+v, want Retain when deleted and when scaled (a ledger not yet handed off)", p)
	}
	duration := func(flag string) time.Duration {
		t.Helper()
		v, ok := flagValue(args, flag)
		d, err := time.ParseDuration(v)
		if !ok || err != nil || d <= 0 {
			t.Errorf("--%s=%q (set: %v, %v): want a positive duration", flag, v, ok, err)
		}
		return d
	}
	drain, handoff := duration("drain-timeout"), duration("handoff-timeout")
	if g := spec.TerminationGracePeriodSeconds; g == nil || time.Duration(*g)*time.Second <= drain+handoff {
		t.Errorf("terminationGracePeriodSeconds %s, want more than --drain-timeout %s + --handoff-timeout %s", deref(g), drain, handoff)
	}
}

// TestGatewayElasticDefaults: the values the two installs ship with.
func TestGatewayElasticDefaults(t *testing.T) {
	for _, in := range installs(t) {
		t.Run(in.Source, func(t *testing.T) {
			if hpa := in.ofKind("HorizontalPodAutoscaler"); len(hpa) != 0 {
				t.Errorf("%s by default: autoscaling is off unless asked for", hpa[0].key())
			}
			sts := in.get(t, "StatefulSet", "llmgw-gateway").Obj.(*appsv1.StatefulSet)
			args := sts.Spec.Template.Spec.Containers[0].Args
			for _, want := range []string{"--statefulset=llmgw-gateway", "--ledger-claim-template=data",
				"--drain-timeout=30s", "--handoff-timeout=60s"} {
				if !slices.Contains(args, want) {
					t.Errorf("args %v lack %s", args, want)
				}
			}
			if g := sts.Spec.Template.Spec.TerminationGracePeriodSeconds; g == nil || *g != 100 {
				t.Errorf("terminationGracePeriodSeconds %s, want 100 (30s drain + 60s hand-off + 10s)", deref(g))
			}
		})
	}
}

// TestGatewayRolePeerDiscovery: in both installs the gateway Role grants
// exactly what peer discovery and the hand-off need: its own StatefulSet by
// name (get, and list/watch with a name field selector) and the claims
// (list/watch to find them, patch to mark its own handed off), nothing more
// on either; and the two installs' gateway Roles are the same.
func TestGatewayRolePeerDiscovery(t *testing.T) {
	var roles [][]rbacv1.PolicyRule
	for _, in := range installs(t) {
		t.Run(in.Source, func(t *testing.T) {
			sts := in.get(t, "StatefulSet", "llmgw-gateway").Obj.(*appsv1.StatefulSet)
			role := in.get(t, "Role", "llmgw-gateway").Obj.(*rbacv1.Role)
			roles = append(roles, role.Rules)
			want := []rbacv1.PolicyRule{
				{APIGroups: []string{"apps"}, Resources: []string{"statefulsets"}, ResourceNames: []string{sts.Name},
					Verbs: []string{"get", "list", "watch"}},
				{APIGroups: []string{""}, Resources: []string{"persistentvolumeclaims"}, Verbs: []string{"list", "watch", "patch"}},
			}
			var got []rbacv1.PolicyRule
			for _, r := range role.Rules {
				if slices.Contains(r.Resources, "statefulsets") || slices.Contains(r.Resources, "persistentvolumeclaims") ||
					slices.Contains(r.Resources, "*") || slices.Contains(r.APIGroups, "*") || slices.Contains(r.APIGroups, "apps") {
					got = append(got, r)
				}
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("gateway Role rules on StatefulSets and claims:\n%s", diffYAML(want, got))
			}
		})
	}
	if len(roles) == 2 && !reflect.DeepEqual(roles[0], roles[1]) {
		t.Errorf("the gateway Role differs, kustomize (-) vs helm (+):\n%s", diffYAML(roles[0], roles[1]))
	}
}

// TestGatewayAutoscaling: with gateway.autoscaling.enabled the chart renders
// the HPA from the values, leaves spec.replicas to it, keeps the PDB (two
// replicas at least) and the quota store (up to six), whatever
// gateway.replicas says.
func TestGatewayAutoscaling(t *testing.T) {
	in := renderHelm(t, "--set", "gateway.autoscaling.enabled=true", "--set", "gateway.replicas=1")
	sts := in.get(t, "StatefulSet", "llmgw-gateway").Obj.(*appsv1.StatefulSet)
	if sts.Spec.Replicas != nil {
		t.Errorf("spec.replicas %d rendered: the HPA owns it (every upgrade would reset it)", *sts.Spec.Replicas)
	}
	checkElasticGateway(t, sts)
	hpa := in.get(t, "HorizontalPodAutoscaler", "llmgw-gateway").Obj.(*autoscalingv2.HorizontalPodAutoscaler)
	if ref := hpa.Spec.ScaleTargetRef; ref.APIVersion != "apps/v1" || ref.Kind != "StatefulSet" || ref.Name != sts.Name {
		t.Errorf("scaleTargetRef %+v, want the gateway StatefulSet", ref)
	}
	if hpa.Spec.MinReplicas == nil || *hpa.Spec.MinReplicas != 2 || hpa.Spec.MaxReplicas != 6 {
		t.Errorf("replicas %v to %d, want 2 to 6", hpa.Spec.MinReplicas, hpa.Spec.MaxReplicas)
	}
	utilization := int32(70)
	wantMetrics := []autoscalingv2.MetricSpec{{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{
		Name: corev1.ResourceCPU, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: &utilization}}}}
	if !reflect.DeepEqual(hpa.Spec.Metrics, wantMetrics) {
		t.Errorf("metrics:\n%s", diffYAML(wantMetrics, hpa.Spec.Metrics))
	}
	window := int32(300)
	wantBehavior := &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleDown: &autoscalingv2.HPAScalingRules{
		StabilizationWindowSeconds: &window,
		Policies:                   []autoscalingv2.HPAScalingPolicy{{Type: autoscalingv2.PodsScalingPolicy, Value: 1, PeriodSeconds: 60}}}}
	if !reflect.DeepEqual(hpa.Spec.Behavior, wantBehavior) {
		t.Errorf("behavior (each scale-down hands records off: slowly):\n%s", diffYAML(wantBehavior, hpa.Spec.Behavior))
	}
	if _, ok := in.Objects["PodDisruptionBudget/llmgw-gateway"]; !ok {
		t.Errorf("no PDB with minReplicas 2")
	}
	if _, ok := in.Objects[quotaStoreWorkload]; !ok {
		t.Errorf("no quota store with up to 6 autoscaled replicas (gateway.replicas=1 is not used then)")
	}
}

// TestGatewayAutoscalingCustomMetric: the CPU metric can be dropped for
// others (the values.yaml recipe: requests in flight through
// prometheus-adapter), and behavior is passed through as given.
func TestGatewayAutoscalingCustomMetric(t *testing.T) {
	in := renderHelm(t, "--set", "gateway.autoscaling.enabled=true",
		"--set", "gateway.autoscaling.minReplicas=3", "--set", "gateway.autoscaling.maxReplicas=10",
		"--set", "gateway.autoscaling.targetCPUUtilizationPercentage=0",
		"--set-json", `gateway.autoscaling.metrics=[{"type":"Pods","pods":{"metric":{"name":"llmgw_inflight_requests"},"target":{"type":"AverageValue","averageValue":"20"}}}]`,
		"--set", "gateway.autoscaling.behavior.scaleDown=null",
		"--set", "gateway.autoscaling.behavior.scaleUp.stabilizationWindowSeconds=30")
	hpa := in.get(t, "HorizontalPodAutoscaler", "llmgw-gateway").Obj.(*autoscalingv2.HorizontalPodAutoscaler)
	if *hpa.Spec.MinReplicas != 3 || hpa.Spec.MaxReplicas != 10 {
		t.Errorf("replicas %d to %d, want 3 to 10", *hpa.Spec.MinReplicas, hpa.Spec.MaxReplicas)
	}
	if m := hpa.Spec.Metrics; len(m) != 1 || m[0].Pods == nil || m[0].Pods.Metric.Name != "llmgw_inflight_requests" ||
		m[0].Pods.Target.AverageValue == nil || m[0].Pods.Target.AverageValue.String() != "20" {
		t.Errorf("metrics %+v, want only the Pods metric llmgw_inflight_requests averaging 20", m)
	}
	if b := hpa.Spec.Behavior; b == nil || b.ScaleDown != nil || b.ScaleUp == nil ||
		b.ScaleUp.StabilizationWindowSeconds == nil || *b.ScaleUp.StabilizationWindowSeconds != 30 {
		t.Errorf("behavior %+v, want only scaleUp with a 30s window", b)
	}
}

// TestGatewayPDB: the PDB is there when more than one replica is expected,
// with the value's maxUnavailable, and never one that would hold a drain.
func TestGatewayPDB(t *testing.T) {
	for _, tc := range []struct {
		name string
		set  []string
		want *intstr.IntOrString // nil: no PDB
	}{
		{"one replica", []string{"gateway.replicas=1"}, nil},
		{"three replicas, 50%", []string{"gateway.replicas=3", "gateway.podDisruptionBudget.maxUnavailable=50%"}, ptr(intstr.FromString("50%"))},
		{"autoscaled from 1", []string{"gateway.autoscaling.enabled=true", "gateway.autoscaling.minReplicas=1", "gateway.replicas=3"}, nil},
		{"autoscaled from 2, replicas 1", []string{"gateway.autoscaling.enabled=true", "gateway.replicas=1"}, ptr(intstr.FromInt32(1))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var args []string
			for _, s := range tc.set {
				args = append(args, "--set", s)
			}
			in := renderHelm(t, args...)
			o, has := in.Objects["PodDisruptionBudget/llmgw-gateway"]
			switch {
			case tc.want == nil && has:
				t.Errorf("a PDB with at most one replica expected: it protects nothing")
			case tc.want != nil && !has:
				t.Errorf("no PDB")
			case has:
				pdb := o.Obj.(*policyv1.PodDisruptionBudget)
				if pdb.Spec.MaxUnavailable == nil || *pdb.Spec.MaxUnavailable != *tc.want || pdb.Spec.MinAvailable != nil {
					t.Errorf("maxUnavailable %v minAvailable %v, want %v and unset", pdb.Spec.MaxUnavailable, pdb.Spec.MinAvailable, tc.want)
				}
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }

// deref shows a pointer's value, or "unset".
func deref[T any](p *T) string {
	if p == nil {
		return "unset"
	}
	return fmt.Sprint(*p)
}

// TestGatewayHelmRefusals: values that would kill a replica mid-hand-off,
// hold node drains forever or give the API server an HPA it refuses fail the
// render, naming the value; their neighbours on the right side render.
func TestGatewayHelmRefusals(t *testing.T) {
	for _, tc := range []struct {
		set  []string
		want string // "" renders
	}{
		{[]string{"gateway.drainTimeout=90s"}, "gateway.terminationGracePeriodSeconds"},
		{[]string{"gateway.drainTimeout=1m30s", "gateway.handoffTimeout=500ms", "gateway.terminationGracePeriodSeconds=91"}, ""},
		{[]string{"gateway.drainTimeout=1m30s", "gateway.handoffTimeout=500ms", "gateway.terminationGracePeriodSeconds=90"}, "gateway.terminationGracePeriodSeconds"},
		{[]string{"gateway.drainTimeout=1.5m", "gateway.handoffTimeout=0", "gateway.terminationGracePeriodSeconds=90"}, ""},
		{[]string{"gateway.handoffTimeout=2h", "gateway.terminationGracePeriodSeconds=7229"}, "gateway.terminationGracePeriodSeconds"},
		{[]string{"gateway.handoffTimeout=sixty"}, "gateway.handoffTimeout"},
		{[]string{"gateway.drainTimeout=30"}, "gateway.drainTimeout"},
		{[]string{"gateway.terminationGracePeriodSeconds=-1"}, "gateway.terminationGracePeriodSeconds"},
		{[]string{"gateway.podDisruptionBudget.maxUnavailable=0"}, "gateway.podDisruptionBudget.maxUnavailable"},
		{[]string{"gateway.podDisruptionBudget.maxUnavailable=0%"}, "gateway.podDisruptionBudget.maxUnavailable"},
		{[]string{"gateway.autoscaling.enabled=true", "gateway.autoscaling.minReplicas=0"}, "gateway.autoscaling.minReplicas"},
		{[]string{"gateway.autoscaling.enabled=true", "gateway.autoscaling.maxReplicas=1"}, "gateway.autoscaling.maxReplicas"},
		{[]string{"gateway.autoscaling.enabled=true", "gateway.autoscaling.targetCPUUtilizationPercentage=0"}, "gateway.autoscaling"},
	} {
		t.Run(strings.Join(tc.set, ","), func(t *testing.T) {
			t.Parallel()
			args := []string{"template", "llmgw", "charts/llmgw", "--namespace", namespace}
			for _, s := range tc.set {
				args = append(args, "--set", s)
			}
			_, err := helm(args...)
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tc.want != "" && err == nil:
				t.Errorf("rendered, want a refusal naming %s", tc.want)
			case tc.want != "" && !strings.Contains(err.Error(), tc.want+":"):
				t.Errorf("refusal does not name %s:\n%v", tc.want, err)
			}
		})
	}
}
