package manifests

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/go-json-experiment/json"
	corev1 "k8s.io/api/core/v1"
)

// dashboardFile is the Grafana dashboard the chart ships.
const dashboardFile = "charts/llmgw/dashboards/llmgw.json"

// The parts of a Grafana dashboard these tests read.
type dashboard struct {
	UID           string  `json:"uid"`
	Title         string  `json:"title"`
	SchemaVersion int     `json:"schemaVersion"`
	Panels        []panel `json:"panels"`
	Templating    struct {
		List []struct {
			Name  string `json:"name"`
			Type  string `json:"type"`
			Query any    `json:"query"` // a string, or {query: ...} for Prometheus
		} `json:"list"`
	} `json:"templating"`
}

type panel struct {
	ID         int    `json:"id"`
	Type       string `json:"type"`
	Title      string `json:"title"`
	Datasource *struct {
		Type string `json:"type"`
		UID  string `json:"uid"`
	} `json:"datasource"`
	GridPos struct {
		H int `json:"h"`
		W int `json:"w"`
		X int `json:"x"`
		Y int `json:"y"`
	} `json:"gridPos"`
	Targets []struct {
		RefID string `json:"refId"`
		Expr  string `json:"expr"`
	} `json:"targets"`
	Panels []panel `json:"panels"` // a collapsed row's
}

// allPanels: every panel, those inside collapsed rows included.
func (d dashboard) allPanels() []panel {
	var out []panel
	var walk func([]panel)
	walk = func(ps []panel) {
		for _, p := range ps {
			out = append(out, p)
			walk(p.Panels)
		}
	}
	walk(d.Panels)
	return out
}

// labelValues is a Grafana variable query over a metric selector.
var labelValues = regexp.MustCompile(`^label_values\((.*),\s*[A-Za-z_][A-Za-z0-9_]*\)$`)

// exprs: every PromQL expression of the dashboard by where it is, its
// variables' queries (label_values(METRIC{...}, LABEL)) reduced to the
// metric selector.
func (d dashboard) exprs(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, p := range d.allPanels() {
		for _, tg := range p.Targets {
			out["panel "+p.Title+" "+tg.RefID] = tg.Expr
		}
	}
	for _, v := range d.Templating.List {
		if v.Type != "query" {
			continue
		}
		q, _ := v.Query.(string)
		if m, ok := v.Query.(map[string]any); ok {
			q, _ = m["query"].(string)
		}
		sub := labelValues.FindStringSubmatch(q)
		if sub == nil {
			t.Errorf("variable %s: query %q, want label_values(METRIC{...}, LABEL)", v.Name, q)
			continue
		}
		out["variable "+v.Name] = sub[1]
	}
	return out
}

func readDashboard(t *testing.T, b []byte) dashboard {
	t.Helper()
	var d dashboard
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("dashboard JSON: %v", err)
	}
	return d
}

func readDashboardFile(t *testing.T) ([]byte, dashboard) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repo, dashboardFile))
	if err != nil {
		t.Fatal(err)
	}
	return b, readDashboard(t, b)
}

// TestGrafanaDashboardConfigMap: the ConfigMap carries the chart's
// dashboard file unchanged, labelled for the Grafana sidecar, in the
// namespace and under the label the values say.
func TestGrafanaDashboardConfigMap(t *testing.T) {
	file, _ := readDashboardFile(t)
	cm := renderHelm(t, "--set", "monitoring.grafanaDashboard.enabled=true").get(t, "ConfigMap", "llmgw-grafana-dashboard").Obj.(*corev1.ConfigMap)
	if cm.Namespace != namespace || cm.Labels["grafana_dashboard"] != "1" {
		t.Errorf("ConfigMap namespace %q labels %v, want %s and grafana_dashboard: \"1\"", cm.Namespace, cm.Labels, namespace)
	}
	if got := cm.Data["llmgw.json"]; got != strings.TrimRight(string(file), "\n") || len(cm.Data) != 1 {
		t.Errorf("ConfigMap data keys %d; llmgw.json differs from %s", len(cm.Data), dashboardFile)
	}
	readDashboard(t, []byte(cm.Data["llmgw.json"]))

	in := renderHelm(t, "--set", "monitoring.grafanaDashboard.enabled=true", "--set", "monitoring.grafanaDashboard.namespace=grafana",
		"--set", "monitoring.grafanaDashboard.labelKey=dashboards", "--set", "monitoring.grafanaDashboard.labelValue=llmgw",
		"--set", "monitoring.grafanaDashboard.annotations.grafana_folder=LLM")
	o, ok := in.Objects["ConfigMap/grafana/llmgw-grafana-dashboard"]
	if !ok {
		t.Fatalf("no ConfigMap llmgw-grafana-dashboard in namespace grafana among %v", in.keys())
	}
	cm = o.Obj.(*corev1.ConfigMap)
	if cm.Labels["dashboards"] != "llmgw" || cm.Labels["grafana_dashboard"] != "" || cm.Annotations["grafana_folder"] != "LLM" {
		t.Errorf("labels %v annotations %v, want dashboards=llmgw and grafana_folder=LLM", cm.Labels, cm.Annotations)
	}
}

// The metrics the dashboard must show (issue 47), each in some panel.
var dashboardMetrics = []string{
	"llmgw_requests_total",
	"gen_ai_server_request_duration_seconds_bucket",
	"gen_ai_server_time_to_first_token_seconds_bucket",
	"gen_ai_server_time_per_output_token_seconds_bucket",
	"llmgw_gateway_added_seconds_bucket",
	"gen_ai_client_token_usage_sum",
	"llmgw_cost_total",
	"llmgw_provider_breaker_state",
	"llmgw_provider_breaker_skipped_total",
	"llmgw_quota_store_degraded",
	"llmgw_quota_store_divisor",
	"llmgw_usage_store_writable",
	"llmgw_usage_unrecorded_requests_total",
	"llmgw_usage_store_refused_requests_total",
	"llmgw_snapshot_info",
	"llmgw_snapshot_reloads_total",
	"llmgw_snapshot_last_reload_failed",
	"llmgw_inflight_requests",
}

// TestGrafanaDashboard: the dashboard is one a current Grafana loads as is
// (schemaVersion 39+, a Prometheus datasource variable every panel uses, an
// alias variable, unique panel ids, panels inside the 24-column grid and
// not on top of each other) and
// shows every metric of dashboardMetrics.
func TestGrafanaDashboard(t *testing.T) {
	_, d := readDashboardFile(t)
	if d.SchemaVersion < 39 || d.UID == "" || d.Title == "" {
		t.Errorf("schemaVersion %d uid %q title %q, want 39 or later and a uid and title", d.SchemaVersion, d.UID, d.Title)
	}
	vars := map[string]string{}
	for _, v := range d.Templating.List {
		vars[v.Name] = v.Type
		if v.Name == "datasource" && v.Query != "prometheus" {
			t.Errorf("variable datasource: query %v, want prometheus", v.Query)
		}
	}
	if vars["datasource"] != "datasource" || vars["alias"] != "query" {
		t.Errorf("variables %v, want datasource (type datasource) and alias (type query)", vars)
	}
	ids := map[int]string{}
	cells := map[[2]int]string{} // top-level grid cells taken, by panel
	for _, p := range d.Panels {
		for y := p.GridPos.Y; y < p.GridPos.Y+p.GridPos.H; y++ {
			for x := p.GridPos.X; x < p.GridPos.X+p.GridPos.W; x++ {
				if other, taken := cells[[2]int{x, y}]; taken {
					t.Errorf("panel %q overlaps %q at x=%d y=%d", p.Title, other, x, y)
				}
				cells[[2]int{x, y}] = p.Title
			}
		}
	}
	for _, p := range d.allPanels() {
		if prev, dup := ids[p.ID]; dup || p.ID == 0 {
			t.Errorf("panel %q: id %d (also %q)", p.Title, p.ID, prev)
		}
		ids[p.ID] = p.Title
		if p.GridPos.W <= 0 || p.GridPos.H <= 0 || p.GridPos.X < 0 || p.GridPos.X+p.GridPos.W > 24 {
			t.Errorf("panel %q: gridPos %+v outside the 24-column grid", p.Title, p.GridPos)
		}
		if p.Type == "row" {
			continue
		}
		if p.Datasource == nil || p.Datasource.Type != "prometheus" || p.Datasource.UID != "${datasource}" {
			t.Errorf("panel %q: datasource %+v, want the ${datasource} variable", p.Title, p.Datasource)
		}
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, tg := range p.Targets {
			if strings.TrimSpace(tg.Expr) == "" {
				t.Errorf("panel %q query %s is empty", p.Title, tg.RefID)
			}
		}
	}
	shown := map[string]bool{}
	for where, e := range d.exprs(t) {
		names, err := promMetricNames(e)
		if err != nil {
			t.Errorf("%s: %v", where, err)
		}
		for _, n := range names {
			shown[n] = true
		}
	}
	for _, m := range dashboardMetrics {
		if !shown[m] {
			t.Errorf("no panel shows %s", m)
		}
	}
}
