package main

import (
	"fmt"
	"os"
	"slices"

	"github.com/go-json-experiment/json"
)

// Dashboard is the part of a Grafana dashboard JSON (schemaVersion 39) that
// the renderer draws. Members it does not know are ignored, as Grafana
// ignores what a panel plugin does not read.
type Dashboard struct {
	UID        string     `json:"uid"`
	Title      string     `json:"title"`
	Schema     int        `json:"schemaVersion"`
	Templating Templating `json:"templating"`
	Panels     []Panel    `json:"panels"`
}

// Templating holds the dashboard's template variables.
type Templating struct {
	List []Variable `json:"list"`
}

// Variable is one template variable (datasource, query, custom, ...).
type Variable struct {
	Name       string `json:"name"`
	Label      string `json:"label"`
	Type       string `json:"type"`
	IncludeAll bool   `json:"includeAll"`
	AllValue   string `json:"allValue"`
	Multi      bool   `json:"multi"`
	Hide       int    `json:"hide"`
}

// Panel is a dashboard panel; a row holds its panels itself only while it
// is collapsed.
type Panel struct {
	ID          int         `json:"id"`
	Type        string      `json:"type"`
	Title       string      `json:"title"`
	GridPos     GridPos     `json:"gridPos"`
	Collapsed   bool        `json:"collapsed"`
	Panels      []Panel     `json:"panels"`
	Targets     []Target    `json:"targets"`
	FieldConfig FieldConfig `json:"fieldConfig"`
	Options     Options     `json:"options"`
}

// GridPos places a panel on the dashboard's 24-column grid.
type GridPos struct {
	X int `json:"x"`
	Y int `json:"y"`
	W int `json:"w"`
	H int `json:"h"`
}

// Target is one Prometheus query of a panel.
type Target struct {
	RefID        string `json:"refId"`
	Expr         string `json:"expr"`
	LegendFormat string `json:"legendFormat"`
	Instant      bool   `json:"instant"`
	Range        bool   `json:"range"`
	Hide         bool   `json:"hide"`
}

// FieldConfig is the panel's field defaults (overrides are not drawn).
type FieldConfig struct {
	Defaults FieldDefaults `json:"defaults"`
}

// FieldDefaults are the display settings every series of a panel shares.
type FieldDefaults struct {
	Unit       string     `json:"unit"`
	Decimals   *int       `json:"decimals"`
	Min        *float64   `json:"min"`
	Max        *float64   `json:"max"`
	Thresholds Thresholds `json:"thresholds"`
	Mappings   []Mapping  `json:"mappings"`
	Custom     Custom     `json:"custom"`
}

// Thresholds are absolute steps; the first step's value is null (-∞).
type Thresholds struct {
	Steps []ThresholdStep `json:"steps"`
}

// ThresholdStep is one color from Value upwards.
type ThresholdStep struct {
	Color string   `json:"color"`
	Value *float64 `json:"value"`
}

// Mapping is a value mapping; only "value" mappings are drawn.
type Mapping struct {
	Type    string                  `json:"type"`
	Options map[string]MappingValue `json:"options"`
}

// MappingValue is what a mapped value shows.
type MappingValue struct {
	Text  string `json:"text"`
	Color string `json:"color"`
	Index int    `json:"index"`
}

// Custom are the time series panel's drawing settings.
type Custom struct {
	LineWidth   *float64 `json:"lineWidth"`
	FillOpacity *float64 `json:"fillOpacity"`
	ShowPoints  string   `json:"showPoints"`
	Stacking    Stacking `json:"stacking"`
}

// Stacking stacks series on each other ("normal") or not ("none").
type Stacking struct {
	Mode string `json:"mode"`
}

// Options are the panel options of the stat, time series and state
// timeline panels together.
type Options struct {
	ReduceOptions ReduceOptions `json:"reduceOptions"`
	ColorMode     string        `json:"colorMode"`
	TextMode      string        `json:"textMode"`
	Orientation   string        `json:"orientation"`
	Legend        Legend        `json:"legend"`
	ShowValue     string        `json:"showValue"`
	MergeValues   *bool         `json:"mergeValues"`
	RowHeight     *float64      `json:"rowHeight"`
}

// ReduceOptions say how a stat panel turns a series into one value.
type ReduceOptions struct {
	Calcs []string `json:"calcs"`
}

// Legend is the time series legend's settings.
type Legend struct {
	DisplayMode string `json:"displayMode"`
	ShowLegend  *bool  `json:"showLegend"`
}

// loadDashboard reads and parses a dashboard JSON file.
func loadDashboard(path string) (*Dashboard, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read dashboard: %w", err)
	}
	return parseDashboard(raw)
}

// parseDashboard decodes a dashboard and checks that every panel can be
// placed: a panel without a size would silently vanish from the picture.
func parseDashboard(raw []byte) (*Dashboard, error) {
	var d Dashboard
	if err := json.Unmarshal(raw, &d); err != nil {
		return nil, fmt.Errorf("parse dashboard: %w", err)
	}
	for _, p := range d.Panels {
		if p.GridPos.W <= 0 || p.GridPos.H <= 0 {
			return nil, fmt.Errorf("panel %d %q: gridPos %+v has no size", p.ID, p.Title, p.GridPos)
		}
		if p.GridPos.X < 0 || p.GridPos.X+p.GridPos.W > gridColumns {
			return nil, fmt.Errorf("panel %d %q: gridPos %+v is outside the %d columns", p.ID, p.Title, p.GridPos, gridColumns)
		}
	}
	return &d, nil
}

// visiblePanels are the panels Grafana shows, in gridPos order (top to
// bottom, left to right): the panels of a collapsed row stay hidden.
func (d *Dashboard) visiblePanels() []Panel {
	out := slices.Clone(d.Panels)
	slices.SortStableFunc(out, func(a, b Panel) int {
		if a.GridPos.Y != b.GridPos.Y {
			return a.GridPos.Y - b.GridPos.Y
		}
		return a.GridPos.X - b.GridPos.X
	})
	return out
}

// variable finds a template variable by name.
func (d *Dashboard) variable(name string) (Variable, bool) {
	for _, v := range d.Templating.List {
		if v.Name == name {
			return v, true
		}
	}
	return Variable{}, false
}

// shown is the legend's visibility: shown unless turned off.
func (l Legend) shown() bool {
	return (l.ShowLegend == nil || *l.ShowLegend) && l.DisplayMode != "hidden"
}
