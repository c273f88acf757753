package controllers

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/yaml"

	"github.com/llmgw/llmgw/api/v1alpha1"
)

// TestCompileServiceRefs names the promises of testdata/services.yaml (the
// golden files hold the whole picture).
func TestCompileServiceRefs(t *testing.T) {
	in := loadInputs(t, "testdata/services.yaml")
	snap, st := Compile(in)
	served := map[string]bool{}
	for _, p := range snap.Providers {
		served[p.Name] = true
	}
	aliases := map[string]string{}
	for _, a := range snap.Aliases {
		aliases[a.Name] = a.Primary.Provider
	}
	p := st.Providers
	cases := []struct {
		name      string
		got, want any
	}{
		{"the Service with the port: served", []any{p["in-cluster"].ResolvedRefs.Status, served["in-cluster"]}, []any{true, true}},
		{"with a credential too", []any{p["in-cluster-tls"].ResolvedRefs.Message, served["in-cluster-tls"]}, []any{`Secret "vendor" has key "apiKey"`, true}},
		{"no such Service: not served", []any{p["no-service"].ResolvedRefs.Reason, p["no-service"].InSnapshot, served["no-service"]}, []any{v1alpha1.ReasonServiceNotFound, false, false}},
		{"the Service lacks the port", []any{p["wrong-port"].ResolvedRefs.Reason, p["wrong-port"].ResolvedRefs.Message, served["wrong-port"]},
			[]any{v1alpha1.ReasonServicePortNotFound, `Service "other" has no port 8080; it has [80 443]`, false}},
		{"neither Service nor Secret: both said, the first one's reason", []any{p["nothing-resolves"].ResolvedRefs.Reason, p["nothing-resolves"].ResolvedRefs.Message},
			[]any{v1alpha1.ReasonServiceNotFound, `Service "ghost" not found in the namespace; Secret "nowhere" not found`}},
		{"a resolved Service does not hide a missing key", p["key-missing"].ResolvedRefs.Reason, v1alpha1.ReasonSecretKeyNotFound},
		{"an alias whose primary's Service is missing serves through its fallback", aliases["falls-back"], "in-cluster-tls"},
		{"and says why", st.Aliases["falls-back"].ResolvedRefs.Message, `primary no-service/m1: ProviderEndpoint "no-service" is not ready (ServiceNotFound); the alias is served through the other 1 of its 2 routes`},
		{"an alias with no resolving route is not served", st.Aliases["unserved"].InSnapshot, false},
	}
	for _, c := range cases {
		if !reflect.DeepEqual(c.got, c.want) {
			t.Errorf("%s: got %#v, want %#v", c.name, c.got, c.want)
		}
	}

	// A nil map is a namespace without Services, not "unknown, assume
	// present": the pure function has no special case for it.
	in.Services = nil
	_, st = Compile(in)
	for name, r := range st.Providers {
		if got := r.ResolvedRefs.Reason; got != v1alpha1.ReasonServiceNotFound {
			t.Errorf("without Services, provider %s: ResolvedRefs %s, want %s", name, got, v1alpha1.ReasonServiceNotFound)
		}
		if r.InSnapshot {
			t.Errorf("without Services, provider %s is served", name)
		}
	}
}

func TestServicePorts(t *testing.T) {
	s := &corev1.Service{Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{
		{Port: 9002, Protocol: corev1.ProtocolTCP}, {Port: 53, Protocol: corev1.ProtocolUDP}, {Port: 53, Protocol: corev1.ProtocolTCP},
	}}}
	if got, want := servicePorts(s), []int32{53, 9002}; !reflect.DeepEqual(got, want) {
		t.Fatalf("servicePorts = %v, want %v", got, want)
	}
	if got := servicePorts(&corev1.Service{}); len(got) != 0 {
		t.Fatalf("a Service without ports has ports %v", got)
	}
}

func TestStripService(t *testing.T) {
	in := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "n", UID: types.UID("u"), ResourceVersion: "7",
			Labels:      map[string]string{"app": "x"},
			Annotations: map[string]string{lastApplied: `{"spec":{}}`}},
		Spec: corev1.ServiceSpec{
			Selector:  map[string]string{"app": "x"},
			ClusterIP: "10.0.0.1",
			Ports:     []corev1.ServicePort{{Name: "http", Port: 9001, Protocol: corev1.ProtocolTCP, NodePort: 30001}},
		},
	}
	out, err := stripService(in)
	if err != nil {
		t.Fatal(err)
	}
	s := out.(*corev1.Service)
	if s.Name != "s" || s.Namespace != "n" || s.UID != "u" || s.ResourceVersion != "7" {
		t.Fatalf("identity lost: %+v", s.ObjectMeta)
	}
	if got := servicePorts(s); !reflect.DeepEqual(got, []int32{9001}) {
		t.Fatalf("servicePorts of the stripped Service: %v, want [9001]", got)
	}
	if s.Labels != nil || s.Annotations != nil || s.Spec.Selector != nil || s.Spec.ClusterIP != "" || s.Spec.Ports[0].NodePort != 0 {
		t.Fatalf("kept what is never read: %+v", s)
	}
	if in.Spec.ClusterIP == "" {
		t.Fatal("the informer's object was modified")
	}
	if _, err := stripService("tombstone"); err != nil {
		t.Fatal(err)
	}
}

// TestMockServicesMatchConfigMocks: the samples case stands in for
// config/mocks' Services with testdata/samples/mock-services.yaml, so the
// two must name the same Services with the same ports; else a changed mock
// port would leave the shipped samples unresolved while the tests pass.
func TestMockServicesMatchConfigMocks(t *testing.T) {
	mocks, err := filepath.Glob("../config/mocks/*.yaml")
	if err != nil || len(mocks) == 0 {
		t.Fatalf("no config/mocks: %v", err)
	}
	want := map[string][]int32{}
	for _, p := range mocks {
		for name, ports := range servicesIn(t, p) {
			want[name] = ports
		}
	}
	got := servicesIn(t, mockServicesPath)
	if len(want) < 2 {
		t.Fatalf("config/mocks has Services %v, want mock-alpha and mock-beta at least", want)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%s has Services %v, config/mocks has %v", mockServicesPath, got, want)
	}
}

// servicesIn maps the name of each Service in a multi-document YAML file to
// its ports.
func servicesIn(t *testing.T, path string) map[string][]int32 {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]int32{}
	for i, doc := range strings.Split(string(raw), "\n---") {
		var head struct{ Kind string }
		if err := yaml.Unmarshal([]byte(doc), &head); err != nil {
			t.Fatalf("%s doc %d: %v", path, i, err)
		}
		if head.Kind != "Service" {
			continue
		}
		var s corev1.Service
		if err := yaml.UnmarshalStrict([]byte(doc), &s); err != nil {
			t.Fatalf("%s doc %d: %v", path, i, err)
		}
		out[s.Name] = servicePorts(&s)
	}
	return out
}
