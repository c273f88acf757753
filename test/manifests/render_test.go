// Package manifests tests the rendered installs of llmgw, with no cluster:
// the kustomize tree config/default and the Helm chart charts/llmgw.
package manifests

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"
)

// repo is the repository root, relative to this package.
const repo = "../.."

// namespace is where both installs put everything namespaced.
const namespace = "llmgw-system"

// object is one decoded document of a rendered install.
type object struct {
	Kind, Name, Namespace string
	Labels                map[string]string
	Raw                   []byte
	// Obj is the typed object (e.g. *appsv1.Deployment), decoded strictly:
	// an unknown or misspelled field fails the test.
	Obj any
}

// key is kind/name, or kind/namespace/name for an object outside the
// install's namespace (the Roles of watched namespaces share one name).
func (o object) key() string {
	if o.Namespace != "" && o.Namespace != namespace {
		return o.Kind + "/" + o.Namespace + "/" + o.Name
	}
	return o.Kind + "/" + o.Name
}

// install is a rendered install, by kind/name.
type install struct {
	Source  string
	Objects map[string]object
}

func (in install) get(t *testing.T, kind, name string) object {
	t.Helper()
	o, ok := in.Objects[kind+"/"+name]
	if !ok {
		t.Fatalf("%s: no %s/%s among %v", in.Source, kind, name, in.keys())
	}
	return o
}

func (in install) keys() []string {
	var k []string
	for n := range in.Objects {
		k = append(k, n)
	}
	sort.Strings(k)
	return k
}

func (in install) ofKind(kind string) []object {
	var out []object
	for _, k := range in.keys() {
		if o := in.Objects[k]; o.Kind == kind {
			out = append(out, o)
		}
	}
	return out
}

// podSpecs: every pod template of the install's workloads, by kind/name.
func (in install) podSpecs() map[string]corev1.PodTemplateSpec {
	out := map[string]corev1.PodTemplateSpec{}
	for _, k := range in.keys() {
		switch o := in.Objects[k].Obj.(type) {
		case *appsv1.Deployment:
			out[k] = o.Spec.Template
		case *appsv1.StatefulSet:
			out[k] = o.Spec.Template
		case *appsv1.DaemonSet:
			out[k] = o.Spec.Template
		}
	}
	return out
}

// typed returns an empty typed object for a kind, or nil for a kind these
// installs must not contain.
func typed(kind string) any {
	switch kind {
	case "Namespace":
		return &corev1.Namespace{}
	case "ServiceAccount":
		return &corev1.ServiceAccount{}
	case "Secret":
		return &corev1.Secret{}
	case "ConfigMap":
		return &corev1.ConfigMap{}
	case "Service":
		return &corev1.Service{}
	case "Deployment":
		return &appsv1.Deployment{}
	case "StatefulSet":
		return &appsv1.StatefulSet{}
	case "DaemonSet":
		return &appsv1.DaemonSet{}
	case "PodDisruptionBudget":
		return &policyv1.PodDisruptionBudget{}
	case "HorizontalPodAutoscaler":
		return &autoscalingv2.HorizontalPodAutoscaler{}
	case "Role":
		return &rbacv1.Role{}
	case "ValidatingAdmissionPolicy":
		return &admissionregistrationv1.ValidatingAdmissionPolicy{}
	case "ValidatingAdmissionPolicyBinding":
		return &admissionregistrationv1.ValidatingAdmissionPolicyBinding{}
	case "RoleBinding":
		return &rbacv1.RoleBinding{}
	case "ClusterRole":
		return &rbacv1.ClusterRole{}
	case "ClusterRoleBinding":
		return &rbacv1.ClusterRoleBinding{}
	case "CustomResourceDefinition":
		return &apiextensionsv1.CustomResourceDefinition{}
	case "NetworkPolicy":
		return &networkingv1.NetworkPolicy{}
	case "ServiceMonitor":
		return &serviceMonitor{}
	case "PrometheusRule":
		return &prometheusRule{}
	}
	return nil
}

// decode splits a multi-document YAML stream and decodes every non-empty
// document into its typed k8s.io/api object.
func decode(source string, stream []byte) (install, error) {
	in := install{Source: source, Objects: map[string]object{}}
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(stream)))
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return in, fmt.Errorf("%s: reading YAML: %w", source, err)
		}
		var head struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
			Metadata   struct {
				Name      string            `json:"name"`
				Namespace string            `json:"namespace"`
				Labels    map[string]string `json:"labels"`
			} `json:"metadata"`
		}
		if err := yaml.Unmarshal(doc, &head); err != nil {
			return in, fmt.Errorf("%s: %w in\n%s", source, err, doc)
		}
		if head.Kind == "" && head.APIVersion == "" {
			continue // only comments
		}
		obj := typed(head.Kind)
		if obj == nil {
			return in, fmt.Errorf("%s: unexpected kind %s (%s)", source, head.Kind, head.Metadata.Name)
		}
		if err := yaml.UnmarshalStrict(doc, obj); err != nil {
			return in, fmt.Errorf("%s: %s/%s: %w", source, head.Kind, head.Metadata.Name, err)
		}
		o := object{Kind: head.Kind, Name: head.Metadata.Name, Namespace: head.Metadata.Namespace,
			Labels: head.Metadata.Labels, Raw: doc, Obj: obj}
		if _, dup := in.Objects[o.key()]; dup {
			return in, fmt.Errorf("%s: %s twice", source, o.key())
		}
		in.Objects[o.key()] = o
	}
	return in, nil
}

// kubectl is a kubectl built from source (hack/k8s/build.sh), or "".
func kubectl() string {
	var globs []string
	if c := os.Getenv("KIND_CACHE"); c != "" {
		globs = append(globs, filepath.Join(c, "k8s", "*", "kubectl"))
	}
	globs = append(globs, filepath.Join(repo, "bin", "k8s", "*", "kubectl"))
	if home, err := os.UserHomeDir(); err == nil {
		cache := os.Getenv("XDG_CACHE_HOME")
		if cache == "" {
			cache = filepath.Join(home, ".cache")
		}
		globs = append(globs, filepath.Join(cache, "llmgw-kind", "k8s", "*", "kubectl"))
	}
	for _, g := range globs {
		m, _ := filepath.Glob(g)
		sort.Sort(sort.Reverse(sort.StringSlice(m))) // newest version first
		for _, p := range m {
			if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
				return p
			}
		}
	}
	return ""
}

var (
	kustomizeOnce sync.Once
	kustomizeOut  install
	kustomizeErr  error
	kustomizeHow  string
)

// renderKustomize renders config/default once per test binary (kustomizeBuild).
func renderKustomize(t *testing.T) install {
	t.Helper()
	kustomizeOnce.Do(func() {
		var out []byte
		out, kustomizeHow, kustomizeErr = kustomizeBuild(filepath.Join(repo, "config", "default"))
		if kustomizeErr == nil {
			kustomizeOut, kustomizeErr = decode("kustomize", out)
		}
	})
	if kustomizeErr != nil {
		t.Fatal(kustomizeErr)
	}
	t.Logf("kustomize rendered with %s", kustomizeHow)
	return kustomizeOut
}

// kustomizeBuild renders the kustomization in dir: with the kubectl built
// from source when there is one (`kubectl kustomize`, what `make deploy`
// runs), else in process with sigs.k8s.io/kustomize/api (the library kubectl
// embeds, in go.mod through Helm). how says which.
func kustomizeBuild(dir string) (out []byte, how string, err error) {
	if k := kubectl(); k != "" {
		how = k + " kustomize " + dir
		var stderr bytes.Buffer
		cmd := exec.Command(k, "kustomize", dir)
		cmd.Stderr = &stderr
		if out, err = cmd.Output(); err != nil {
			return nil, how, fmt.Errorf("%s: %w\n%s", how, err, stderr.String())
		}
		return out, how, nil
	}
	how = "sigs.k8s.io/kustomize/api (krusty) on " + dir + "; no kubectl built from source found"
	m, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		return nil, how, fmt.Errorf("kustomize build %s: %w", dir, err)
	}
	out, err = m.AsYaml()
	return out, how, err
}

// goBin is the go command running these tests (for `go tool helm`).
func goBin() string {
	if p, err := exec.LookPath("go"); err == nil {
		return p
	}
	return filepath.Join(runtime.GOROOT(), "bin", "go") //nolint:staticcheck // SA1019: the toolchain that built this test binary, when go is not on PATH
}

// helm runs `go tool helm ARGS...` (helm.sh/helm/v3 from go.mod) in the repo root.
func helm(args ...string) ([]byte, error) {
	cmd := exec.Command(goBin(), append([]string{"tool", "helm"}, args...)...)
	cmd.Dir = repo
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return out, fmt.Errorf("go tool helm %s: %w\n%s%s", strings.Join(args, " "), err, out, stderr.String())
	}
	return out, nil
}

var helmCache sync.Map // joined args → *helmResult

type helmResult struct {
	once sync.Once
	in   install
	err  error
}

// renderHelm renders the chart as `helm install llmgw -n llmgw-system`
// would, CRDs included, with extra helm template ARGS (e.g. --set k=v).
func renderHelm(t *testing.T, args ...string) install {
	t.Helper()
	v, _ := helmCache.LoadOrStore(strings.Join(args, "\x00"), &helmResult{})
	r := v.(*helmResult)
	r.once.Do(func() {
		out, err := helm(append([]string{"template", "llmgw", "charts/llmgw", "--namespace", namespace, "--include-crds"}, args...)...)
		if err != nil {
			r.err = err
			return
		}
		r.in, r.err = decode("helm", out)
	})
	if r.err != nil {
		t.Fatal(r.err)
	}
	return r.in
}

// installs: both renders with default settings, for table-driven tests.
func installs(t *testing.T) []install {
	t.Helper()
	return []install{renderKustomize(t), renderHelm(t)}
}

// readYAML decodes one YAML file of the repository into v (strictly).
func readYAML(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repo, path))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.UnmarshalStrict(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// diffYAML shows two values as YAML, for failure messages.
func diffYAML(a, b any) string {
	ya, _ := yaml.Marshal(a)
	yb, _ := yaml.Marshal(b)
	return diffText(string(ya), string(yb))
}

// diffText shows the first ten lines where two texts differ.
func diffText(a, b string) string {
	la, lb := strings.Split(a, "\n"), strings.Split(b, "\n")
	var out []string
	for i := 0; i < len(la) || i < len(lb); i++ {
		var x, y string
		if i < len(la) {
			x = la[i]
		}
		if i < len(lb) {
			y = lb[i]
		}
		if x != y {
			out = append(out, fmt.Sprintf("line %d:\n  - %s\n  + %s", i+1, x, y))
			if len(out) == 10 {
				out = append(out, "...")
				break
			}
		}
	}
	return strings.Join(out, "\n")
}
