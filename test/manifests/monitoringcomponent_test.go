package manifests

import (
	"bytes"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/yaml"

	"github.com/llmgw/llmgw/hack/monitoring"
)

// monitoringOverlay is a user's kustomization: config/default plus the
// component config/components/monitoring.
const monitoringOverlay = "testdata/monitoring"

// TestMonitoringComponentGenerated is the verify-generated check of the
// component: its files are what `make monitoring-manifests` writes from the
// chart as it is now, and its kustomization lists exactly them.
func TestMonitoringComponentGenerated(t *testing.T) {
	// The generator renders what TestMonitoringOffByDefault calls "everything on".
	var on []string
	for i := 1; i < len(monitoringOn); i += 2 {
		on = append(on, monitoringOn[i])
	}
	if !slices.Equal(slices.Sorted(slices.Values(on)), slices.Sorted(slices.Values(monitoring.Values))) {
		t.Errorf("hack/monitoring renders the chart with %v, the tests with %v", monitoring.Values, on)
	}
	rendered, err := helm(monitoring.HelmArgs()...)
	if err != nil {
		t.Fatal(err)
	}
	files, err := monitoring.Generate(rendered)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(repo, monitoring.Dir)
	for _, name := range monitoring.Templates {
		got, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Errorf("%v: run make monitoring-manifests", err)
			continue
		}
		if !bytes.Equal(got, files[name]) {
			t.Errorf("%s/%s differs from the chart's rendering (run make monitoring-manifests), committed (-) vs generated (+):\n%s",
				monitoring.Dir, name, diffText(string(got), string(files[name])))
		}
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if want := slices.Sorted(slices.Values(append(slices.Clone(monitoring.Templates), "kustomization.yaml"))); !slices.Equal(names, want) {
		t.Errorf("%s holds %v, want %v (only generated files beside the kustomization)", monitoring.Dir, names, want)
	}
	var k struct {
		APIVersion string   `json:"apiVersion"`
		Kind       string   `json:"kind"`
		Resources  []string `json:"resources"`
	}
	readYAML(t, filepath.Join(monitoring.Dir, "kustomization.yaml"), &k)
	if k.Kind != "Component" || !slices.Equal(slices.Sorted(slices.Values(k.Resources)), slices.Sorted(slices.Values(monitoring.Templates))) {
		t.Errorf("%s/kustomization.yaml: kind %s resources %v, want a Component of %v", monitoring.Dir, k.Kind, k.Resources, monitoring.Templates)
	}
}

// TestMonitoringComponent: config/default with the component adds exactly
// the chart's monitoring objects and changes no other object; each equals the
// chart's rendering with every monitoring object on, field for field, but for
// Helm's labels, which become config/default's. config/default alone has none
// of them.
func TestMonitoringComponent(t *testing.T) {
	base := renderKustomize(t)
	out, how, err := kustomizeBuild(monitoringOverlay)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("rendered %s with %s", monitoringOverlay, how)
	overlay, err := decode("kustomize+monitoring", out)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range monitoringObjects {
		if _, ok := base.Objects[k]; ok {
			t.Errorf("config/default renders %s without the component", k)
		}
	}
	var added []string
	for _, k := range overlay.keys() {
		b, ok := base.Objects[k]
		if !ok {
			added = append(added, k)
			continue
		}
		if !bytes.Equal(b.Raw, overlay.Objects[k].Raw) {
			t.Errorf("%s changes with the component:\n%s", k, diffYAML(b.Obj, overlay.Objects[k].Obj))
		}
	}
	for _, k := range base.keys() {
		if _, ok := overlay.Objects[k]; !ok {
			t.Errorf("%s gone with the component", k)
		}
	}
	if want := slices.Sorted(slices.Values(monitoringObjects)); !slices.Equal(added, want) {
		t.Fatalf("the component adds %v, want %v", added, want)
	}

	chart := renderHelm(t, monitoringOn...)
	for _, k := range monitoringObjects {
		t.Run(k, func(t *testing.T) {
			h, kz := chart.get(t, kindOf(k), nameOf(k)), overlay.Objects[k]
			want := helmToKustomizeLabels(h.Labels)
			if !maps.Equal(kz.Labels, want) {
				t.Errorf("labels %v, want the chart's with config/default's for Helm's: %v", kz.Labels, want)
			}
			checkKustomizeLabelConvention(t, base, kz)
			hm, km := untyped(t, h.Raw), untyped(t, kz.Raw)
			hm["metadata"].(map[string]any)["labels"] = untypedLabels(want)
			if !reflect.DeepEqual(hm, km) {
				t.Errorf("differs from the chart's, chart (-) vs component (+):\n%s", diffYAML(hm, km))
			}
		})
	}

	// What the objects refer to is in the kustomize install: the
	// ServiceMonitors' Services select its workloads, the scraper's role is
	// its ClusterRole llmgw-metrics-reader.
	for _, want := range []struct{ sm, workload string }{
		{"llmgw-gateway", "StatefulSet/llmgw-gateway"},
		{"llmgw-controller", "Deployment/llmgw-controller"},
	} {
		svc := monitoredService(t, overlay, overlay.get(t, "ServiceMonitor", want.sm).Obj.(*serviceMonitor))
		tpl := selected(t, overlay, "Service/"+svc.Name, labels.SelectorFromSet(svc.Spec.Selector))
		if got := overlay.podSpecs()[want.workload]; !labels.Equals(tpl.Labels, got.Labels) {
			t.Errorf("ServiceMonitor %s scrapes pods labelled %v, want %s's %v", want.sm, tpl.Labels, want.workload, got.Labels)
		}
	}
	crb := overlay.get(t, "ClusterRoleBinding", "llmgw-metrics-scraper").Obj.(*rbacv1.ClusterRoleBinding)
	overlay.get(t, "ClusterRole", crb.RoleRef.Name)
	sa := overlay.get(t, "Secret", "llmgw-metrics-scraper-token").Obj.(*corev1.Secret).Annotations[corev1.ServiceAccountNameKey]
	overlay.get(t, "ServiceAccount", sa)
}

// helmToKustomizeLabels: the chart's labels of an object as config/default
// labels its own: no release instance, chart or app version, and managed by
// kustomize (config/default's labels: transformer).
func helmToKustomizeLabels(l map[string]string) map[string]string {
	out := maps.Clone(l)
	for _, k := range []string{"app.kubernetes.io/instance", "app.kubernetes.io/version", "helm.sh/chart"} {
		delete(out, k)
	}
	out["app.kubernetes.io/managed-by"] = "kustomize"
	return out
}

// checkKustomizeLabelConvention: the component's object carries the same
// app.kubernetes.io/ labels as config/default's own objects (those of the
// gateway's client Service, but for the component label), and no Helm ones.
func checkKustomizeLabelConvention(t *testing.T, base install, o object) {
	t.Helper()
	ref := base.get(t, "Service", "llmgw-gateway").Labels
	const component = "app.kubernetes.io/component"
	for k, v := range o.Labels {
		if strings.HasPrefix(k, "helm.sh/") || v == "Helm" {
			t.Errorf("%s: Helm label %s=%s", o.key(), k, v)
		}
		if strings.HasPrefix(k, "app.kubernetes.io/") && k != component && ref[k] != v {
			t.Errorf("%s: label %s=%q; config/default's objects carry %q", o.key(), k, v, ref[k])
		}
	}
	for k := range ref {
		if _, ok := o.Labels[k]; !ok && k != component {
			t.Errorf("%s: no label %s, which config/default's objects carry", o.key(), k)
		}
	}
}

func kindOf(key string) string { k, _, _ := strings.Cut(key, "/"); return k }
func nameOf(key string) string { _, n, _ := strings.Cut(key, "/"); return n }

func untyped(t *testing.T, doc []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := yaml.Unmarshal(doc, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func untypedLabels(l map[string]string) map[string]any {
	out := map[string]any{}
	for k, v := range l {
		out[k] = v
	}
	return out
}
