package main

import (
	"image/color"
	"strconv"
	"strings"
)

// Panel chrome, after Grafana 10: a 32 px header with the title, 8 px
// padding around the content.
const (
	panelHeaderH = 32
	panelPad     = 8
	panelRadius  = 3
)

// drawFrame draws a panel's background, border and title, with bg as the
// background (a stat panel colours its own), and returns the content area.
func (c *canvas) drawFrame(r Rect, title string, bg color.Color, d PanelData) Rect {
	c.fillRounded(r, panelRadius, bg)
	c.strokeRounded(r, panelRadius, 1, colBorder)
	tx := r.X + panelPad
	if d.Err != nil {
		// Grafana marks a failed query with a red corner in the header.
		c.dc.SetColor(colError)
		c.dc.MoveTo(r.X+1, r.Y+1)
		c.dc.LineTo(r.X+22, r.Y+1)
		c.dc.LineTo(r.X+1, r.Y+22)
		c.dc.ClosePath()
		c.dc.Fill()
		c.text("!", r.X+6, r.Y+8, textStyle{11, true, colStatText}, 0.5)
		tx += 14
	}
	c.text(c.fit(title, stTitle, r.right()-panelPad-tx), tx, r.Y+panelHeaderH/2, stTitle, 0)
	return Rect{r.X + panelPad, r.Y + panelHeaderH, r.W - 2*panelPad, r.H - panelHeaderH - panelPad}
}

// drawNoData writes Grafana's "No data" in the middle of the content area,
// and the query error below it when there was one.
func (c *canvas) drawNoData(cr Rect, d PanelData, st textStyle) {
	c.text("No data", cr.X+cr.W/2, cr.Y+cr.H/2, st, 0.5)
	if d.Err != nil {
		msg := strings.ReplaceAll(d.Err.Error(), "\n", "; ")
		c.text(c.fit(msg, stErrorText, cr.W-8), cr.X+cr.W/2, cr.Y+cr.H/2+22, stErrorText, 0.5)
	}
}

// drawRow draws a row header: a chevron and the title, and for a collapsed
// row how many panels it hides.
func (c *canvas) drawRow(r Rect, p Panel) {
	y := r.Y + r.H/2
	c.chevron(r.X+8, y, 10, !p.Collapsed, colText)
	c.text(p.Title, r.X+22, y, stRow, 0)
	if p.Collapsed && len(p.Panels) > 0 {
		n := "(1 panel)"
		if len(p.Panels) > 1 {
			n = "(" + strconv.Itoa(len(p.Panels)) + " panels)"
		}
		c.text(n, r.X+30+c.width(p.Title, stRow), y, stAxis, 0)
	}
}

// drawUnsupported marks a panel type the renderer does not draw, so that
// a new panel in the dashboard is visible in the picture rather than lost.
func (c *canvas) drawUnsupported(r Rect, p Panel, d PanelData) {
	cr := c.drawFrame(r, p.Title, colPanel, d)
	c.text("panel type "+p.Type+" is not drawn by dashshot", cr.X+cr.W/2, cr.Y+cr.H/2, stNoData, 0.5)
}

// legendItem is one entry of a legend: a colour and a name.
type legendItem struct {
	Name  string
	Color color.Color
}

// legendLayout wraps legend items into lines within width w, at most
// maxLines of them; what does not fit ends the last line as "+N more".
type legendLine []legendItem

const (
	legendLineH  = 20
	legendSwatch = 14
	legendGap    = 16
)

func (c *canvas) layoutLegend(items []legendItem, w float64, maxLines int) ([]legendLine, int) {
	var lines []legendLine
	var cur legendLine
	x := 0.0
	for i, it := range items {
		iw := legendSwatch + 6 + c.width(it.Name, stLegend)
		if len(cur) > 0 && x+iw > w {
			lines = append(lines, cur)
			if len(lines) == maxLines {
				return lines, len(items) - i
			}
			cur, x = nil, 0
		}
		cur = append(cur, it)
		x += iw + legendGap
	}
	if len(cur) > 0 {
		lines = append(lines, cur)
	}
	return lines, 0
}

// drawLegend draws the lines from the top left of r.
func (c *canvas) drawLegend(lines []legendLine, hidden int, r Rect) {
	for li, line := range lines {
		y := r.Y + float64(li)*legendLineH + legendLineH/2
		x := r.X
		for _, it := range line {
			c.dc.SetColor(it.Color)
			c.dc.DrawRoundedRectangle(x, y-2, legendSwatch, 4, 1.5)
			c.dc.Fill()
			x += legendSwatch + 6
			name := c.fit(it.Name, stLegend, r.right()-x)
			c.text(name, x, y, stLegend, 0)
			x += c.width(name, stLegend) + legendGap
		}
		if hidden > 0 && li == len(lines)-1 {
			c.text("+"+strconv.Itoa(hidden)+" more", x, y, stAxis, 0)
		}
	}
}
