package manifests

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// promtool is Prometheus's rule checker: $PROMTOOL, else promtool on PATH
// (Debian: apt-get install prometheus). Without it the tests that need it
// skip, unless LLMGW_REQUIRE_PROMTOOL=1.
func promtool(t *testing.T) string {
	t.Helper()
	p := os.Getenv("PROMTOOL")
	if p == "" {
		p, _ = exec.LookPath("promtool")
	}
	if p == "" {
		if os.Getenv("LLMGW_REQUIRE_PROMTOOL") == "1" {
			t.Fatal("promtool not found ($PROMTOOL, PATH) and LLMGW_REQUIRE_PROMTOOL=1")
		}
		t.Skip("promtool not found ($PROMTOOL, PATH; Debian: apt-get install prometheus); LLMGW_REQUIRE_PROMTOOL=1 makes this a failure")
	}
	return p
}

func runPromtool(t *testing.T, bin, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("promtool %s: %v\n%s", strings.Join(args, " "), err, out.String())
	}
}

func writeYAML(t *testing.T, path string, v any) {
	t.Helper()
	b, err := yaml.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// grafanaToPromQL replaces the dashboard's Grafana variables by what they
// stand for at query time (all aliases and namespaces, a 5m rate window).
var grafanaToPromQL = strings.NewReplacer("$__rate_interval", "5m", "$__range", "1h", "${namespace}", ".*", "$namespace", ".*",
	"${alias}", ".*", "$alias", ".*")

// TestRulesWithPromtool: Prometheus parses the rendered alerts and every
// query of the dashboard (as recording rules), and the alerts fire, and
// only fire, on the series of testdata/promtool/alerts_test.yaml (promtool
// test rules: each alert's for:, labels and annotation templates).
func TestRulesWithPromtool(t *testing.T) {
	bin := promtool(t)
	dir := t.TempDir()
	pr := renderHelm(t, "--set", "monitoring.prometheusRule.enabled=true").get(t, "PrometheusRule", "llmgw").Obj.(*prometheusRule)
	writeYAML(t, filepath.Join(dir, "rules.yaml"), pr.Spec)

	_, d := readDashboardFile(t)
	var recording []rule
	for _, p := range d.allPanels() {
		for _, tg := range p.Targets {
			recording = append(recording, rule{Record: fmt.Sprintf("dashboard:panel_%d:%s", p.ID, tg.RefID), Expr: grafanaToPromQL.Replace(tg.Expr)})
		}
	}
	writeYAML(t, filepath.Join(dir, "dashboard.yaml"), ruleFile{Groups: []ruleGroup{{Name: "dashboard", Rules: recording}}})
	runPromtool(t, bin, dir, "check", "rules", "rules.yaml", "dashboard.yaml")

	tests, err := os.ReadFile(filepath.Join("testdata", "promtool", "alerts_test.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "alerts_test.yaml"), tests, 0o644); err != nil {
		t.Fatal(err)
	}
	runPromtool(t, bin, dir, "test", "rules", "alerts_test.yaml")
}
