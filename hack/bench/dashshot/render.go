package main

import (
	"context"
	"fmt"
	"image"
	"math"
	"time"
)

// renderConfig is one render: which dashboard, against which Prometheus,
// with which variables and time range, how wide.
type renderConfig struct {
	Dashboard  *Dashboard
	Client     *promClient
	Selected   map[string]Selection
	Timing     Timing
	Width      int     // of the picture, in pixels
	Scale      float64 // picture pixels per dashboard pixel (a device pixel ratio)
	Location   *time.Location
	Datasource string // the data source's name, shown in its picker
}

// PanelReport says what was drawn for one panel.
type PanelReport struct {
	ID      int
	Type    string
	Title   string
	Rect    Rect
	Series  int
	Status  string // "row", "data", "no data", "error", "not drawn"
	Err     error
	Queries []string
}

// render queries every visible panel and draws the dashboard.
func render(ctx context.Context, cfg renderConfig) (image.Image, []PanelReport, error) {
	scale := cfg.Scale
	if scale <= 0 {
		scale = 1
	}
	l := layoutDashboard(cfg.Dashboard, int(math.Round(float64(cfg.Width)/scale)))
	c, err := newCanvas(l.Width, l.Height, scale)
	if err != nil {
		return nil, nil, err
	}
	c.fillRect(Rect{0, 0, float64(l.Width), float64(l.Height)}, colCanvas)
	c.drawHeader(l, cfg.Dashboard, cfg.Selected, cfg.Timing, cfg.Location, cfg.Datasource)

	vars := map[string]Variable{}
	for _, v := range cfg.Dashboard.Templating.List {
		vars[v.Name] = v
	}
	scope := Scope{Vars: vars, Selected: cfg.Selected, Builtins: cfg.Timing.builtins()}

	var reports []PanelReport
	for _, pl := range l.Panels {
		p := pl.Panel
		rep := PanelReport{ID: p.ID, Type: p.Type, Title: p.Title, Rect: pl.Rect}
		if p.Type == "row" {
			c.drawRow(pl.Rect, p)
			rep.Status = "row"
			reports = append(reports, rep)
			continue
		}
		d := fetchPanel(ctx, cfg.Client, p, scope, cfg.Timing)
		if err := ctx.Err(); err != nil {
			return nil, nil, fmt.Errorf("render: %w", err)
		}
		rep.Series, rep.Err, rep.Queries = len(d.Series), d.Err, d.Queries
		switch p.Type {
		case "timeseries", "graph":
			c.drawTimeSeries(pl.Rect, p, d, cfg.Timing, cfg.Location)
		case "stat", "singlestat":
			c.drawStat(pl.Rect, p, d)
		case "state-timeline":
			c.drawStateTimeline(pl.Rect, p, d, cfg.Timing, cfg.Location)
		default:
			c.drawUnsupported(pl.Rect, p, d)
			rep.Status = "not drawn"
		}
		if rep.Status == "" {
			switch {
			case d.hasData():
				rep.Status = "data"
			case d.Err != nil:
				rep.Status = "error"
			default:
				rep.Status = "no data"
			}
		}
		reports = append(reports, rep)
	}
	return c.dc.Image(), reports, nil
}
