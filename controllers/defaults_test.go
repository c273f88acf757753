package controllers

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"

	"github.com/llmgw/llmgw/api/snapshot"
)

// TestCRDDefaultsMatchSnapshot: the defaults `kubectl get -o yaml` shows
// (CRD schema defaults) are the ones the gateways apply (api/snapshot), so
// what a user reads is what runs. A parent object defaulted to {} is what
// makes its fields' defaults appear when the user omits it.
func TestCRDDefaultsMatchSnapshot(t *testing.T) {
	itoa := strconv.Itoa
	ms := func(ms int) string { return "ms:" + itoa(ms) } // a duration string equal to ms milliseconds
	cases := []struct {
		crd, path string
		want      string // the default as JSON
	}{
		{"gatewaykeys", "spec.rateLimit", `{}`},
		{"gatewaykeys", "spec.rateLimit.requestsPerMinute", itoa(snapshot.DefaultRPM)},
		{"gatewaykeys", "spec.rateLimit.burst", itoa(snapshot.DefaultBurst)},
		{"gatewaykeys", "spec.disabled", `false`},
		{"modelaliases", "spec.maxFallbacks", itoa(snapshot.DefaultMaxFallbacks)},
		{"modelaliases", "spec.timeouts", `{}`},
		{"modelaliases", "spec.timeouts.total", ms(snapshot.DefaultTotalMs)},
		{"modelaliases", "spec.timeouts.attempt", ms(snapshot.DefaultAttemptMs)},
		{"modelaliases", "spec.timeouts.firstChunk", ms(snapshot.DefaultFirstChunkMs)},
		{"modelaliases", "spec.timeouts.idle", ms(snapshot.DefaultIdleMs)},
		{"providerendpoints", "spec.timeouts", `{}`},
		{"providerendpoints", "spec.timeouts.connect", ms(snapshot.DefaultConnectTimeoutMs)},
		{"providerendpoints", "spec.timeouts.responseHeader", ms(snapshot.DefaultResponseHeaderTimeoutMs)},
	}
	for _, c := range cases {
		raw, err := os.ReadFile(filepath.Join("..", "config", "crd", "bases", "llmgw.dev_"+c.crd+".yaml"))
		if err != nil {
			t.Fatal(err)
		}
		var crd apiextensionsv1.CustomResourceDefinition
		if err := yaml.UnmarshalStrict(raw, &crd); err != nil {
			t.Fatal(err)
		}
		p := crd.Spec.Versions[0].Schema.OpenAPIV3Schema
		for _, f := range strings.Split(c.path, ".") {
			next, ok := p.Properties[f]
			if !ok {
				t.Fatalf("%s: no field %s in %s", c.crd, f, c.path)
			}
			p = &next
		}
		if p.Default == nil {
			t.Errorf("%s %s: no default, want %s", c.crd, c.path, c.want)
			continue
		}
		got := string(p.Default.Raw)
		if want, isDuration := strings.CutPrefix(c.want, "ms:"); isDuration {
			var d string
			if err := json.Unmarshal(p.Default.Raw, &d); err != nil {
				t.Fatalf("%s %s: default %s is no string", c.crd, c.path, got)
			}
			v, err := time.ParseDuration(d)
			if err != nil || strconv.Itoa(int(v/time.Millisecond)) != want {
				t.Errorf("%s %s: default %s, want %sms (api/snapshot/defaults.go)", c.crd, c.path, got, want)
			}
			continue
		}
		if got != c.want {
			t.Errorf("%s %s: default %s, want %s (api/snapshot/defaults.go)", c.crd, c.path, got, c.want)
		}
	}
}
