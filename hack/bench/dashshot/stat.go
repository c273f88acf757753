package main

import (
	"image/color"
	"math"

	"git.sr.ht/~sbinet/gg"
)

// reduce turns a series into the one value a stat panel shows, by the
// first of Grafana's reducers the panel names (default lastNotNull). ok is
// false when nothing is left to show.
func reduce(points []Point, calcs []string) (float64, bool) {
	calc := "lastNotNull"
	if len(calcs) > 0 {
		calc = calcs[0]
	}
	var vals []float64
	for _, p := range points {
		if finite(p.V) {
			vals = append(vals, p.V)
		}
	}
	switch calc {
	case "last":
		if len(points) == 0 || !finite(points[len(points)-1].V) {
			return 0, false
		}
		return points[len(points)-1].V, true
	case "first":
		if len(points) == 0 || !finite(points[0].V) {
			return 0, false
		}
		return points[0].V, true
	case "count":
		return float64(len(vals)), true
	}
	if len(vals) == 0 {
		return 0, false
	}
	switch calc {
	case "firstNotNull":
		return vals[0], true
	case "mean":
		return sum(vals) / float64(len(vals)), true
	case "sum":
		return sum(vals), true
	case "max":
		return fold(vals, math.Max), true
	case "min":
		return fold(vals, math.Min), true
	case "range":
		return fold(vals, math.Max) - fold(vals, math.Min), true
	case "diff", "delta":
		return vals[len(vals)-1] - vals[0], true
	default: // lastNotNull and any reducer not listed here
		return vals[len(vals)-1], true
	}
}

func sum(vs []float64) float64 {
	s := 0.0
	for _, v := range vs {
		s += v
	}
	return s
}

func fold(vs []float64, f func(a, b float64) float64) float64 {
	r := vs[0]
	for _, v := range vs[1:] {
		r = f(r, v)
	}
	return r
}

// statValue is one value of a stat panel.
type statValue struct {
	Name  string
	Value float64
	Text  Formatted
}

// statValues reduces each series of a stat panel.
func statValues(p Panel, d PanelData) []statValue {
	fd := p.FieldConfig.Defaults
	dec := -1
	if fd.Decimals != nil {
		dec = *fd.Decimals
	}
	var out []statValue
	for _, s := range d.Series {
		v, ok := reduce(s.Points, p.Options.ReduceOptions.Calcs)
		if !ok {
			continue
		}
		f := formatValue(fd.Unit, v, dec)
		if mv, ok := mappedValue(fd.Mappings, v); ok && mv.Text != "" {
			f = Formatted{Text: mv.Text}
		}
		out = append(out, statValue{Name: s.Name, Value: v, Text: f})
	}
	return out
}

// drawStat draws a stat panel: each value big, on the colour its
// threshold gives (colorMode "background") or in that colour ("value").
// Several values share the panel side by side, each under its name.
func (c *canvas) drawStat(r Rect, p Panel, d PanelData) {
	fd := p.FieldConfig.Defaults
	vals := statValues(p, d)
	if len(vals) == 0 {
		cr := c.drawFrame(r, p.Title, colPanel, d)
		c.drawNoData(cr, d, stNoData)
		return
	}
	mode := p.Options.ColorMode
	if mode == "" {
		mode = "value"
	}
	bg := colPanel
	single, singleOK := thresholdColor(fd.Thresholds, vals[0].Value)
	if mv, ok := mappedValue(fd.Mappings, vals[0].Value); ok && mv.Color != "" {
		single, singleOK = parseColor(mv.Color), true
	}
	if (mode == "background" || mode == "background_solid") && len(vals) == 1 && singleOK {
		c.drawStatBackground(r, single, mode == "background")
		c.strokeRounded(r, panelRadius, 1, colBorder)
		c.text(c.fit(p.Title, stTitle, r.W-2*panelPad), r.X+panelPad, r.Y+panelHeaderH/2, textStyle{14, true, colStatText}, 0)
	} else {
		c.drawFrame(r, p.Title, bg, d)
	}
	cr := Rect{r.X + panelPad, r.Y + panelHeaderH, r.W - 2*panelPad, r.H - panelHeaderH - panelPad}

	n := float64(len(vals))
	horizontal := p.Options.Orientation == "horizontal" || (p.Options.Orientation != "vertical" && cr.W >= cr.H)
	for i, v := range vals {
		cell := Rect{cr.X + float64(i)*cr.W/n, cr.Y, cr.W / n, cr.H}
		if !horizontal {
			cell = Rect{cr.X, cr.Y + float64(i)*cr.H/n, cr.W, cr.H / n}
		}
		col, ok := thresholdColor(fd.Thresholds, v.Value)
		if mv, mok := mappedValue(fd.Mappings, v.Value); mok && mv.Color != "" {
			col, ok = parseColor(mv.Color), true
		}
		if len(vals) > 1 && (mode == "background" || mode == "background_solid") && ok {
			inset := Rect{cell.X + 2, cell.Y, cell.W - 4, cell.H}
			c.drawStatBackground(inset, col, mode == "background")
		}
		textCol := colText
		switch {
		case mode == "value" && ok:
			textCol = col
		case mode == "background" || mode == "background_solid":
			textCol = colStatText
		}
		showName := p.Options.TextMode == "value_and_name" || p.Options.TextMode == "name" ||
			(p.Options.TextMode == "" || p.Options.TextMode == "auto") && len(vals) > 1
		valueArea := cell
		if showName {
			nameSize := math.Min(16, math.Max(11, cell.H*0.16))
			st := textStyle{nameSize, false, textCol}
			c.text(c.fit(v.Name, st, cell.W-8), cell.X+cell.W/2, cell.Y+nameSize*0.8, st, 0.5)
			valueArea = Rect{cell.X, cell.Y + nameSize*1.6, cell.W, cell.H - nameSize*1.6}
		}
		if p.Options.TextMode != "name" {
			c.drawBigValue(valueArea, v.Text, textCol)
		}
	}
}

// drawStatBackground fills r with col, as a gradient from a lighter
// shade in the top left (Grafana's "background" mode) or solid.
func (c *canvas) drawStatBackground(r Rect, col color.NRGBA, gradient bool) {
	if !gradient {
		c.fillRounded(r, panelRadius, col)
		return
	}
	// Fill patterns are evaluated in picture pixels.
	x0, y0 := c.dc.TransformPoint(r.X, r.Y)
	x1, y1 := c.dc.TransformPoint(r.right(), r.bottom())
	g := gg.NewLinearGradient(x0, y0, x1, y1)
	g.AddColorStop(0, lighten(col, 0.12))
	g.AddColorStop(1, darken(col, 0.12))
	c.dc.SetFillStyle(g)
	c.dc.DrawRoundedRectangle(r.X, r.Y, r.W, r.H, panelRadius)
	c.dc.Fill()
}

// drawBigValue writes a stat value as large as fits in r: the number at
// full size, prefix and suffix at 70 % (as Grafana's BigValue does).
func (c *canvas) drawBigValue(r Rect, f Formatted, col color.NRGBA) {
	size := math.Min(r.H*0.62, 80)
	var wNum, wAff float64
	for ; size > 8; size-- {
		num := textStyle{size, true, col}
		aff := textStyle{size * 0.7, true, col}
		wNum = c.width(f.Text, num)
		wAff = c.width(f.Prefix, aff) + c.width(f.Suffix, aff)
		if wNum+wAff <= r.W*0.9 {
			break
		}
	}
	num := textStyle{size, true, col}
	aff := textStyle{size * 0.7, true, col}
	x := r.X + (r.W-wNum-wAff)/2
	y := r.Y + r.H/2
	c.text(f.Prefix, x, y+(size-size*0.7)*0.36, aff, 0)
	x += c.width(f.Prefix, aff)
	c.text(f.Text, x, y, num, 0)
	x += wNum
	c.text(f.Suffix, x, y+(size-size*0.7)*0.36, aff, 0)
}
