package main

import (
	"image/color"
	"math"
	"slices"
	"strconv"
	"time"
)

// stateSpan is a run of one value in a state timeline row.
type stateSpan struct {
	From, To time.Time
	Value    float64
}

// stateSpans turns a series into runs: each point lasts until the next
// (or one step, when the next is missing or more than 1.5 steps away), and
// with merge, equal neighbours become one run.
func stateSpans(points []Point, step time.Duration, merge bool) []stateSpan {
	var out []stateSpan
	for i, p := range points {
		if !finite(p.V) {
			continue
		}
		to := p.T.Add(step)
		if i+1 < len(points) && points[i+1].T.Sub(p.T) <= step*3/2 {
			to = points[i+1].T
		}
		if n := len(out); merge && n > 0 && out[n-1].Value == p.V && !out[n-1].To.Before(p.T) {
			out[n-1].To = to
			continue
		}
		out = append(out, stateSpan{From: p.T, To: to, Value: p.V})
	}
	return out
}

// stateColor is a value's colour: its value mapping's, else its threshold's,
// else the first palette colour.
func stateColor(fd FieldDefaults, v float64) (color.NRGBA, string) {
	text := strconv.FormatFloat(v, 'f', -1, 64)
	if mv, ok := mappedValue(fd.Mappings, v); ok {
		if mv.Text != "" {
			text = mv.Text
		}
		if mv.Color != "" {
			return parseColor(mv.Color), text
		}
	}
	if c, ok := thresholdColor(fd.Thresholds, v); ok {
		return c, text
	}
	return paletteColor(0), text
}

// stateLegend is the state timeline's legend: the mapped values, in their
// mapping order, as Grafana lists them.
func stateLegend(fd FieldDefaults) []legendItem {
	type entry struct {
		idx int
		it  legendItem
	}
	var es []entry
	for _, m := range fd.Mappings {
		if m.Type != "value" {
			continue
		}
		for _, mv := range m.Options {
			es = append(es, entry{mv.Index, legendItem{mv.Text, parseColor(mv.Color)}})
		}
	}
	slices.SortFunc(es, func(a, b entry) int { return a.idx - b.idx })
	out := make([]legendItem, len(es))
	for i, e := range es {
		out[i] = e.it
	}
	return out
}

// drawStateTimeline draws one row of coloured runs per series, the series
// names on the left, the time axis below and the value legend at the
// bottom.
func (c *canvas) drawStateTimeline(r Rect, p Panel, d PanelData, t Timing, loc *time.Location) {
	cr := c.drawFrame(r, p.Title, colPanel, d)
	if !d.hasData() {
		c.drawNoData(cr, d, stNoData)
		return
	}
	fd := p.FieldConfig.Defaults
	bottom := cr.bottom()
	var legend []legendLine
	hidden := 0
	if items := stateLegend(fd); p.Options.Legend.shown() && len(items) > 0 {
		legend, hidden = c.layoutLegend(items, cr.W, 2)
		bottom -= float64(len(legend))*legendLineH + 4
	}
	axisH := 20.0
	nameW := 0.0
	for _, s := range d.Series {
		nameW = math.Max(nameW, c.width(s.Name, stLegend))
	}
	nameW = math.Min(nameW, cr.W/3)
	plot := Rect{cr.X + nameW + 10, cr.Y + 4, cr.W - nameW - 14, bottom - axisH - cr.Y - 4}
	tx := func(tm time.Time) float64 {
		return plot.X + float64(tm.Sub(t.Start))/float64(t.End.Sub(t.Start))*plot.W
	}
	for _, tk := range timeTicks(t.Start, t.End, plot.W, 90, loc) {
		x := math.Round(tx(tk.T)) + 0.5
		c.line(x, plot.Y, x, plot.bottom(), 1, colGrid)
		if hw := c.width(tk.Label, stAxis) / 2; x-hw >= cr.X && x+hw <= cr.right() {
			c.text(tk.Label, x, plot.bottom()+axisH/2+2, stAxis, 0.5)
		}
	}
	rowH := plot.H / float64(len(d.Series))
	fill := 0.9
	if p.Options.RowHeight != nil {
		fill = *p.Options.RowHeight
	}
	merge := p.Options.MergeValues == nil || *p.Options.MergeValues
	c.clip(plot)
	for i, s := range d.Series {
		y := plot.Y + float64(i)*rowH + rowH*(1-fill)/2
		for _, sp := range stateSpans(s.Points, t.Step, merge) {
			col, text := stateColor(fd, sp.Value)
			box := Rect{tx(sp.From), y, tx(sp.To) - tx(sp.From), rowH * fill}
			c.fillRect(box, withAlpha(col, 0.7))
			c.line(box.X+0.5, box.Y, box.X+0.5, box.bottom(), 1, col)
			if p.Options.ShowValue == "always" || p.Options.ShowValue == "auto" && c.width(text, stLegend)+8 < box.W {
				c.text(text, box.X+box.W/2, box.Y+box.H/2, textStyle{12, false, colStatText}, 0.5)
			}
		}
	}
	c.unclip()
	for i, s := range d.Series {
		c.text(c.fit(s.Name, stLegend, nameW), cr.X, plot.Y+float64(i)*rowH+rowH/2, stLegend, 0)
	}
	if len(legend) > 0 {
		c.drawLegend(legend, hidden, Rect{cr.X, plot.bottom() + axisH + 4, cr.W, float64(len(legend)) * legendLineH})
	}
}
