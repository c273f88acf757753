package main

import (
	"strings"
	"testing"
)

// TestParseRealDashboard reads the chart's dashboard: every panel type it
// uses is one dashshot draws, every data panel has a query, and the
// variables the queries use are declared.
func TestParseRealDashboard(t *testing.T) {
	d, err := loadDashboard(realDashboard)
	if err != nil {
		t.Fatal(err)
	}
	if d.Title == "" || d.Schema == 0 || len(d.Panels) == 0 {
		t.Fatalf("title %q, schemaVersion %d, %d panels: not a dashboard", d.Title, d.Schema, len(d.Panels))
	}
	drawn := map[string]bool{"row": true, "timeseries": true, "stat": true, "state-timeline": true}
	types := map[string]int{}
	for _, p := range d.visiblePanels() {
		types[p.Type]++
		if !drawn[p.Type] {
			t.Errorf("panel %d %q: type %s is not drawn by dashshot", p.ID, p.Title, p.Type)
		}
		if p.Type == "row" {
			continue
		}
		if len(p.Targets) == 0 {
			t.Errorf("panel %d %q has no query", p.ID, p.Title)
		}
		for _, tg := range p.Targets {
			if strings.TrimSpace(tg.Expr) == "" {
				t.Errorf("panel %d %q target %s has no expr", p.ID, p.Title, tg.RefID)
			}
			for _, m := range variableRef.FindAllStringSubmatch(tg.Expr, -1) {
				name := m[1] + m[2] + m[4]
				if _, ok := d.variable(name); !ok && !strings.HasPrefix(name, "__") {
					t.Errorf("panel %d %q uses $%s, which the dashboard does not declare", p.ID, p.Title, name)
				}
			}
		}
	}
	for _, typ := range []string{"row", "timeseries", "stat", "state-timeline"} {
		if types[typ] == 0 {
			t.Errorf("no %s panel parsed: the decoder lost them", typ)
		}
	}
	for _, name := range []string{"datasource", "namespace", "alias"} {
		if _, ok := d.variable(name); !ok {
			t.Errorf("variable %s not parsed", name)
		}
	}
}

func TestParseDashboardRejects(t *testing.T) {
	for _, tc := range []struct{ name, json, want string }{
		{"not json", `{`, "parse dashboard"},
		{"no size", `{"panels":[{"id":1,"type":"stat","gridPos":{"x":0,"y":0,"w":0,"h":4}}]}`, "has no size"},
		{"past column 24", `{"panels":[{"id":1,"type":"stat","gridPos":{"x":20,"y":0,"w":6,"h":4}}]}`, "outside the 24 columns"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parseDashboard([]byte(tc.json))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
		})
	}
}

func TestVisiblePanelsOrder(t *testing.T) {
	d, err := parseDashboard([]byte(`{"panels":[
		{"id":3,"type":"stat","gridPos":{"x":12,"y":1,"w":12,"h":4}},
		{"id":2,"type":"stat","gridPos":{"x":0,"y":1,"w":12,"h":4}},
		{"id":1,"type":"row","gridPos":{"x":0,"y":0,"w":24,"h":1}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	var ids []int
	for _, p := range d.visiblePanels() {
		ids = append(ids, p.ID)
	}
	if len(ids) != 3 || ids[0] != 1 || ids[1] != 2 || ids[2] != 3 {
		t.Fatalf("order %v, want [1 2 3] (top to bottom, left to right)", ids)
	}
}
