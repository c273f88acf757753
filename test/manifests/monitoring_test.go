package manifests

import (
	"regexp"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// monitoringOn renders the chart with every monitoring object on.
var monitoringOn = []string{"--set", "monitoring.serviceMonitor.enabled=true", "--set", "monitoring.prometheusRule.enabled=true",
	"--set", "monitoring.grafanaDashboard.enabled=true"}

// The objects monitoring.* adds, all of them (the controller's scrape included).
var monitoringObjects = []string{
	"Service/llmgw-gateway-metrics", "ServiceMonitor/llmgw-gateway",
	"Service/llmgw-controller-metrics", "ServiceAccount/llmgw-metrics-scraper", "Secret/llmgw-metrics-scraper-token",
	"ClusterRoleBinding/llmgw-metrics-scraper", "ServiceMonitor/llmgw-controller",
	"PrometheusRule/llmgw", "ConfigMap/llmgw-grafana-dashboard",
}

// TestMonitoringOffByDefault: no install needs the Prometheus Operator's
// CRDs or Grafana unless asked; with everything on, the chart adds exactly
// the monitoring objects and changes none of the others.
func TestMonitoringOffByDefault(t *testing.T) {
	for _, in := range installs(t) {
		for _, k := range monitoringObjects {
			if _, ok := in.Objects[k]; ok {
				t.Errorf("%s: %s by default", in.Source, k)
			}
		}
	}
	plain, on := renderHelm(t), renderHelm(t, monitoringOn...)
	var added []string
	for _, k := range on.keys() {
		if _, ok := plain.Objects[k]; !ok {
			added = append(added, k)
			continue
		}
		if k == "Secret/llmgw-gateway-peer" || k == "Secret/mock-beta-upstream" || k == "Secret/llmgw-quota-store" {
			continue // random per render
		}
		if !slices.Equal(plain.Objects[k].Raw, on.Objects[k].Raw) {
			t.Errorf("%s changes with monitoring on:\n%s", k, diffYAML(plain.Objects[k].Obj, on.Objects[k].Obj))
		}
	}
	want := slices.Clone(monitoringObjects)
	slices.Sort(want)
	if !slices.Equal(added, want) {
		t.Errorf("monitoring on adds %v, want %v", added, want)
	}
	for _, k := range want {
		if o := on.Objects[k]; o.Kind != "ClusterRoleBinding" && o.Namespace != namespace {
			t.Errorf("%s in namespace %q, want %s", k, o.Namespace, namespace)
		}
	}
}

// TestServiceMonitorGateway: the gateways' ServiceMonitor selects exactly
// the Service llmgw-gateway-metrics, which exposes only the management port
// of the gateway pods, and scrapes /metrics there at the interval given.
func TestServiceMonitorGateway(t *testing.T) {
	in := renderHelm(t, "--set", "monitoring.serviceMonitor.enabled=true", "--set", "monitoring.serviceMonitor.interval=15s",
		"--set", "monitoring.serviceMonitor.labels.release=kube-prometheus-stack")
	sm := in.get(t, "ServiceMonitor", "llmgw-gateway").Obj.(*serviceMonitor)
	if sm.Labels["release"] != "kube-prometheus-stack" {
		t.Errorf("ServiceMonitor labels %v lack monitoring.serviceMonitor.labels", sm.Labels)
	}
	svc := monitoredService(t, in, sm)
	if svc.Name != "llmgw-gateway-metrics" {
		t.Fatalf("ServiceMonitor llmgw-gateway selects Service %s, want llmgw-gateway-metrics", svc.Name)
	}
	if len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].Name != "mgmt" || svc.Spec.Ports[0].Port != 9090 ||
		svc.Spec.Ports[0].TargetPort != intstr.FromString("mgmt") {
		t.Errorf("Service %s ports %+v, want only mgmt 9090 -> mgmt", svc.Name, svc.Spec.Ports)
	}
	tpl := selected(t, in, "Service/"+svc.Name, labels.SelectorFromSet(svc.Spec.Selector))
	sts := in.get(t, "StatefulSet", "llmgw-gateway").Obj.(*appsv1.StatefulSet)
	if !labels.Equals(tpl.Labels, sts.Spec.Template.Labels) {
		t.Errorf("Service %s selects pods labelled %v, want the gateways'", svc.Name, tpl.Labels)
	}
	if !hasPort(tpl, intstr.FromString("mgmt")) || !hasPort(tpl, intstr.FromInt32(9090)) {
		t.Errorf("the gateway pods have no port mgmt 9090")
	}
	if len(sm.Spec.Endpoints) != 1 {
		t.Fatalf("endpoints %+v, want one", sm.Spec.Endpoints)
	}
	e := sm.Spec.Endpoints[0]
	if e.Port != "mgmt" || e.Path != "/metrics" || e.Scheme != "http" || e.Interval != "15s" || e.ScrapeTimeout != "10s" {
		t.Errorf("endpoint %+v, want port mgmt, /metrics over http every 15s (timeout 10s)", e)
	}
	// Not through the client Service: the management port is not public.
	client := in.get(t, "Service", "llmgw-gateway").Obj.(*corev1.Service)
	if sel := mustSelector(t, &sm.Spec.Selector); sel.Matches(labels.Set(client.Labels)) {
		t.Errorf("ServiceMonitor selector %v matches the client Service", sel)
	}
}

// monitoredService is the one Service of the install a ServiceMonitor
// selects (its namespace and labels), and whose ports include each
// endpoint's.
func monitoredService(t *testing.T, in install, sm *serviceMonitor) *corev1.Service {
	t.Helper()
	if !slices.Equal(sm.Spec.NamespaceSelector.MatchNames, []string{namespace}) || sm.Spec.NamespaceSelector.Any {
		t.Errorf("ServiceMonitor %s namespaceSelector %+v, want matchNames [%s]", sm.Name, sm.Spec.NamespaceSelector, namespace)
	}
	sel := mustSelector(t, &sm.Spec.Selector)
	var hits []*corev1.Service
	for _, o := range in.ofKind("Service") {
		if sel.Matches(labels.Set(o.Labels)) {
			hits = append(hits, o.Obj.(*corev1.Service))
		}
	}
	if len(hits) != 1 {
		t.Fatalf("ServiceMonitor %s selects %d Services, want one", sm.Name, len(hits))
	}
	for _, e := range sm.Spec.Endpoints {
		if !slices.ContainsFunc(hits[0].Spec.Ports, func(p corev1.ServicePort) bool { return p.Name == e.Port }) {
			t.Errorf("ServiceMonitor %s: Service %s has no port %s", sm.Name, hits[0].Name, e.Port)
		}
	}
	return hits[0]
}

// TestServiceMonitorController: the controller's ServiceMonitor scrapes its
// HTTPS port with the token of a ServiceAccount that may GET /metrics and
// nothing else; off with monitoring.serviceMonitor.controller.enabled=false.
func TestServiceMonitorController(t *testing.T) {
	in := renderHelm(t, "--set", "monitoring.serviceMonitor.enabled=true")
	sm := in.get(t, "ServiceMonitor", "llmgw-controller").Obj.(*serviceMonitor)
	svc := monitoredService(t, in, sm)
	tpl := selected(t, in, "Service/"+svc.Name, labels.SelectorFromSet(svc.Spec.Selector))
	d := in.get(t, "Deployment", "llmgw-controller").Obj.(*appsv1.Deployment)
	if !labels.Equals(tpl.Labels, d.Spec.Template.Labels) {
		t.Errorf("Service %s selects pods labelled %v, want the controller's", svc.Name, tpl.Labels)
	}
	if len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].TargetPort != intstr.FromString("metrics") || !hasPort(tpl, intstr.FromInt32(8443)) {
		t.Errorf("Service %s ports %+v, want only metrics -> the controller's 8443", svc.Name, svc.Spec.Ports)
	}
	e := sm.Spec.Endpoints[0]
	if len(sm.Spec.Endpoints) != 1 || e.Scheme != "https" || e.Path != "/metrics" || e.TLSConfig == nil || !e.TLSConfig.InsecureSkipVerify {
		t.Errorf("endpoint %+v, want /metrics over https (self-signed)", e)
	}
	if e.Authorization == nil || e.Authorization.Type != "Bearer" || e.Authorization.Credentials == nil {
		t.Fatalf("endpoint authorization %+v, want a Bearer token from a Secret", e.Authorization)
	}
	ref := e.Authorization.Credentials
	secret := in.get(t, "Secret", ref.Name).Obj.(*corev1.Secret)
	if secret.Type != corev1.SecretTypeServiceAccountToken || ref.Key != corev1.ServiceAccountTokenKey {
		t.Errorf("Secret %s type %s key %s, want a service-account token's %s", ref.Name, secret.Type, ref.Key, corev1.ServiceAccountTokenKey)
	}
	saName := secret.Annotations[corev1.ServiceAccountNameKey]
	sa := in.get(t, "ServiceAccount", saName).Obj.(*corev1.ServiceAccount)
	if sa.AutomountServiceAccountToken == nil || *sa.AutomountServiceAccountToken {
		t.Errorf("ServiceAccount %s: automountServiceAccountToken not false (no pod runs as it)", saName)
	}
	// Its only permission: GET /metrics (llmgw-metrics-reader).
	var roles []string
	for _, o := range in.ofKind("ClusterRoleBinding") {
		b := o.Obj.(*rbacv1.ClusterRoleBinding)
		for _, s := range b.Subjects {
			if s.Kind == "ServiceAccount" && s.Name == saName && s.Namespace == namespace {
				roles = append(roles, b.RoleRef.Name)
			}
		}
	}
	for _, o := range in.ofKind("RoleBinding") {
		for _, s := range o.Obj.(*rbacv1.RoleBinding).Subjects {
			if s.Name == saName {
				t.Errorf("%s binds %s too", o.key(), saName)
			}
		}
	}
	if !slices.Equal(roles, []string{"llmgw-metrics-reader"}) {
		t.Fatalf("%s is bound to %v, want [llmgw-metrics-reader]", saName, roles)
	}
	reader := in.get(t, "ClusterRole", "llmgw-metrics-reader").Obj.(*rbacv1.ClusterRole)
	if len(reader.Rules) != 1 || !slices.Equal(reader.Rules[0].NonResourceURLs, []string{"/metrics"}) ||
		!slices.Equal(reader.Rules[0].Verbs, []string{"get"}) || len(reader.Rules[0].Resources) != 0 {
		t.Errorf("llmgw-metrics-reader rules %+v, want GET /metrics only", reader.Rules)
	}

	off := renderHelm(t, "--set", "monitoring.serviceMonitor.enabled=true", "--set", "monitoring.serviceMonitor.controller.enabled=false")
	for _, k := range []string{"ServiceMonitor/llmgw-controller", "Service/llmgw-controller-metrics", "ServiceAccount/llmgw-metrics-scraper",
		"Secret/llmgw-metrics-scraper-token", "ClusterRoleBinding/llmgw-metrics-scraper"} {
		if _, ok := off.Objects[k]; ok {
			t.Errorf("%s with monitoring.serviceMonitor.controller.enabled=false", k)
		}
	}
	off.get(t, "ServiceMonitor", "llmgw-gateway")
}

// The alerts of the PrometheusRule, by their values key.
var alertNames = map[string]string{
	"providerBreakerOpen":           "LLMGWProviderBreakerOpen",
	"providerCredentialUnavailable": "LLMGWProviderCredentialUnavailable",
	"quotaStoreDegraded":            "LLMGWQuotaStoreDegraded",
	"usageLedgerNotWritable":        "LLMGWUsageLedgerNotWritable",
	"usageLedgerRefusingRequests":   "LLMGWUsageLedgerRefusingRequests",
	"usageRecordsLost":              "LLMGWUsageRecordsLost",
	"snapshotRejected":              "LLMGWSnapshotRejected",
	"errorRatio":                    "LLMGWHighErrorRatio",
	"gatewayAddedLatency":           "LLMGWGatewayAddedLatencyHigh",
}

// promDuration is a Prometheus duration (model.ParseDuration).
var promDuration = regexp.MustCompile(`^(([0-9]+)y)?(([0-9]+)w)?(([0-9]+)d)?(([0-9]+)h)?(([0-9]+)m)?(([0-9]+)s)?(([0-9]+)ms)?$|^0$`)

func alertsOf(t *testing.T, in install) map[string]rule {
	t.Helper()
	pr := in.get(t, "PrometheusRule", "llmgw").Obj.(*prometheusRule)
	out := map[string]rule{}
	for _, g := range pr.Spec.Groups {
		if g.Name == "" || len(g.Rules) == 0 {
			t.Errorf("rule group %+v: no name or no rules", g)
		}
		for _, r := range g.Rules {
			if _, dup := out[r.Alert]; dup || r.Alert == "" {
				t.Errorf("alert %q: empty or twice", r.Alert)
			}
			out[r.Alert] = r
		}
	}
	return out
}

// TestPrometheusRule: every alert has a severity label, a summary and a
// description, a for: Prometheus parses, and an expression over this
// release's series; the thresholds, for: and severities follow the values;
// an alert can be turned off.
func TestPrometheusRule(t *testing.T) {
	alerts := alertsOf(t, renderHelm(t, "--set", "monitoring.prometheusRule.enabled=true"))
	var got, want []string
	for n := range alerts {
		got = append(got, n)
	}
	for _, n := range alertNames {
		want = append(want, n)
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("alerts %v, want %v", got, want)
	}
	for name, r := range alerts {
		if !slices.Contains([]string{"critical", "warning", "info"}, r.Labels["severity"]) {
			t.Errorf("%s: severity %q", name, r.Labels["severity"])
		}
		if strings.TrimSpace(r.Annotations["summary"]) == "" || strings.TrimSpace(r.Annotations["description"]) == "" {
			t.Errorf("%s: annotations %v, want summary and description", name, r.Annotations)
		}
		if !promDuration.MatchString(r.For) {
			t.Errorf("%s: for %q is no Prometheus duration", name, r.For)
		}
		if !strings.Contains(r.Expr, `{namespace="llmgw-system"`) {
			t.Errorf("%s: %s\ndoes not select this release's namespace", name, r.Expr)
		}
	}
	for _, tc := range []struct {
		alert, want string
	}{
		{"LLMGWProviderBreakerOpen", "== 2"},
		{"LLMGWSnapshotRejected", "llmgw_snapshot_last_reload_failed"},
		{"LLMGWHighErrorRatio", "> 0.05\n"},
		{"LLMGWGatewayAddedLatencyHigh", "> 0.05\n"},
	} {
		if !strings.Contains(alerts[tc.alert].Expr, tc.want) {
			t.Errorf("%s: %s\nlacks %q", tc.alert, alerts[tc.alert].Expr, tc.want)
		}
	}
	if r := alerts["LLMGWSnapshotRejected"]; r.For != "10m" {
		t.Errorf("LLMGWSnapshotRejected for %q, want 10m", r.For)
	}

	set := renderHelm(t, "--set", "monitoring.prometheusRule.enabled=true",
		"--set", "monitoring.prometheusRule.alerts.errorRatio.threshold=0.2",
		"--set", "monitoring.prometheusRule.alerts.gatewayAddedLatency.thresholdSeconds=0.01",
		"--set", "monitoring.prometheusRule.alerts.quotaStoreDegraded.for=15m",
		"--set", "monitoring.prometheusRule.alerts.quotaStoreDegraded.severity=critical",
		"--set", "monitoring.prometheusRule.alerts.providerBreakerOpen.enabled=false",
		"--set", "monitoring.prometheusRule.minRequestRate=2",
		"--set", `monitoring.prometheusRule.matchers=job="llmgw-gateway-metrics"`,
		"--set", "monitoring.prometheusRule.labels.release=kube-prometheus-stack")
	if l := set.get(t, "PrometheusRule", "llmgw").Labels; l["release"] != "kube-prometheus-stack" {
		t.Errorf("PrometheusRule labels %v lack monitoring.prometheusRule.labels", l)
	}
	alerts = alertsOf(t, set)
	if _, ok := alerts["LLMGWProviderBreakerOpen"]; ok {
		t.Errorf("LLMGWProviderBreakerOpen rendered with enabled=false")
	}
	for _, tc := range []struct{ alert, want string }{
		{"LLMGWHighErrorRatio", "> 0.2\n"},
		{"LLMGWHighErrorRatio", "> 2"},
		{"LLMGWGatewayAddedLatencyHigh", "> 0.01\n"},
		{"LLMGWQuotaStoreDegraded", `{job="llmgw-gateway-metrics"}`},
	} {
		if !strings.Contains(alerts[tc.alert].Expr, tc.want) {
			t.Errorf("%s: %s\nlacks %q", tc.alert, alerts[tc.alert].Expr, tc.want)
		}
	}
	if r := alerts["LLMGWQuotaStoreDegraded"]; r.For != "15m" || r.Labels["severity"] != "critical" {
		t.Errorf("LLMGWQuotaStoreDegraded for %q severity %q, want 15m critical", r.For, r.Labels["severity"])
	}
	if _, err := helm("template", "llmgw", "charts/llmgw", "--set", "monitoring.prometheusRule.enabled=true",
		"--set", "monitoring.prometheusRule.alerts.errorRatio.severity=page"); err == nil || !strings.Contains(err.Error(), "severity") {
		t.Errorf("severity page: %v, want a refusal", err)
	}
}

// TestHelmLintEverythingOn: helm lint --strict (make verify-chart lints the
// defaults) with every optional object of issue 47 on.
func TestHelmLintEverythingOn(t *testing.T) {
	args := append([]string{"lint", "--strict", "charts/llmgw"}, monitoringOn...)
	args = append(args, "--set", "gateway.tracing.endpoint=http://otel-collector:4318", "--set", "gateway.tracing.headersSecret.name=otel",
		"--set", "gateway.pprof.enabled=true")
	out, err := helm(args...)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(out), "0 chart(s) failed") {
		t.Fatalf("helm lint:\n%s", out)
	}
}
