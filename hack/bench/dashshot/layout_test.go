package main

import (
	"math"
	"testing"
)

// TestLayoutRealDashboard places the chart's dashboard: no two panels
// overlap, every panel is inside the picture, full-width panels span it,
// and neighbours are one gutter apart, as on Grafana's grid.
func TestLayoutRealDashboard(t *testing.T) {
	d, err := loadDashboard(realDashboard)
	if err != nil {
		t.Fatal(err)
	}
	for _, width := range []int{1200, 1800, 2400} {
		l := layoutDashboard(d, width)
		if len(l.Panels) != len(d.Panels) {
			t.Fatalf("width %d: %d panels placed, the dashboard has %d", width, len(l.Panels), len(d.Panels))
		}
		inner := float64(width - 2*pagePadding)
		for i, a := range l.Panels {
			r := a.Rect
			if r.X < pagePadding-0.01 || r.right() > float64(width-pagePadding)+0.01 || r.Y < headerH || r.bottom() > float64(l.Height) {
				t.Errorf("width %d: panel %d %+v outside the %dx%d picture", width, a.Panel.ID, r, l.Width, l.Height)
			}
			if a.Panel.GridPos.W == gridColumns && math.Abs(r.W-inner) > 0.01 {
				t.Errorf("width %d: full-width panel %d is %.1f px, want %.1f", width, a.Panel.ID, r.W, inner)
			}
			if want := float64(a.Panel.GridPos.H*cellHeight + (a.Panel.GridPos.H-1)*cellMargin); r.H != want {
				t.Errorf("width %d: panel %d is %.0f px high, want %.0f", width, a.Panel.ID, r.H, want)
			}
			for _, b := range l.Panels[i+1:] {
				if r.overlaps(b.Rect) {
					t.Errorf("width %d: panels %d and %d overlap: %+v %+v", width, a.Panel.ID, b.Panel.ID, r, b.Rect)
				}
				ga, gb := a.Panel.GridPos, b.Panel.GridPos
				if ga.Y == gb.Y && ga.X+ga.W == gb.X {
					if gap := b.Rect.X - r.right(); math.Abs(gap-cellMargin) > 0.01 {
						t.Errorf("width %d: panels %d and %d are %.2f px apart, want %d", width, a.Panel.ID, b.Panel.ID, gap, cellMargin)
					}
				}
			}
		}
	}
}

func TestLayoutGrid(t *testing.T) {
	d, err := parseDashboard([]byte(`{"panels":[
		{"id":1,"type":"row","gridPos":{"x":0,"y":0,"w":24,"h":1}},
		{"id":2,"type":"stat","gridPos":{"x":0,"y":1,"w":12,"h":4}},
		{"id":3,"type":"stat","gridPos":{"x":12,"y":1,"w":12,"h":4}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	// 24 columns of 40 px with 23 gutters of 8 px: 1144 px inside the padding.
	l := layoutDashboard(d, 1144+2*pagePadding)
	col := 40.0
	top := float64(headerH + pagePadding)
	want := map[int]Rect{
		1: {pagePadding, top, 1144, 30},
		2: {pagePadding, top + 38, 12*col + 11*8, 4*30 + 3*8},
		3: {pagePadding + 12*(col+8), top + 38, 12*col + 11*8, 4*30 + 3*8},
	}
	for _, p := range l.Panels {
		if p.Rect != want[p.Panel.ID] {
			t.Errorf("panel %d at %+v, want %+v", p.Panel.ID, p.Rect, want[p.Panel.ID])
		}
	}
	if wantH := int(top) + 5*38 - 8 + pagePadding; l.Height != wantH {
		t.Errorf("height %d, want %d", l.Height, wantH)
	}
}
