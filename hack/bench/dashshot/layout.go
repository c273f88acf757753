package main

// Grafana's grid: 24 columns, rows of 30 px, 8 px between panels
// (GRID_CELL_HEIGHT, GRID_CELL_VMARGIN, GRID_COLUMN_COUNT).
const (
	gridColumns = 24
	cellHeight  = 30
	cellMargin  = 8
	pagePadding = 16
	headerH     = 100 // top bar with title and time range, then the variable pickers
)

// Rect is a rectangle in pixels, origin top left.
type Rect struct{ X, Y, W, H float64 }

func (r Rect) right() float64  { return r.X + r.W }
func (r Rect) bottom() float64 { return r.Y + r.H }

// overlaps says whether two rectangles share any area.
func (r Rect) overlaps(o Rect) bool {
	return r.X < o.right() && o.X < r.right() && r.Y < o.bottom() && o.Y < r.bottom()
}

// Placed is a panel and where it is drawn.
type Placed struct {
	Panel Panel
	Rect  Rect
}

// Layout is the whole picture: its size, the header and every panel.
type Layout struct {
	Width, Height int
	Header        Rect
	Panels        []Placed
}

// layoutDashboard places the visible panels of d on a picture width pixels
// wide the way Grafana's grid does: x and w in 24ths of the width less the
// gutters, y and h in 30 px rows plus 8 px gutters.
func layoutDashboard(d *Dashboard, width int) Layout {
	inner := float64(width - 2*pagePadding)
	col := (inner - float64((gridColumns-1)*cellMargin)) / gridColumns
	top := float64(headerH + pagePadding)
	l := Layout{Width: width, Header: Rect{0, 0, float64(width), headerH}}
	rows := 0
	for _, p := range d.visiblePanels() {
		g := p.GridPos
		r := Rect{
			X: pagePadding + float64(g.X)*(col+cellMargin),
			Y: top + float64(g.Y*(cellHeight+cellMargin)),
			W: float64(g.W)*col + float64((g.W-1)*cellMargin),
			H: float64(g.H*cellHeight + (g.H-1)*cellMargin),
		}
		l.Panels = append(l.Panels, Placed{Panel: p, Rect: r})
		rows = max(rows, g.Y+g.H)
	}
	l.Height = int(top) + rows*(cellHeight+cellMargin) - cellMargin + pagePadding
	return l
}
