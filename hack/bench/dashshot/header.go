package main

import (
	"math"
	"time"
)

// drawHeader draws Grafana's top bar (breadcrumb with the dashboard title,
// the absolute time range) and the template variable pickers under it.
func (c *canvas) drawHeader(l Layout, d *Dashboard, sel map[string]Selection, t Timing, loc *time.Location, dsName string) {
	w := float64(l.Width)
	c.fillRect(Rect{0, 0, w, 48}, colPanel)
	c.line(0, 48.5, w, 48.5, 1, colBorder)

	crumb := textStyle{15, false, colTextWeak}
	x := float64(pagePadding)
	c.text("Dashboards", x, 24, crumb, 0)
	x += c.width("Dashboards", crumb) + 12
	c.chevron(x, 24, 8, false, colTextWeak)
	x += 12
	c.text(d.Title, x, 24, textStyle{15, true, colText}, 0)

	layout := "2006-01-02 15:04:05"
	rng := t.Start.In(loc).Format(layout) + " to " + t.End.In(loc).Format(layout) + " " + zoneName(t.End, loc)
	st := textStyle{13, false, colText}
	bw := c.width(rng, st) + 44
	box := Rect{w - pagePadding - bw, 10, bw, 28}
	c.fillRounded(box, 2, colInput)
	c.strokeRounded(box, 2, 1, colBorder)
	c.clock(box.X+16, box.Y+box.H/2, 6.5)
	c.text(rng, box.X+30, box.Y+box.H/2, st, 0)

	x = pagePadding
	y := 64.0
	for _, v := range d.Templating.List {
		if v.Hide != 0 {
			continue
		}
		label := v.Label
		if label == "" {
			label = v.Name
		}
		value := sel[v.Name].display()
		if v.Type == "datasource" {
			value = dsName
		}
		lw := c.width(label, st) + 16
		vw := math.Max(c.width(value, st)+36, 80)
		c.fillRounded(Rect{x, y, lw, 28}, 2, colLabelBox)
		c.text(label, x+8, y+14, st, 0)
		vb := Rect{x + lw, y, vw, 28}
		c.fillRounded(vb, 2, colInput)
		c.strokeRounded(vb, 2, 1, colBorder)
		c.text(value, vb.X+8, y+14, st, 0)
		c.chevron(vb.right()-14, y+14, 8, true, colTextWeak)
		x += lw + vw + 12
	}
}

// clock draws a small clock face, the time picker's icon.
func (c *canvas) clock(x, y, r float64) {
	c.dc.SetColor(colText)
	c.lineWidth(1.4)
	c.dc.DrawCircle(x, y, r)
	c.dc.Stroke()
	c.dc.MoveTo(x, y-r*0.6)
	c.dc.LineTo(x, y)
	c.dc.LineTo(x+r*0.45, y+r*0.3)
	c.dc.Stroke()
}

// zoneName is the zone's abbreviation at t, or its name when that is only
// an offset.
func zoneName(t time.Time, loc *time.Location) string {
	name, _ := t.In(loc).Zone()
	if name == "" || name[0] == '+' || name[0] == '-' {
		return loc.String()
	}
	return name
}
