package manifests

import (
	"reflect"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	rbacv1 "k8s.io/api/rbac/v1"
)

// TestHelmWatchNamespaces: controller.watchNamespaces becomes the
// controller's --watch-namespaces, a Role (config/rbac/watched_namespace) and
// its binding to the controller's ServiceAccount in each namespace, and the
// lists of the llmgw-watched-namespaces policy — all from one value.
func TestHelmWatchNamespaces(t *testing.T) {
	in := renderHelm(t, "--set", "controller.watchNamespaces={team-b,team-a,team-b}")
	args := containerArgs(t, in, "Deployment", "llmgw-controller")
	if v, ok := flagValue(args, "watch-namespaces"); !ok || v != "team-b,team-a" {
		t.Errorf("controller --watch-namespaces = %q (set: %v), want team-b,team-a", v, ok)
	}
	var wantRole rbacv1.Role
	readYAML(t, "config/rbac/watched_namespace/role.yaml", &wantRole)
	for _, ns := range []string{"team-a", "team-b"} {
		role := in.get(t, "Role", ns+"/llmgw-controller-watched").Obj.(*rbacv1.Role)
		if !reflect.DeepEqual(role.Rules, wantRole.Rules) {
			t.Errorf("Role in %s differs from config/rbac/watched_namespace:\n%s", ns, diffYAML(wantRole.Rules, role.Rules))
		}
		rb := in.get(t, "RoleBinding", ns+"/llmgw-controller-watched").Obj.(*rbacv1.RoleBinding)
		if rb.RoleRef.Name != role.Name || len(rb.Subjects) != 1 || rb.Subjects[0].Name != "llmgw-controller" || rb.Subjects[0].Namespace != namespace {
			t.Errorf("RoleBinding in %s: %+v %+v, want the Role bound to %s/llmgw-controller", ns, rb.RoleRef, rb.Subjects, namespace)
		}
	}
	if n := len(in.ofKind("Role")); n != 4 {
		t.Errorf("%d Roles, want the controller's, the gateway's and one per watched namespace (4)", n)
	}
	policy := in.get(t, "ValidatingAdmissionPolicy", "llmgw-watched-namespaces").Obj.(*admissionregistrationv1.ValidatingAdmissionPolicy)
	if len(policy.Spec.Validations) != 2 {
		t.Fatalf("policy validations: %+v", policy.Spec.Validations)
	}
	if got, want := policy.Spec.Validations[0].Expression, "request.namespace in ['llmgw-system', 'team-b', 'team-a']"; got != want {
		t.Errorf("policy expression %q, want %q", got, want)
	}
	if m := policy.Spec.Validations[0].MessageExpression; !strings.Contains(m, "one of the watched namespaces: llmgw-system, team-b, team-a") {
		t.Errorf("policy message does not list the namespaces: %s", m)
	}
	if e := policy.Spec.Validations[1].Expression; e != "request.resource.resource != 'providerendpoints' || request.namespace == 'llmgw-system'" {
		t.Errorf("ProviderEndpoints must stay in the release namespace: %s", e)
	}
}

// TestHelmWatchNamespacesDefault: by default the controller watches its own
// namespace only (no flag, no extra Role), as config/ installs it.
func TestHelmWatchNamespacesDefault(t *testing.T) {
	in := renderHelm(t)
	if v, ok := flagValue(containerArgs(t, in, "Deployment", "llmgw-controller"), "watch-namespaces"); ok {
		t.Errorf("--watch-namespaces=%s with the default values", v)
	}
	if n := len(in.ofKind("Role")); n != 2 {
		t.Errorf("%d Roles with the default values, want 2", n)
	}
}

// TestHelmRefusesBadWatchNamespaces: a name that is no namespace, or the flag
// set behind the Roles' back, fails the render naming the value to fix.
func TestHelmRefusesBadWatchNamespaces(t *testing.T) {
	for _, set := range []string{
		"controller.watchNamespaces={Team_A}",
		"controller.watchNamespaces={team.a}",
		"controller.watchNamespaces={" + strings.Repeat("t", 64) + "}",
		"controller.extraArgs[0]=--watch-namespaces=team-a",
	} {
		t.Run(set[:min(len(set), 50)], func(t *testing.T) {
			t.Parallel()
			_, err := helm("template", "llmgw", "charts/llmgw", "--namespace", namespace, "--set", set)
			if err == nil || !strings.Contains(err.Error(), "controller.watchNamespaces") {
				t.Errorf("--set %s: %v, want a refusal naming controller.watchNamespaces", set, err)
			}
		})
	}
}
