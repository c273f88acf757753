package manifests

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/llmgw/llmgw/api/gatewaystatus"
	"github.com/llmgw/llmgw/api/snapshot"
	"github.com/llmgw/llmgw/controllers"
)

// renamed: the chart's names.* values against the binaries' defaults, which
// are the names config/rbac pins. The new names have dots (a DNS subdomain,
// not just a label) to show the chart does not demand less than the API.
var renamed = []struct{ value, old, new string }{
	{"snapshotConfigMap", snapshot.DefaultConfigMapName, "team-a.snapshot"},
	{"gatewayStatusConfigMap", gatewaystatus.DefaultConfigMapName, "team-a.gateway-status"},
	{"leaderElectionLease", controllers.DefaultLeaderElectionID, "team-a.leader"},
}

// fixedNames: objects the Roles pin that the chart names itself, not through
// names.* (its object names are fixed: one release per namespace).
var fixedNames = map[string]bool{
	"llmgw-gateway": true, // the gateways' StatefulSet, which they watch for their peers
}

func renderRenamed(t *testing.T) install {
	t.Helper()
	var args []string
	for _, r := range renamed {
		args = append(args, "--set", "names."+r.value+"="+r.new)
	}
	return renderHelm(t, args...)
}

// flagValue is what Go's flag package ends up with for --name in args: the
// last occurrence wins. Only the --name=value form counts; a bare --name
// (value in the next argument) is reported as not found.
func flagValue(args []string, name string) (string, bool) {
	value, found := "", false
	for _, a := range args {
		for _, prefix := range []string{"--" + name + "=", "-" + name + "="} {
			if v, ok := strings.CutPrefix(a, prefix); ok {
				value, found = v, true
			}
		}
	}
	return value, found
}

func containerArgs(t *testing.T, in install, kind, name string) []string {
	t.Helper()
	switch o := in.get(t, kind, name).Obj.(type) {
	case *appsv1.Deployment:
		return o.Spec.Template.Spec.Containers[0].Args
	case *appsv1.StatefulSet:
		return o.Spec.Template.Spec.Containers[0].Args
	}
	t.Fatalf("%s/%s is no workload", kind, name)
	return nil
}

// TestHelmNamesReachTheBinaries: names.* become the flags of the controller
// and of the gateways, the same name on both sides of each contract (the
// snapshot's head is also the label value both select its parts by).
func TestHelmNamesReachTheBinaries(t *testing.T) {
	in := renderRenamed(t)
	newName := map[string]string{}
	for _, r := range renamed {
		newName[r.value] = r.new
	}
	for _, tc := range []struct {
		kind, name string
		flags      map[string]string // flag → names.* value
	}{
		{"Deployment", "llmgw-controller", map[string]string{
			"configmap": "snapshotConfigMap", "gateway-status-configmap": "gatewayStatusConfigMap", "leader-election-id": "leaderElectionLease"}},
		{"StatefulSet", "llmgw-gateway", map[string]string{
			"configmap": "snapshotConfigMap", "status-configmap": "gatewayStatusConfigMap"}},
	} {
		args := containerArgs(t, in, tc.kind, tc.name)
		for flag, value := range tc.flags {
			if got, ok := flagValue(args, flag); !ok || got != newName[value] {
				t.Errorf("%s/%s: --%s is %q (set: %v), want %q (names.%s); args %v", tc.kind, tc.name, flag, got, ok, newName[value], value, args)
			}
		}
	}
}

// TestHelmRolesFollowNames: with every name changed, each Role is its
// config/rbac rules with each pinned default name replaced by the new one,
// and no rule names an old default any more.
func TestHelmRolesFollowNames(t *testing.T) {
	in := renderRenamed(t)
	newFor := map[string]string{}
	for _, r := range renamed {
		newFor[r.old] = r.new
	}
	seen := map[string]bool{}
	for _, tc := range []struct{ file, role string }{
		{"config/rbac/role.yaml", "llmgw-controller"},
		{"config/rbac/gateway_role.yaml", "llmgw-gateway"},
	} {
		t.Run(tc.role, func(t *testing.T) {
			var want rbacv1.Role
			readYAML(t, tc.file, &want)
			pinned := 0
			for i, rule := range want.Rules {
				for j, name := range rule.ResourceNames {
					if fixedNames[name] {
						continue // the chart's own object, not renamed by names.*
					}
					n, ok := newFor[name]
					if !ok {
						t.Fatalf("%s pins %q, which no names.* value renames: add it to the chart's llmgw.defaultNames", tc.file, name)
					}
					want.Rules[i].ResourceNames[j] = n
					pinned++
				}
			}
			if pinned == 0 {
				t.Fatalf("%s pins no resourceNames: nothing to rename, the test proves nothing", tc.file)
			}
			got := in.get(t, "Role", tc.role).Obj.(*rbacv1.Role)
			if !reflect.DeepEqual(got.Rules, want.Rules) {
				t.Errorf("Role %s, renamed, differs from %s with the new names:\n%s", tc.role, tc.file, diffYAML(want.Rules, got.Rules))
			}
			for _, rule := range got.Rules {
				for _, name := range rule.ResourceNames {
					seen[name] = true
					if _, old := newFor[name]; old {
						t.Errorf("Role %s still names %q: %+v", tc.role, name, rule)
					}
				}
			}
		})
	}
	for _, r := range renamed {
		if !seen[r.new] {
			t.Errorf("no Role names %q (names.%s): the object would be denied", r.new, r.value)
		}
	}
}

// TestHelmNamesDefault: with the default values the workloads carry no name
// flag (the binaries' defaults are the names config/rbac pins; that the
// Roles then equal config/rbac is TestChartCopiesOfGeneratedFiles).
func TestHelmNamesDefault(t *testing.T) {
	in := renderHelm(t)
	for _, w := range [][2]string{{"Deployment", "llmgw-controller"}, {"StatefulSet", "llmgw-gateway"}} {
		args := containerArgs(t, in, w[0], w[1])
		for _, flag := range []string{"configmap", "gateway-status-configmap", "leader-election-id", "status-configmap"} {
			if v, ok := flagValue(args, flag); ok {
				t.Errorf("%s/%s: --%s=%s with the default values; config/ leaves it to the binary's default", w[0], w[1], flag, v)
			}
		}
	}
}

// TestHelmRefusesBadNames: a name the API server would refuse, two
// ConfigMaps under one name, or a name flag set behind the Roles' back
// (extraArgs) fails the render, and the message says which value to fix.
func TestHelmRefusesBadNames(t *testing.T) {
	for _, tc := range []struct {
		set, want string
	}{
		{"names.snapshotConfigMap=Team_A", "names.snapshotConfigMap"},
		{"names.snapshotConfigMap=-snapshot", "names.snapshotConfigMap"},
		{"names.snapshotConfigMap=" + strings.Repeat("s", 64), "names.snapshotConfigMap"}, // the label value's limit
		{"names.gatewayStatusConfigMap=status..a", "names.gatewayStatusConfigMap"},
		{"names.gatewayStatusConfigMap=" + strings.Repeat("g", 254), "names.gatewayStatusConfigMap"},
		{"names.leaderElectionLease=", "names.leaderElectionLease"},
		{"names.leaderElectionLease=Leader", "names.leaderElectionLease"},
		{"names.gatewayStatusConfigMap=" + snapshot.DefaultConfigMapName, "names.gatewayStatusConfigMap"},
		{"controller.extraArgs[0]=--configmap=other", "names.snapshotConfigMap"},
		{"controller.extraArgs[0]=--leader-election-id", "names.leaderElectionLease"},
		{"controller.extraArgs[0]=-gateway-status-configmap=", "names.gatewayStatusConfigMap"},
		{"gateway.extraArgs[0]=--status-configmap=other", "names.gatewayStatusConfigMap"},
		{"gateway.extraArgs[0]=--configmap=", "names.snapshotConfigMap"},
	} {
		what := tc.set
		if len(what) > 60 {
			what = what[:40] + "...(" + itoa(int32(len(what))) + " chars)"
		}
		t.Run(what, func(t *testing.T) {
			t.Parallel()
			_, err := helm("template", "llmgw", "charts/llmgw", "--namespace", namespace, "--set", tc.set)
			if err == nil {
				t.Fatalf("rendered with %s, want a refusal", tc.set)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("refusal of %s does not name %s:\n%v", tc.set, tc.want, err)
			}
		})
	}
}

// TestHelmNamesAccepted: the longest names the API accepts render, and so
// does the one name flag extraArgs may still set: an empty
// --status-configmap, which turns the gateways' reports off and needs no Role.
func TestHelmNamesAccepted(t *testing.T) {
	snap, lease := strings.Repeat("s", 63), strings.Repeat("l", 253)
	in := renderHelm(t, "--set", "names.snapshotConfigMap="+snap, "--set", "names.leaderElectionLease="+lease,
		"--set", "gateway.extraArgs[0]=--status-configmap=")
	args := containerArgs(t, in, "StatefulSet", "llmgw-gateway")
	if v, ok := flagValue(args, "status-configmap"); !ok || v != "" {
		t.Errorf("gateway args %v: --status-configmap %q (set: %v), want the empty value from extraArgs last", args, v, ok)
	}
	if v, _ := flagValue(args, "configmap"); v != snap {
		t.Errorf("gateway --configmap=%s, want %s", v, snap)
	}
	role := in.get(t, "Role", "llmgw-controller").Obj.(*rbacv1.Role)
	var names []string
	for _, r := range role.Rules {
		names = append(names, r.ResourceNames...)
	}
	if !slices.Contains(names, snap) || !slices.Contains(names, lease) {
		t.Errorf("controller Role resourceNames %v lack %s or %s", names, snap, lease)
	}
}
