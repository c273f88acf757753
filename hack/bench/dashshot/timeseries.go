package main

import (
	"image/color"
	"math"
	"time"
)

// plotted is a series ready to draw: its colour and, per point, the value
// drawn (top) and what its area fills down to (base).
type plotted struct {
	Name      string
	Color     color.NRGBA
	T         []time.Time
	Top, Base []float64
}

// stackSeries turns the panel's series into plotted ones. With stacking
// "normal" each series sits on the sum of those before it at the same
// time stamp (query_range answers share the step grid); a missing value
// adds nothing, as Grafana stacks nulls.
func stackSeries(series []NamedSeries, stacked bool) []plotted {
	acc := map[int64]float64{}
	out := make([]plotted, len(series))
	for i, s := range series {
		p := plotted{Name: s.Name, Color: paletteColor(i)}
		for _, pt := range s.Points {
			base := 0.0
			if stacked {
				base = acc[pt.T.UnixMilli()]
			}
			top := pt.V
			if finite(pt.V) {
				top = base + pt.V
				if stacked {
					acc[pt.T.UnixMilli()] = top
				}
			}
			p.T = append(p.T, pt.T)
			p.Top = append(p.Top, top)
			p.Base = append(p.Base, base)
		}
		out[i] = p
	}
	return out
}

// segments splits a series where a value is missing or not finite, or
// where consecutive points are more than 1.5 steps apart: Grafana inserts
// a null there and, with spanNulls off, breaks the line.
func segments(ts []time.Time, vs []float64, step time.Duration) [][2]int {
	var out [][2]int
	start := -1
	for i := range vs {
		ok := finite(vs[i])
		if ok && start >= 0 && ts[i].Sub(ts[i-1]) > step*3/2 {
			out = append(out, [2]int{start, i})
			start = -1
		}
		if ok && start < 0 {
			start = i
		}
		if !ok && start >= 0 {
			out = append(out, [2]int{start, i})
			start = -1
		}
	}
	if start >= 0 {
		out = append(out, [2]int{start, len(vs)})
	}
	return out
}

// drawTimeSeries draws a time series panel: lines (stacked and filled as
// the panel says), value axis in the panel's unit, time axis, legend.
func (c *canvas) drawTimeSeries(r Rect, p Panel, d PanelData, t Timing, loc *time.Location) {
	cr := c.drawFrame(r, p.Title, colPanel, d)
	if !d.hasData() {
		c.drawNoData(cr, d, stNoData)
		return
	}
	fd := p.FieldConfig.Defaults
	series := stackSeries(d.Series, fd.Custom.Stacking.Mode == "normal")

	plotBottom := cr.bottom()
	var legend []legendLine
	hidden := 0
	if p.Options.Legend.shown() {
		items := make([]legendItem, len(series))
		for i, s := range series {
			items[i] = legendItem{s.Name, s.Color}
		}
		legend, hidden = c.layoutLegend(items, cr.W, max(1, int(cr.H*0.3/legendLineH)))
		plotBottom -= float64(len(legend))*legendLineH + 4
	}
	axisH := 20.0
	plotTop := cr.Y + 6
	plotH := plotBottom - axisH - plotTop

	lo, hi := math.Inf(1), math.Inf(-1)
	for _, s := range series {
		for i, v := range s.Top {
			if finite(v) {
				lo, hi = math.Min(lo, math.Min(v, s.Base[i])), math.Max(hi, v)
			}
		}
	}
	ys := niceScale(lo, hi, max(2, int(plotH/45)), fd.Min, fd.Max)
	ticks := ys.ticks()
	labels := make([]string, len(ticks))
	labelW := 0.0
	for i, v := range ticks {
		labels[i] = tickLabel(fd.Unit, v, ys.Step)
		labelW = math.Max(labelW, c.width(labels[i], stAxis))
	}
	plot := Rect{cr.X + labelW + 8, plotTop, cr.W - labelW - 12, plotH}
	tx := func(tm time.Time) float64 {
		return plot.X + float64(tm.Sub(t.Start))/float64(t.End.Sub(t.Start))*plot.W
	}
	ty := func(v float64) float64 { return plot.bottom() - (v-ys.Min)/(ys.Max-ys.Min)*plot.H }

	for i, v := range ticks {
		y := math.Round(ty(v)) + 0.5
		c.line(plot.X, y, plot.right(), y, 1, colGrid)
		c.text(labels[i], plot.X-8, y, stAxis, 1)
	}
	for _, tk := range timeTicks(t.Start, t.End, plot.W, 90, loc) {
		x := math.Round(tx(tk.T)) + 0.5
		c.line(x, plot.Y, x, plot.bottom(), 1, colGrid)
		if hw := c.width(tk.Label, stAxis) / 2; x-hw >= cr.X && x+hw <= cr.right() {
			c.text(tk.Label, x, plot.bottom()+axisH/2+2, stAxis, 0.5)
		}
	}

	lw := 1.0
	if fd.Custom.LineWidth != nil {
		lw = *fd.Custom.LineWidth
	}
	fill := 0.0
	if fd.Custom.FillOpacity != nil {
		fill = *fd.Custom.FillOpacity / 100
	}
	floor := math.Max(ys.Min, math.Min(0, ys.Max))
	c.clip(Rect{plot.X, plot.Y - lw, plot.W, plot.H + 2*lw})
	for _, s := range series {
		for _, seg := range segments(s.T, s.Top, t.Step) {
			if fill > 0 {
				for i := seg[0]; i < seg[1]; i++ {
					c.dc.LineTo(tx(s.T[i]), ty(s.Top[i]))
				}
				for i := seg[1] - 1; i >= seg[0]; i-- {
					base := s.Base[i]
					if base == 0 {
						base = floor
					}
					c.dc.LineTo(tx(s.T[i]), ty(base))
				}
				c.dc.ClosePath()
				c.dc.SetColor(withAlpha(s.Color, fill))
				c.dc.Fill()
			}
			if seg[1]-seg[0] == 1 && p.FieldConfig.Defaults.Custom.ShowPoints != "never" {
				c.dc.DrawCircle(tx(s.T[seg[0]]), ty(s.Top[seg[0]]), 2.5)
				c.dc.SetColor(s.Color)
				c.dc.Fill()
				continue
			}
			for i := seg[0]; i < seg[1]; i++ {
				c.dc.LineTo(tx(s.T[i]), ty(s.Top[i]))
			}
			c.dc.SetColor(s.Color)
			c.lineWidth(lineScale * lw)
			c.dc.SetLineJoinRound()
			c.dc.Stroke()
		}
	}
	c.unclip()
	if len(legend) > 0 {
		c.drawLegend(legend, hidden, Rect{cr.X, plot.bottom() + axisH + 4, cr.W, float64(len(legend)) * legendLineH})
	}
}

// lineScale widens lines a little: Grafana's 1 px lines are drawn on a
// device-pixel-ratio 2 screen at twice that, and a 1 px line in a picture
// scaled down in a browser all but disappears.
const lineScale = 1.5
