package manifests

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/llmgw/llmgw/controllers"
)

// TestKeyFlagsDefault: both installs run the controller with the expiry
// warning it defaults to, and copy no owner labels.
func TestKeyFlagsDefault(t *testing.T) {
	for _, in := range installs(t) {
		args := containerArgs(t, in, "Deployment", "llmgw-controller")
		v, ok := flagValue(args, "key-expiry-warning")
		d, err := time.ParseDuration(v)
		if !ok || err != nil || d != controllers.DefaultKeyExpiryWarning {
			t.Errorf("%s: --key-expiry-warning=%q (set: %v), want the controller's default %v", in.Source, v, ok, controllers.DefaultKeyExpiryWarning)
		}
		if v, ok := flagValue(args, "owner-labels"); ok {
			t.Errorf("%s: --owner-labels=%s by default", in.Source, v)
		}
	}
}

// TestHelmKeyFlags: controller.keyExpiryWarning and controller.ownerLabels
// become the flags, in a form the controller accepts; 0 turns the warning
// off rather than falling back to the default.
func TestHelmKeyFlags(t *testing.T) {
	for _, tc := range []struct {
		set             []string
		warning, owners string
	}{
		{[]string{"controller.keyExpiryWarning=24h"}, "24h", ""},
		{[]string{"controller.keyExpiryWarning=0"}, "0", ""},
		{[]string{"controller.ownerLabels={team,example.com/cost-center,team}"}, "168h", "team,example.com/cost-center"},
	} {
		t.Run(strings.Join(tc.set, " "), func(t *testing.T) {
			var args []string
			for _, s := range tc.set {
				args = append(args, "--set", s)
			}
			got := containerArgs(t, renderHelm(t, args...), "Deployment", "llmgw-controller")
			if v, _ := flagValue(got, "key-expiry-warning"); v != tc.warning {
				t.Errorf("--key-expiry-warning=%q, want %q", v, tc.warning)
			} else if _, err := time.ParseDuration(v); err != nil {
				t.Errorf("--key-expiry-warning=%q: the controller refuses it: %v", v, err)
			}
			v, ok := flagValue(got, "owner-labels")
			if v != tc.owners || ok != (tc.owners != "") {
				t.Errorf("--owner-labels=%q (set: %v), want %q", v, ok, tc.owners)
			}
			if _, err := controllers.OwnerLabelKeys(strings.Split(v, ",")); err != nil {
				t.Errorf("the controller refuses --owner-labels=%s: %v", v, err)
			}
		})
	}
}

// TestHelmRefusesBadOwnerLabels: what the controller would refuse at its
// start fails the render, naming the value to fix.
func TestHelmRefusesBadOwnerLabels(t *testing.T) {
	var many []string
	for i := range 17 {
		many = append(many, fmt.Sprintf("l%d", i))
	}
	for _, labels := range [][]string{
		{"cost center"}, {"-team"}, {"team-"}, {"/team"}, {"Example.com/team"}, {"example.com/"},
		{strings.Repeat("a", 64)}, {"a/b/c"}, many,
	} {
		t.Run(strings.Join(labels, ",")[:min(len(strings.Join(labels, ",")), 40)], func(t *testing.T) {
			t.Parallel()
			if _, err := controllers.OwnerLabelKeys(labels); err == nil {
				t.Fatalf("the controller accepts %q: the case tests nothing", labels)
			}
			_, err := helm("template", "llmgw", "charts/llmgw", "--namespace", namespace, "--set-json",
				fmt.Sprintf("controller.ownerLabels=%s", jsonList(labels)))
			if err == nil || !strings.Contains(err.Error(), "controller.ownerLabels") {
				t.Errorf("%q: %v, want a refusal naming controller.ownerLabels", labels, err)
			}
		})
	}
}

func jsonList(s []string) string {
	q := make([]string, len(s))
	for i, v := range s {
		q[i] = fmt.Sprintf("%q", v)
	}
	return "[" + strings.Join(q, ",") + "]"
}
