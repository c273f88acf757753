package manifests

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// TestGatewayPprofOffByDefault: both installs turn /debug/pprof off on the
// management port (the binary's --pprof defaults to on); the chart's
// gateway.pprof.enabled leaves the binary's default, and the flag is said by
// that value only.
func TestGatewayPprofOffByDefault(t *testing.T) {
	for _, in := range installs(t) {
		if v, ok := flagValue(containerArgs(t, in, "StatefulSet", "llmgw-gateway"), "pprof"); !ok || v != "false" {
			t.Errorf("%s: gateway --pprof=%q (set: %v), want --pprof=false", in.Source, v, ok)
		}
	}
	on := containerArgs(t, renderHelm(t, "--set", "gateway.pprof.enabled=true"), "StatefulSet", "llmgw-gateway")
	if v, ok := flagValue(on, "pprof"); ok {
		t.Errorf("gateway.pprof.enabled=true: --pprof=%s rendered, want the binary's default (on)", v)
	}
	onRates := containerArgs(t, renderHelm(t, "--set", "gateway.pprof.enabled=true", "--set", "gateway.extraArgs[0]=--profile-block-rate=1"),
		"StatefulSet", "llmgw-gateway")
	if !slices.Contains(onRates, "--profile-block-rate=1") {
		t.Errorf("args %v lack --profile-block-rate=1", onRates)
	}
	for _, tc := range []struct{ set, want string }{
		{"gateway.extraArgs[0]=--pprof=true", "gateway.pprof.enabled"},
		{"gateway.extraArgs[0]=-pprof", "gateway.pprof.enabled"},
		{"gateway.extraArgs[0]=--profile-block-rate=1", "gateway.pprof.enabled=true"},
		{"gateway.extraArgs[0]=--profile-mutex-fraction=5", "gateway.pprof.enabled=true"},
	} {
		t.Run(tc.set, func(t *testing.T) {
			t.Parallel()
			_, err := helm("template", "llmgw", "charts/llmgw", "--namespace", namespace, "--set", tc.set)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("render with %s: %v, want a refusal naming %s", tc.set, err, tc.want)
			}
		})
	}
}

func gatewayContainer(t *testing.T, in install) corev1.Container {
	t.Helper()
	return in.get(t, "StatefulSet", "llmgw-gateway").Obj.(*appsv1.StatefulSet).Spec.Template.Spec.Containers[0]
}

func otelEnv(c corev1.Container) []corev1.EnvVar {
	var out []corev1.EnvVar
	for _, e := range c.Env {
		if strings.HasPrefix(e.Name, "OTEL_") {
			out = append(out, e)
		}
	}
	return out
}

// TestGatewayTracingEnv: the OTEL_* variables are rendered only with
// gateway.tracing.endpoint, with the values given; the headers come from a
// Secret, never a value; a protocol or sampler the SDK does not know, or an
// endpoint that is no URL, fails the render.
func TestGatewayTracingEnv(t *testing.T) {
	for _, in := range installs(t) {
		if e := otelEnv(gatewayContainer(t, in)); len(e) != 0 {
			t.Errorf("%s: OTEL_* variables without a tracing endpoint: %v", in.Source, e)
		}
	}
	val := func(v string) corev1.EnvVar { return corev1.EnvVar{Value: v} }
	for _, tc := range []struct {
		name string
		set  []string
		want map[string]corev1.EnvVar
	}{
		{"defaults", []string{"gateway.tracing.endpoint=http://otel-collector.observability:4318"}, map[string]corev1.EnvVar{
			"OTEL_EXPORTER_OTLP_ENDPOINT": val("http://otel-collector.observability:4318"),
			"OTEL_EXPORTER_OTLP_PROTOCOL": val("http/protobuf"),
			"OTEL_TRACES_SAMPLER":         val("parentbased_always_on"),
			"OTEL_SERVICE_NAME":           val("llmgw-gateway"),
			"OTEL_RESOURCE_ATTRIBUTES":    val("k8s.namespace.name=$(POD_NAMESPACE),k8s.pod.name=$(POD_NAME)"),
		}},
		{"everything", []string{"gateway.tracing.endpoint=https://collector:4317", "gateway.tracing.protocol=grpc",
			"gateway.tracing.sampler=parentbased_traceidratio", "gateway.tracing.samplerArg=0.25",
			"gateway.tracing.serviceName=gw-eu", "gateway.tracing.resourceAttributes=deployment.environment=prod",
			"gateway.tracing.headersSecret.name=otel-auth", "gateway.tracing.headersSecret.key=hdr"}, map[string]corev1.EnvVar{
			"OTEL_EXPORTER_OTLP_ENDPOINT": val("https://collector:4317"),
			"OTEL_EXPORTER_OTLP_PROTOCOL": val("grpc"),
			"OTEL_TRACES_SAMPLER":         val("parentbased_traceidratio"),
			"OTEL_TRACES_SAMPLER_ARG":     val("0.25"),
			"OTEL_SERVICE_NAME":           val("gw-eu"),
			"OTEL_RESOURCE_ATTRIBUTES":    val("k8s.namespace.name=$(POD_NAMESPACE),k8s.pod.name=$(POD_NAME),deployment.environment=prod"),
			"OTEL_EXPORTER_OTLP_HEADERS": {ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
				LocalObjectReference: corev1.LocalObjectReference{Name: "otel-auth"}, Key: "hdr"}}},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var args []string
			for _, s := range tc.set {
				args = append(args, "--set", s)
			}
			c := gatewayContainer(t, renderHelm(t, args...))
			checkOtelEnv(t, c, tc.want)
		})
	}
	for _, tc := range []struct{ set, want string }{
		{"gateway.tracing.protocol=http/json", "gateway.tracing.protocol"},
		{"gateway.tracing.sampler=sometimes", "gateway.tracing.sampler"},
		{"gateway.tracing.endpoint=otel-collector:4317", "gateway.tracing.endpoint"},
	} {
		t.Run("refused/"+tc.set, func(t *testing.T) {
			t.Parallel()
			args := []string{"template", "llmgw", "charts/llmgw", "--namespace", namespace, "--set", tc.set}
			if !strings.HasPrefix(tc.set, "gateway.tracing.endpoint=") {
				args = append(args, "--set", "gateway.tracing.endpoint=http://c:4318")
			}
			if _, err := helm(args...); err == nil || !strings.Contains(err.Error(), tc.want+":") {
				t.Errorf("render with %s: %v, want a refusal naming %s", tc.set, err, tc.want)
			}
		})
	}
}

// checkOtelEnv: exactly the OTEL_* variables of want, each after
// POD_NAMESPACE and POD_NAME (which OTEL_RESOURCE_ATTRIBUTES expands).
func checkOtelEnv(t *testing.T, c corev1.Container, want map[string]corev1.EnvVar) {
	t.Helper()
	got := map[string]corev1.EnvVar{}
	for _, e := range otelEnv(c) {
		name := e.Name
		e.Name = ""
		got[name] = e
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("OTEL_* env:\n%s", diffYAML(want, got))
	}
	index := func(name string) int {
		return slices.IndexFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == name })
	}
	if r, ns, pod := index("OTEL_RESOURCE_ATTRIBUTES"), index("POD_NAMESPACE"), index("POD_NAME"); r < ns || r < pod || ns < 0 || pod < 0 {
		t.Errorf("OTEL_RESOURCE_ATTRIBUTES (at %d) must follow POD_NAMESPACE (%d) and POD_NAME (%d) for $(...) to expand", r, ns, pod)
	}
}

// TestKustomizeTracingComponent: config/components/tracing, the kustomize
// example, added to config/default, renders the same variables as the
// chart's gateway.tracing with its endpoint and changes nothing else of the
// gateway.
func TestKustomizeTracingComponent(t *testing.T) {
	// An overlay outside the repository; kustomize takes relative paths only.
	dir := t.TempDir()
	root, err := filepath.Abs(repo)
	if err != nil {
		t.Fatal(err)
	}
	if root, err = filepath.Rel(dir, root); err != nil {
		t.Fatal(err)
	}
	overlay := "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n- " +
		filepath.Join(root, "config", "default") + "\ncomponents:\n- " + filepath.Join(root, "config", "components", "tracing") + "\n"
	if err := os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte(overlay), 0o644); err != nil {
		t.Fatal(err)
	}
	m, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		t.Fatalf("kustomize build config/default + components/tracing: %v", err)
	}
	out, err := m.AsYaml()
	if err != nil {
		t.Fatal(err)
	}
	in, err := decode("kustomize+tracing", out)
	if err != nil {
		t.Fatal(err)
	}
	c := gatewayContainer(t, in)
	checkOtelEnv(t, c, map[string]corev1.EnvVar{
		"OTEL_EXPORTER_OTLP_ENDPOINT": {Value: "http://otel-collector.observability:4318"},
		"OTEL_EXPORTER_OTLP_PROTOCOL": {Value: "http/protobuf"},
		"OTEL_TRACES_SAMPLER":         {Value: "parentbased_always_on"},
		"OTEL_SERVICE_NAME":           {Value: "llmgw-gateway"},
		"OTEL_RESOURCE_ATTRIBUTES":    {Value: "k8s.namespace.name=$(POD_NAMESPACE),k8s.pod.name=$(POD_NAME)"},
	})
	// The chart with the same endpoint renders the same variables.
	h := gatewayContainer(t, renderHelm(t, "--set", "gateway.tracing.endpoint=http://otel-collector.observability:4318"))
	if !reflect.DeepEqual(otelEnv(h), otelEnv(c)) {
		t.Errorf("kustomize component vs chart:\n%s", diffYAML(otelEnv(c), otelEnv(h)))
	}
	c.Env = slices.DeleteFunc(c.Env, func(e corev1.EnvVar) bool { return strings.HasPrefix(e.Name, "OTEL_") })
	if plain := gatewayContainer(t, renderKustomize(t)); !reflect.DeepEqual(plain, c) {
		t.Errorf("the component changes more than the OTEL_* variables:\n%s", diffYAML(plain, c))
	}
}
