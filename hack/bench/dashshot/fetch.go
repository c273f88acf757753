package main

import (
	"context"
	"errors"
	"math"
	"slices"
)

// NamedSeries is a series with its legend name.
type NamedSeries struct {
	Name   string
	RefID  string
	Labels map[string]string
	Points []Point
}

// PanelData is what a panel's queries returned.
type PanelData struct {
	Series  []NamedSeries
	Queries []string // the expressions as sent, variables replaced
	Err     error    // the first query error; the other targets still draw
}

// hasData says whether any series has a finite value to draw.
func (d PanelData) hasData() bool {
	for _, s := range d.Series {
		for _, p := range s.Points {
			if finite(p.V) {
				return true
			}
		}
	}
	return false
}

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// fetchPanel runs every visible target of p: an instant target as a query
// at the range's end, any other as a range query (a stat panel reduces it
// afterwards, as Grafana does for "range": true targets).
func fetchPanel(ctx context.Context, c *promClient, p Panel, scope Scope, t Timing) PanelData {
	var d PanelData
	for _, tg := range p.Targets {
		if tg.Hide || tg.Expr == "" {
			continue
		}
		expr := scope.interpolate(tg.Expr)
		d.Queries = append(d.Queries, expr)
		var (
			res []Series
			err error
		)
		if tg.Instant && !tg.Range {
			res, err = c.query(ctx, expr, t.End)
		} else {
			res, err = c.queryRange(ctx, expr, t)
		}
		if err != nil {
			d.Err = errors.Join(d.Err, err)
			continue
		}
		for _, s := range res {
			slices.SortFunc(s.Points, func(a, b Point) int { return a.T.Compare(b.T) })
			d.Series = append(d.Series, NamedSeries{
				Name: legendName(tg.LegendFormat, s.Labels, expr), RefID: tg.RefID, Labels: s.Labels, Points: s.Points,
			})
		}
	}
	return d
}
