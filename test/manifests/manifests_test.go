package manifests

import (
	"bytes"
	"encoding/base64"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/yaml"

	"github.com/llmgw/llmgw/api/v1alpha1"
)

// The objects both installs have in common.
var common = []string{
	"CustomResourceDefinition/budgetgroups.llmgw.dev",
	"CustomResourceDefinition/gatewaykeys.llmgw.dev",
	"CustomResourceDefinition/modelaliases.llmgw.dev",
	"CustomResourceDefinition/providerendpoints.llmgw.dev",
	"ServiceAccount/llmgw-controller",
	"ServiceAccount/llmgw-gateway",
	"Role/llmgw-controller",
	"Role/llmgw-gateway",
	"RoleBinding/llmgw-controller",
	"RoleBinding/llmgw-gateway",
	"ClusterRole/llmgw-controller-metrics-auth",
	"ClusterRoleBinding/llmgw-controller-metrics-auth",
	"ClusterRole/llmgw-metrics-reader",
	"ValidatingAdmissionPolicy/llmgw-watched-namespaces",
	"ValidatingAdmissionPolicyBinding/llmgw-watched-namespaces",
	"Deployment/llmgw-controller",
	"StatefulSet/llmgw-gateway",
	"Service/llmgw-gateway",
	"Service/llmgw-gateway-peers",
	"PodDisruptionBudget/llmgw-gateway",
	"NetworkPolicy/llmgw-gateway",
	"ConfigMap/llmgw-quota-store",
	"StatefulSet/llmgw-quota-store",
	"Service/llmgw-quota-store",
	"Deployment/mock-alpha",
	"Service/mock-alpha",
	"Deployment/mock-beta",
	"Service/mock-beta",
}

// The only differences between the two installs, and why.
var (
	// Helm installs into the release namespace (helm install -n llmgw-system
	// --create-namespace); kustomize creates it, with Pod Security labels.
	kustomizeOnly = []string{"Namespace/llmgw-system"}
	// Helm generates these at install time (randAlphaNum, kept on upgrade
	// through lookup); for kustomize, `make deploy` creates them (never committed).
	helmOnly = []string{"Secret/llmgw-gateway-peer", "Secret/mock-beta-upstream", "Secret/llmgw-quota-store"}
)

var generatedSecrets = map[string]string{"llmgw-gateway-peer": "token", "mock-beta-upstream": "apiKey"}

func TestHelmLint(t *testing.T) {
	out, err := helm("lint", "--strict", "charts/llmgw")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(out, []byte("0 chart(s) failed")) {
		t.Fatalf("helm lint:\n%s", out)
	}
}

func TestSameObjectsInBothInstalls(t *testing.T) {
	k, h := renderKustomize(t), renderHelm(t)
	for _, tc := range []struct {
		in   install
		want []string
	}{
		{k, append(slices.Clone(common), kustomizeOnly...)},
		{h, append(slices.Clone(common), helmOnly...)},
	} {
		t.Run(tc.in.Source, func(t *testing.T) {
			want := slices.Clone(tc.want)
			sort.Strings(want)
			if got := tc.in.keys(); !slices.Equal(got, want) {
				t.Errorf("objects:\n got %v\nwant %v", got, want)
			}
			for _, o := range tc.in.Objects {
				switch o.Kind {
				case "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding":
					// Cluster-scoped, but not in kustomize's built-in list of
					// cluster-scoped kinds, so its namespace transformer adds one;
					// kubectl and the API server drop it for a cluster-scoped kind
					// (the kind suite applies exactly this rendering).
					if tc.in.Source == "helm" && o.Namespace != "" {
						t.Errorf("%s is cluster-scoped but has namespace %q", o.key(), o.Namespace)
					}
				case "Namespace", "CustomResourceDefinition", "ClusterRole", "ClusterRoleBinding":
					if o.Namespace != "" {
						t.Errorf("%s is cluster-scoped but has namespace %q", o.key(), o.Namespace)
					}
				default:
					if o.Namespace != namespace {
						t.Errorf("%s: namespace %q, want %q", o.key(), o.Namespace, namespace)
					}
				}
				if o.Kind != "CustomResourceDefinition" && o.Labels["app.kubernetes.io/part-of"] != "llmgw" {
					t.Errorf("%s: no label app.kubernetes.io/part-of=llmgw", o.key())
				}
			}
		})
	}
}

// TestSameSpecsInBothInstalls: apart from labels (Helm's own) the objects
// both installs have are the same, so the two cannot drift apart.
func TestSameSpecsInBothInstalls(t *testing.T) {
	k, h := renderKustomize(t), renderHelm(t)
	for _, key := range common {
		t.Run(key, func(t *testing.T) {
			a, b := k.Objects[key], h.Objects[key]
			if a.Obj == nil || b.Obj == nil {
				t.Fatalf("%s missing (kustomize %v, helm %v)", key, a.Obj != nil, b.Obj != nil)
			}
			sa, sb := comparable(a.Obj), comparable(b.Obj)
			if !reflect.DeepEqual(sa, sb) {
				t.Errorf("%s differs, kustomize (-) vs helm (+):\n%s", key, diffYAML(sa, sb))
			}
		})
	}
}

// comparable is what must be equal between the installs: everything but
// metadata (labels and annotations differ by design).
func comparable(obj any) any {
	switch o := obj.(type) {
	case *appsv1.Deployment:
		return o.Spec
	case *appsv1.StatefulSet:
		return o.Spec
	case *corev1.Service:
		return o.Spec
	case *policyv1.PodDisruptionBudget:
		return o.Spec
	case *networkingv1.NetworkPolicy:
		return o.Spec
	case *rbacv1.Role:
		return o.Rules
	case *rbacv1.RoleBinding:
		return []any{o.RoleRef, o.Subjects}
	case *rbacv1.ClusterRole:
		return o.Rules
	case *admissionregistrationv1.ValidatingAdmissionPolicy:
		return o.Spec
	case *admissionregistrationv1.ValidatingAdmissionPolicyBinding:
		return o.Spec
	case *rbacv1.ClusterRoleBinding:
		return []any{o.RoleRef, o.Subjects}
	case *corev1.ServiceAccount:
		return []any{o.AutomountServiceAccountToken, o.Secrets, o.ImagePullSecrets}
	case *corev1.ConfigMap:
		return []any{o.Data, o.BinaryData}
	case *apiextensionsv1.CustomResourceDefinition:
		return o.Spec
	}
	return obj
}

func TestRestrictedSecurityContext(t *testing.T) {
	for _, in := range installs(t) {
		for name, tpl := range in.podSpecs() {
			t.Run(in.Source+"/"+name, func(t *testing.T) {
				ps := tpl.Spec.SecurityContext
				if ps == nil || ps.RunAsNonRoot == nil || !*ps.RunAsNonRoot {
					t.Errorf("pod securityContext.runAsNonRoot is not true")
				}
				if ps != nil && (ps.SeccompProfile == nil || ps.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault) {
					t.Errorf("pod seccompProfile is not RuntimeDefault")
				}
				if tpl.Spec.HostNetwork || tpl.Spec.HostPID || tpl.Spec.HostIPC {
					t.Errorf("pod uses host namespaces")
				}
				emptyDirs := map[string]bool{}
				for _, v := range tpl.Spec.Volumes {
					if v.EmptyDir != nil {
						emptyDirs[v.Name] = true
					}
					if v.HostPath != nil {
						t.Errorf("volume %s is a hostPath", v.Name)
					}
				}
				for _, c := range append(slices.Clone(tpl.Spec.InitContainers), tpl.Spec.Containers...) {
					checkRestricted(t, c)
					// Read-only root: the image points SQLITE_TMPDIR/TMPDIR at /tmp.
					tmp := false
					for _, m := range c.VolumeMounts {
						if m.MountPath == "/tmp" && emptyDirs[m.Name] {
							tmp = true
						}
					}
					if !tmp {
						t.Errorf("container %s: no emptyDir mounted at /tmp (read-only root filesystem)", c.Name)
					}
				}
			})
		}
	}
}

func checkRestricted(t *testing.T, c corev1.Container) {
	t.Helper()
	sc := c.SecurityContext
	if sc == nil {
		t.Errorf("container %s: no securityContext", c.Name)
		return
	}
	isTrue := func(b *bool) bool { return b != nil && *b }
	isFalse := func(b *bool) bool { return b != nil && !*b }
	for _, check := range []struct {
		what string
		ok   bool
	}{
		{"runAsNonRoot: true", isTrue(sc.RunAsNonRoot)},
		{"runAsUser: 65532", sc.RunAsUser != nil && *sc.RunAsUser == 65532},
		{"allowPrivilegeEscalation: false", isFalse(sc.AllowPrivilegeEscalation)},
		{"readOnlyRootFilesystem: true", isTrue(sc.ReadOnlyRootFilesystem)},
		{"privileged not set", sc.Privileged == nil || !*sc.Privileged},
		{"seccompProfile RuntimeDefault", sc.SeccompProfile != nil && sc.SeccompProfile.Type == corev1.SeccompProfileTypeRuntimeDefault},
		{"capabilities drop [ALL], add nothing", sc.Capabilities != nil &&
			slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) && len(sc.Capabilities.Add) == 0},
	} {
		if !check.ok {
			t.Errorf("container %s: securityContext not restricted: want %s", c.Name, check.what)
		}
	}
}

// pinned: repository:tag (not latest) or repository@sha256:digest.
var pinned = regexp.MustCompile(`^[a-z0-9][a-z0-9._/:-]*?(:[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}|@sha256:[0-9a-f]{64})$`)

func TestImagesPinned(t *testing.T) {
	var images []string
	for _, in := range installs(t) {
		for name, tpl := range in.podSpecs() {
			for _, c := range append(slices.Clone(tpl.Spec.InitContainers), tpl.Spec.Containers...) {
				if name == quotaStoreWorkload {
					// Its own image (TestQuotaStore), pinned all the same.
					if !pinned.MatchString(c.Image) || strings.HasSuffix(c.Image, ":latest") || c.ImagePullPolicy != corev1.PullIfNotPresent {
						t.Errorf("%s/%s: image %q %s, want pinned and IfNotPresent", in.Source, name, c.Image, c.ImagePullPolicy)
					}
					continue
				}
				t.Run(in.Source+"/"+name+"/"+c.Name, func(t *testing.T) {
					last := c.Image[strings.LastIndex(c.Image, "/")+1:]
					if !pinned.MatchString(c.Image) || !strings.ContainsAny(last, ":@") {
						t.Errorf("image %q is not pinned (repository:tag or @sha256:digest)", c.Image)
					}
					if strings.HasSuffix(c.Image, ":latest") {
						t.Errorf("image %q uses latest", c.Image)
					}
					if c.ImagePullPolicy != corev1.PullIfNotPresent {
						t.Errorf("imagePullPolicy %q, want IfNotPresent", c.ImagePullPolicy)
					}
				})
				images = append(images, c.Image)
			}
		}
	}
	// One image for everything, tagged with the chart's appVersion by
	// default (make deploy and --set image.tag pick the content tag).
	var chart struct {
		AppVersion string `json:"appVersion"`
	}
	b, err := os.ReadFile(filepath.Join(repo, "charts/llmgw/Chart.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, &chart); err != nil {
		t.Fatal(err)
	}
	slices.Sort(images)
	if images = slices.Compact(images); len(images) != 1 || images[0] != "llmgw:"+chart.AppVersion {
		t.Errorf("images %v, want just llmgw:%s (the chart's appVersion)", images, chart.AppVersion)
	}
}

func TestHelmRefusesLatest(t *testing.T) {
	if _, err := helm("template", "llmgw", "charts/llmgw", "--set", "image.tag=latest"); err == nil ||
		!strings.Contains(err.Error(), "not latest") {
		t.Fatalf("helm template with image.tag=latest: %v, want a refusal", err)
	}
}

func TestServices(t *testing.T) {
	for _, in := range installs(t) {
		t.Run(in.Source, func(t *testing.T) {
			client := in.get(t, "Service", "llmgw-gateway").Obj.(*corev1.Service)
			if client.Spec.ClusterIP == corev1.ClusterIPNone {
				t.Errorf("client Service is headless")
			}
			if len(client.Spec.Ports) != 1 || client.Spec.Ports[0].Port != 80 ||
				client.Spec.Ports[0].TargetPort != intstr.FromString("http") {
				t.Errorf("client Service ports %+v, want only 80 -> http (8080)", client.Spec.Ports)
			}
			for _, p := range client.Spec.Ports {
				if p.Port == 9090 || p.TargetPort.IntValue() == 9090 || p.TargetPort.StrVal == "mgmt" {
					t.Errorf("client Service exposes the management port: %+v", p)
				}
			}

			peers := in.get(t, "Service", "llmgw-gateway-peers").Obj.(*corev1.Service)
			if peers.Spec.ClusterIP != corev1.ClusterIPNone || !peers.Spec.PublishNotReadyAddresses {
				t.Errorf("peer Service: clusterIP %q publishNotReadyAddresses %v, want None and true",
					peers.Spec.ClusterIP, peers.Spec.PublishNotReadyAddresses)
			}
			var ports []int32
			for _, p := range peers.Spec.Ports {
				ports = append(ports, p.Port)
			}
			if !slices.Equal(ports, []int32{8080, 9090}) {
				t.Errorf("peer Service ports %v, want [8080 9090]", ports)
			}

			// Every Service and the PDB select pods of exactly one workload,
			// whose container has the named target ports.
			sts := in.get(t, "StatefulSet", "llmgw-gateway").Obj.(*appsv1.StatefulSet)
			for _, s := range in.ofKind("Service") {
				svc := s.Obj.(*corev1.Service)
				tpl := selected(t, in, s.key(), labels.SelectorFromSet(svc.Spec.Selector))
				for _, p := range svc.Spec.Ports {
					if !hasPort(tpl, p.TargetPort) {
						t.Errorf("%s: targetPort %s is no container port of the selected pods", s.key(), p.TargetPort.String())
					}
				}
			}
			pdb := in.get(t, "PodDisruptionBudget", "llmgw-gateway").Obj.(*policyv1.PodDisruptionBudget)
			if pdb.Spec.MaxUnavailable == nil || *pdb.Spec.MaxUnavailable != intstr.FromInt32(1) || pdb.Spec.MinAvailable != nil {
				t.Errorf("PDB: maxUnavailable %v minAvailable %v, want 1 and unset", pdb.Spec.MaxUnavailable, pdb.Spec.MinAvailable)
			}
			if !reflect.DeepEqual(pdb.Spec.Selector, sts.Spec.Selector) {
				t.Errorf("PDB selector %v, want the StatefulSet's %v", pdb.Spec.Selector, sts.Spec.Selector)
			}
			if sts.Spec.ServiceName != peers.Name {
				t.Errorf("StatefulSet serviceName %q, want %q", sts.Spec.ServiceName, peers.Name)
			}
		})
	}
}

func selected(t *testing.T, in install, what string, sel labels.Selector) corev1.PodTemplateSpec {
	t.Helper()
	var hits []string
	var tpl corev1.PodTemplateSpec
	for name, p := range in.podSpecs() {
		if sel.Matches(labels.Set(p.Labels)) {
			hits, tpl = append(hits, name), p
		}
	}
	if len(hits) != 1 {
		t.Errorf("%s: selector %s matches the pods of %v, want exactly one workload", what, sel, hits)
	}
	return tpl
}

func hasPort(tpl corev1.PodTemplateSpec, target intstr.IntOrString) bool {
	for _, c := range tpl.Spec.Containers {
		for _, p := range c.Ports {
			if (target.Type == intstr.String && p.Name == target.StrVal) || (target.Type == intstr.Int && p.ContainerPort == target.IntVal) {
				return true
			}
		}
	}
	return false
}

func TestGatewayStatefulSet(t *testing.T) {
	for _, in := range installs(t) {
		t.Run(in.Source, func(t *testing.T) {
			sts := in.get(t, "StatefulSet", "llmgw-gateway").Obj.(*appsv1.StatefulSet)
			if sts.Spec.Replicas == nil || *sts.Spec.Replicas != 2 {
				t.Fatalf("replicas %v, want 2", sts.Spec.Replicas)
			}
			if len(sts.Spec.VolumeClaimTemplates) != 1 {
				t.Fatalf("%d volumeClaimTemplates, want 1", len(sts.Spec.VolumeClaimTemplates))
			}
			vct := sts.Spec.VolumeClaimTemplates[0]
			if !slices.Equal(vct.Spec.AccessModes, []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}) {
				t.Errorf("volumeClaimTemplate accessModes %v, want [ReadWriteOnce]", vct.Spec.AccessModes)
			}
			if vct.Spec.StorageClassName != nil {
				t.Errorf("storageClassName %q set: leave it to the cluster's default class", *vct.Spec.StorageClassName)
			}
			if _, ok := vct.Spec.Resources.Requests[corev1.ResourceStorage]; !ok {
				t.Errorf("volumeClaimTemplate requests no storage")
			}
			c := sts.Spec.Template.Spec.Containers[0]
			for _, arg := range []string{"gateway", "--kubernetes", "--addr=0.0.0.0:8080", "--mgmt-addr=0.0.0.0:9090",
				"--db=/var/lib/llmgw/usage.db", "--peer-token-file=/etc/llmgw/peer/token",
				"--peers-service=" + sts.Spec.ServiceName} {
				if !slices.Contains(c.Args, arg) {
					t.Errorf("args %v lack %s", c.Args, arg)
				}
			}
			checkElasticGateway(t, sts)
			mounts := map[string]corev1.VolumeMount{}
			for _, m := range c.VolumeMounts {
				mounts[m.Name] = m
			}
			if m := mounts[vct.Name]; m.MountPath != "/var/lib/llmgw" {
				t.Errorf("claim %s mounted at %q, want /var/lib/llmgw (the --db directory)", vct.Name, m.MountPath)
			}
			if m := mounts["peer-token"]; m.MountPath != "/etc/llmgw/peer" || !m.ReadOnly {
				t.Errorf("peer token mount %+v, want /etc/llmgw/peer read-only", m)
			}
			checkSecretVolume(t, sts.Spec.Template.Spec, "peer-token", "llmgw-gateway-peer", "token")
			if e := env(c, "POD_NAMESPACE"); e == nil || e.ValueFrom == nil || e.ValueFrom.FieldRef == nil ||
				e.ValueFrom.FieldRef.FieldPath != "metadata.namespace" {
				t.Errorf("POD_NAMESPACE is not from the downward API: %+v", e)
			}
			checkGoMemLimit(t, c)
			probe := func(p *corev1.Probe, path string) {
				t.Helper()
				if p == nil || p.HTTPGet == nil || p.HTTPGet.Path != path || p.HTTPGet.Port != intstr.FromString("http") {
					t.Errorf("probe %+v, want GET %s on the data port", p, path)
				}
			}
			probe(c.ReadinessProbe, "/readyz")
			probe(c.LivenessProbe, "/healthz") // the process alone, not the API server
		})
	}
}

func TestControllerDeployment(t *testing.T) {
	for _, in := range installs(t) {
		t.Run(in.Source, func(t *testing.T) {
			d := in.get(t, "Deployment", "llmgw-controller").Obj.(*appsv1.Deployment)
			spec := d.Spec.Template.Spec
			if spec.ServiceAccountName != "llmgw-controller" {
				t.Errorf("serviceAccountName %q", spec.ServiceAccountName)
			}
			c := spec.Containers[0]
			if len(c.Args) < 2 || c.Args[0] != "controller" || !slices.Contains(c.Args, "--leader-elect") {
				t.Errorf("args %v, want controller --leader-elect ...", c.Args)
			}
			if c.LivenessProbe == nil || c.LivenessProbe.HTTPGet == nil || c.LivenessProbe.HTTPGet.Path != "/healthz" ||
				c.ReadinessProbe == nil || c.ReadinessProbe.HTTPGet == nil || c.ReadinessProbe.HTTPGet.Path != "/readyz" {
				t.Errorf("probes: liveness %+v readiness %+v", c.LivenessProbe, c.ReadinessProbe)
			}
			ports := map[string]int32{}
			for _, p := range c.Ports {
				ports[p.Name] = p.ContainerPort
			}
			if ports["probes"] != 8081 || ports["metrics"] != 8443 ||
				!slices.Contains(c.Args, "--health-probe-bind-address=:8081") || !slices.Contains(c.Args, "--metrics-bind-address=:8443") ||
				slices.Contains(c.Args, "--metrics-insecure") {
				t.Errorf("ports %v / args %v: want probes 8081 and authenticated HTTPS metrics 8443 matching the flags", ports, c.Args)
			}
			if c.Resources.Requests.Cpu().IsZero() || c.Resources.Limits.Memory().IsZero() {
				t.Errorf("resources %+v: want requests and limits", c.Resources)
			}
		})
	}
}

func TestMockProviders(t *testing.T) {
	for _, in := range installs(t) {
		for _, tc := range []struct {
			name, flavor string
			port         int32
			keySecret    string
		}{
			{"mock-alpha", "alpha", 9001, ""},
			{"mock-beta", "beta", 9002, "mock-beta-upstream"},
		} {
			t.Run(in.Source+"/"+tc.name, func(t *testing.T) {
				d := in.get(t, "Deployment", tc.name).Obj.(*appsv1.Deployment)
				svc := in.get(t, "Service", tc.name).Obj.(*corev1.Service)
				if len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].Port != tc.port {
					t.Errorf("Service ports %+v, want %d", svc.Spec.Ports, tc.port)
				}
				c := d.Spec.Template.Spec.Containers[0]
				for _, arg := range []string{"mockprovider", "--flavor=" + tc.flavor, "--addr=0.0.0.0:" + itoa(tc.port)} {
					if !slices.Contains(c.Args, arg) {
						t.Errorf("args %v lack %s", c.Args, arg)
					}
				}
				keyArg := slices.IndexFunc(c.Args, func(a string) bool { return strings.HasPrefix(a, "--require-key-file=") })
				if tc.keySecret == "" {
					if keyArg >= 0 {
						t.Errorf("alpha requires a key: %v", c.Args)
					}
					return
				}
				if keyArg < 0 || c.Args[keyArg] != "--require-key-file=/etc/llmgw/upstream/apiKey" {
					t.Fatalf("args %v: want --require-key-file=/etc/llmgw/upstream/apiKey", c.Args)
				}
				checkSecretVolume(t, d.Spec.Template.Spec, "upstream-key", tc.keySecret, "apiKey")
			})
		}
	}
}

// checkGoMemLimit: the gateway's Go runtime has a soft memory limit below
// the container's (80 to 95% of it), room left for what the runtime does not
// count.
func checkGoMemLimit(t *testing.T, c corev1.Container) {
	t.Helper()
	e, lim := env(c, "GOMEMLIMIT"), c.Resources.Limits.Memory()
	if e == nil || e.Value == "" || lim.IsZero() {
		t.Errorf("GOMEMLIMIT %+v with memory limit %v: want both set", e, lim)
		return
	}
	q, err := resource.ParseQuantity(strings.TrimSuffix(e.Value, "B")) // Go's "460MiB" is Kubernetes' "460Mi"
	if err != nil {
		t.Errorf("GOMEMLIMIT %q: %v", e.Value, err)
		return
	}
	if q.Value() < lim.Value()*80/100 || q.Value() > lim.Value()*95/100 {
		t.Errorf("GOMEMLIMIT %s against a memory limit of %s: want 80 to 95%% of it", e.Value, lim)
	}
}

func itoa(n int32) string { b, _ := yaml.Marshal(n); return strings.TrimSpace(string(b)) }

func env(c corev1.Container, name string) *corev1.EnvVar {
	for i := range c.Env {
		if c.Env[i].Name == name {
			return &c.Env[i]
		}
	}
	return nil
}

func checkSecretVolume(t *testing.T, spec corev1.PodSpec, volume, secret, key string) {
	t.Helper()
	for _, v := range spec.Volumes {
		if v.Name != volume {
			continue
		}
		if v.Secret == nil || v.Secret.SecretName != secret || len(v.Secret.Items) != 1 || v.Secret.Items[0].Key != key {
			t.Errorf("volume %s: %+v, want key %s of Secret %s", volume, v.VolumeSource, key, secret)
		}
		return
	}
	t.Errorf("no volume %s", volume)
}

// TestChartCopiesOfGeneratedFiles: the chart's CRDs and Roles are byte copies
// of config/ (make chart-sync, make verify-chart), and both installs install
// exactly them.
func TestChartCopiesOfGeneratedFiles(t *testing.T) {
	bases, err := filepath.Glob(filepath.Join(repo, "config/crd/bases/*.yaml"))
	if err != nil || len(bases) == 0 {
		t.Fatalf("no CRDs in config/crd/bases (%v)", err)
	}
	copies, _ := filepath.Glob(filepath.Join(repo, "charts/llmgw/crds/*.yaml"))
	base := func(p []string) []string {
		var out []string
		for _, f := range p {
			out = append(out, filepath.Base(f))
		}
		return out
	}
	if !slices.Equal(base(bases), base(copies)) {
		t.Errorf("charts/llmgw/crds %v != config/crd/bases %v: make chart-sync", base(copies), base(bases))
	}
	pairs := [][2]string{
		{"config/rbac/role.yaml", "charts/llmgw/files/controller-role.yaml"},
		{"config/rbac/gateway_role.yaml", "charts/llmgw/files/gateway-role.yaml"},
		{"config/rbac/watched_namespace/role.yaml", "charts/llmgw/files/watched-namespace-role.yaml"},
		{"config/rbac/watched_namespace/role_binding.yaml", "charts/llmgw/files/watched-namespace-role-binding.yaml"},
	}
	for _, f := range base(bases) {
		pairs = append(pairs, [2]string{"config/crd/bases/" + f, "charts/llmgw/crds/" + f})
	}
	for _, p := range pairs {
		t.Run(p[1], func(t *testing.T) {
			a, err1 := os.ReadFile(filepath.Join(repo, p[0]))
			b, err2 := os.ReadFile(filepath.Join(repo, p[1]))
			if err1 != nil || err2 != nil {
				t.Fatalf("%v %v", err1, err2)
			}
			if !bytes.Equal(a, b) {
				t.Errorf("%s is not a copy of %s: make chart-sync", p[1], p[0])
			}
		})
	}

	for _, in := range installs(t) {
		t.Run(in.Source+"/CRDs", func(t *testing.T) {
			for _, f := range bases {
				var want apiextensionsv1.CustomResourceDefinition
				readYAML(t, filepath.Join("config/crd/bases", filepath.Base(f)), &want)
				got := in.get(t, "CustomResourceDefinition", want.Name).Obj.(*apiextensionsv1.CustomResourceDefinition)
				if !reflect.DeepEqual(got.Spec, want.Spec) {
					t.Errorf("CRD %s differs from config/crd/bases:\n%s", want.Name, diffYAML(want.Spec, got.Spec))
				}
			}
		})
		for _, tc := range []struct{ file, role string }{
			{"config/rbac/role.yaml", "llmgw-controller"},
			{"config/rbac/gateway_role.yaml", "llmgw-gateway"},
		} {
			t.Run(in.Source+"/"+tc.role, func(t *testing.T) {
				var want rbacv1.Role
				readYAML(t, tc.file, &want)
				got := in.get(t, "Role", tc.role).Obj.(*rbacv1.Role)
				if want.Name != tc.role || !reflect.DeepEqual(got.Rules, want.Rules) {
					t.Errorf("Role %s differs from %s:\n%s", tc.role, tc.file, diffYAML(want.Rules, got.Rules))
				}
			})
		}
	}
}

// TestNoCommittedSecretValues: the kustomize tree carries no Secret (make
// deploy generates them); the chart generates each at install time.
func TestNoCommittedSecretValues(t *testing.T) {
	k := renderKustomize(t)
	for _, s := range k.ofKind("Secret") {
		t.Errorf("kustomize output contains %s: a committed credential; generate it at install time", s.key())
	}
	for _, cm := range k.ofKind("ConfigMap") {
		for key := range cm.Obj.(*corev1.ConfigMap).Data {
			if regexp.MustCompile(`(?i)token|key|secret|password`).MatchString(key) {
				t.Errorf("%s has a data key %q that looks like a credential", cm.key(), key)
			}
		}
	}

	// Two renders without a cluster (lookup finds nothing) must generate two
	// different random values: nothing comes from the chart's files.
	first := renderHelm(t)
	second := renderHelm(t, "--set", "gateway.replicas=2") // same values, a separate render
	for name, key := range generatedSecrets {
		t.Run("helm/"+name, func(t *testing.T) {
			a := first.get(t, "Secret", name).Obj.(*corev1.Secret)
			b := second.get(t, "Secret", name).Obj.(*corev1.Secret)
			if len(a.StringData) != 0 || len(a.Data) != 1 {
				t.Fatalf("Secret %s: data keys %v stringData %v, want only %s", name, slices.Sorted(maps.Keys(a.Data)), a.StringData, key)
			}
			va, vb := a.Data[key], b.Data[key]
			if len(va) < 32 || !regexp.MustCompile(`^[A-Za-z0-9]+$`).Match(va) {
				t.Errorf("Secret %s key %s: %d bytes, want a random alphanumeric value of at least 32", name, key, len(va))
			}
			if bytes.Equal(va, vb) {
				t.Errorf("Secret %s key %s is the same in two renders: not generated", name, key)
			}
		})
	}
	values, err := os.ReadFile(filepath.Join(repo, "charts/llmgw/values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range first.ofKind("Secret") {
		for _, v := range s.Obj.(*corev1.Secret).Data {
			if bytes.Contains(values, v) || bytes.Contains(values, []byte(base64.StdEncoding.EncodeToString(v))) {
				t.Errorf("%s value found in values.yaml", s.key())
			}
		}
	}
}

func TestHelmValues(t *testing.T) {
	for _, tc := range []struct {
		name  string
		set   []string
		check func(t *testing.T, in install)
	}{
		{"mocks disabled", []string{"mocks.enabled=false"}, func(t *testing.T, in install) {
			for _, k := range in.keys() {
				if strings.Contains(k, "mock-") {
					t.Errorf("%s installed with mocks.enabled=false", k)
				}
			}
			in.get(t, "Secret", "llmgw-gateway-peer")
		}},
		{"gateway replicas, storage, image", []string{"gateway.replicas=3", "gateway.storage.size=5Gi",
			"gateway.storage.className=fast", "image.repository=registry.example/llmgw", "image.tag=0.1.0-abcdef123456",
			"image.pullPolicy=Always"}, func(t *testing.T, in install) {
			sts := in.get(t, "StatefulSet", "llmgw-gateway").Obj.(*appsv1.StatefulSet)
			vct := sts.Spec.VolumeClaimTemplates[0].Spec
			if v, ok := flagValue(sts.Spec.Template.Spec.Containers[0].Args, "replicas"); ok {
				t.Errorf("--replicas=%s: the gateways find the peer set in the StatefulSet, no flag repeats it", v)
			}
			if *sts.Spec.Replicas != 3 || vct.StorageClassName == nil || *vct.StorageClassName != "fast" ||
				vct.Resources.Requests.Storage().String() != "5Gi" {
				t.Errorf("replicas %d class %v size %v", *sts.Spec.Replicas, vct.StorageClassName, vct.Resources.Requests.Storage())
			}
			for name, tpl := range in.podSpecs() {
				c := tpl.Spec.Containers[0]
				if name == quotaStoreWorkload {
					continue // quotaStore.image
				}
				if c.Image != "registry.example/llmgw:0.1.0-abcdef123456" || c.ImagePullPolicy != corev1.PullAlways {
					t.Errorf("%s: image %s %s", name, c.Image, c.ImagePullPolicy)
				}
			}
		}},
		{"digest", []string{"image.digest=sha256:" + strings.Repeat("ab", 32)}, func(t *testing.T, in install) {
			c := in.get(t, "Deployment", "llmgw-controller").Obj.(*appsv1.Deployment).Spec.Template.Spec.Containers[0]
			if c.Image != "llmgw@sha256:"+strings.Repeat("ab", 32) {
				t.Errorf("image %s", c.Image)
			}
		}},
		{"flags", []string{"gateway.drainTimeout=45s", "gateway.handoffTimeout=2m", "gateway.terminationGracePeriodSeconds=175",
			"gateway.credentialRefresh=1m", "gateway.logLevel=debug",
			"controller.debounce=1s", "controller.debounceMax=5s"}, func(t *testing.T, in install) {
			sts := in.get(t, "StatefulSet", "llmgw-gateway").Obj.(*appsv1.StatefulSet)
			g := sts.Spec.Template.Spec.Containers[0].Args
			c := in.get(t, "Deployment", "llmgw-controller").Obj.(*appsv1.Deployment).Spec.Template.Spec.Containers[0].Args
			if p := sts.Spec.Template.Spec.TerminationGracePeriodSeconds; p == nil || *p != 175 {
				t.Errorf("terminationGracePeriodSeconds %s, want 175", deref(p))
			}
			for _, want := range []string{"--drain-timeout=45s", "--handoff-timeout=2m", "--credential-refresh=1m", "--log-level=debug"} {
				if !slices.Contains(g, want) {
					t.Errorf("gateway args %v lack %s", g, want)
				}
			}
			for _, want := range []string{"--debounce=1s", "--debounce-max=5s"} {
				if !slices.Contains(c, want) {
					t.Errorf("controller args %v lack %s", c, want)
				}
			}
		}},
		{"no GOMEMLIMIT", []string{"gateway.goMemLimit="}, func(t *testing.T, in install) {
			c := in.get(t, "StatefulSet", "llmgw-gateway").Obj.(*appsv1.StatefulSet).Spec.Template.Spec.Containers[0]
			if e := env(c, "GOMEMLIMIT"); e != nil {
				t.Errorf("GOMEMLIMIT %+v set with gateway.goMemLimit empty", e)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var args []string
			for _, s := range tc.set {
				args = append(args, "--set", s)
			}
			tc.check(t, renderHelm(t, args...))
		})
	}
}

// TestSamplesApplyAsDirectory: `kubectl apply -f config/samples/` applies
// every .yaml there, so each must be an llmgw.dev object (no Kustomization),
// in the namespace the installs use.
func TestSamplesApplyAsDirectory(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(repo, "config/samples/*"))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, f := range files {
		if ext := filepath.Ext(f); ext != ".yaml" && ext != ".yml" && ext != ".json" {
			continue
		}
		n++
		t.Run(filepath.Base(f), func(t *testing.T) {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			var head struct {
				APIVersion string `json:"apiVersion"`
				Kind       string `json:"kind"`
				Metadata   struct {
					Namespace string `json:"namespace"`
				} `json:"metadata"`
			}
			if err := yaml.Unmarshal(b, &head); err != nil {
				t.Fatal(err)
			}
			if head.APIVersion != v1alpha1.GroupVersion.String() {
				t.Errorf("apiVersion %q kind %q: `kubectl apply -f config/samples/` would fail on it", head.APIVersion, head.Kind)
			}
			if head.Metadata.Namespace != namespace {
				t.Errorf("namespace %q, want %s", head.Metadata.Namespace, namespace)
			}
		})
	}
	if n == 0 {
		t.Fatal("no samples")
	}
}

// TestBetaSampleUsesGeneratedKey: the sample ProviderEndpoint beta must send
// the key mock-beta requires, i.e. reference the generated Secret.
func TestBetaSampleUsesGeneratedKey(t *testing.T) {
	var pe v1alpha1.ProviderEndpoint
	readYAML(t, "config/samples/llmgw_v1alpha1_providerendpoint_beta.yaml", &pe)
	if pe.Spec.Credential == nil {
		t.Skip("config/samples/llmgw_v1alpha1_providerendpoint_beta.yaml has no spec.credential yet: " +
			"it needs credential.secretRef {name: mock-beta-upstream, key: apiKey} to pass mock-beta's key check")
	}
	if ref := pe.Spec.Credential.SecretRef; ref.Name != "mock-beta-upstream" || ref.Key != generatedSecrets[ref.Name] {
		t.Errorf("beta credential %+v, want Secret mock-beta-upstream key apiKey", ref)
	}
}
