package main

import (
	"fmt"
	"image/color"
	"math"

	"codeberg.org/go-fonts/liberation/liberationsansbold"
	"codeberg.org/go-fonts/liberation/liberationsansregular"
	"git.sr.ht/~sbinet/gg"
	"golang.org/x/image/font"
	"golang.org/x/image/font/opentype"
)

// canvas draws on one picture with the Liberation Sans faces (the nearest
// open font to Grafana's Inter that ships as a Go module). Callers draw in
// dashboard pixels; scale maps them to picture pixels, like a browser's
// device pixel ratio: paths through the context's matrix, text and line
// widths by rendering them at the scaled size, so both stay sharp.
type canvas struct {
	dc            *gg.Context
	scale         float64
	regular, bold *opentype.Font
	faces         map[faceKey]font.Face
}

type faceKey struct {
	bold bool
	size float64
}

// newCanvas is a picture of w×h dashboard pixels drawn at scale.
func newCanvas(w, h int, scale float64) (*canvas, error) {
	reg, err := opentype.Parse(liberationsansregular.TTF)
	if err != nil {
		return nil, fmt.Errorf("font: %w", err)
	}
	bold, err := opentype.Parse(liberationsansbold.TTF)
	if err != nil {
		return nil, fmt.Errorf("font: %w", err)
	}
	dc := gg.NewContext(int(math.Round(float64(w)*scale)), int(math.Round(float64(h)*scale)))
	dc.Scale(scale, scale)
	return &canvas{dc: dc, scale: scale, regular: reg, bold: bold, faces: map[faceKey]font.Face{}}, nil
}

// face is a font face of size picture pixels (drawn at 72 dpi, so a point
// is a pixel).
func (c *canvas) face(bold bool, size float64) font.Face {
	size = math.Round(size*2) / 2
	k := faceKey{bold, size}
	if f, ok := c.faces[k]; ok {
		return f
	}
	src := c.regular
	if bold {
		src = c.bold
	}
	f, err := opentype.NewFace(src, &opentype.FaceOptions{Size: size, DPI: 72, Hinting: font.HintingNone})
	if err != nil {
		// The faces are compiled in and parsed at start; a size they
		// cannot take is a programming error.
		panic(fmt.Sprintf("font face of size %v: %v", size, err))
	}
	c.faces[k] = f
	return f
}

// textStyle is a font and a color.
type textStyle struct {
	size  float64
	bold  bool
	color color.Color
}

var (
	stTitle     = textStyle{14, true, colText}
	stAxis      = textStyle{12, false, colTextWeak}
	stLegend    = textStyle{12, false, colText}
	stRow       = textStyle{16, true, colText}
	stNoData    = textStyle{16, false, colNoDataText}
	stErrorText = textStyle{12, false, colError}
)

// width is the advance width of s in style st, in dashboard pixels.
func (c *canvas) width(s string, st textStyle) float64 {
	c.dc.SetFontFace(c.face(st.bold, st.size*c.scale))
	w, _ := c.dc.MeasureString(s)
	return w / c.scale
}

// text draws s anchored at x by ax (0: it starts at x, 0.5: it is centred
// on x, 1: it ends at x), its capital letters centred on y.
func (c *canvas) text(s string, x, y float64, st textStyle, ax float64) {
	size := st.size * c.scale
	c.dc.SetFontFace(c.face(st.bold, size))
	c.dc.SetColor(st.color)
	w, _ := c.dc.MeasureString(s)
	px, py := c.dc.TransformPoint(x, y)
	// Glyphs through the matrix would be scaled bitmaps: draw them at the
	// picture's size with the matrix set aside instead.
	c.dc.Push()
	c.dc.Identity()
	c.dc.DrawString(s, px-ax*w, py+0.36*size)
	c.dc.Pop()
}

// lineWidth sets the stroke width in dashboard pixels (gg strokes in
// picture pixels whatever the matrix).
func (c *canvas) lineWidth(w float64) { c.dc.SetLineWidth(w * c.scale) }

// fit shortens s with an ellipsis until it is at most maxW wide.
func (c *canvas) fit(s string, st textStyle, maxW float64) string {
	if c.width(s, st) <= maxW {
		return s
	}
	r := []rune(s)
	for len(r) > 0 {
		r = r[:len(r)-1]
		if t := string(r) + "…"; c.width(t, st) <= maxW {
			return t
		}
	}
	return ""
}

func (c *canvas) fillRect(r Rect, col color.Color) {
	c.dc.SetColor(col)
	c.dc.DrawRectangle(r.X, r.Y, r.W, r.H)
	c.dc.Fill()
}

func (c *canvas) fillRounded(r Rect, radius float64, col color.Color) {
	c.dc.SetColor(col)
	c.dc.DrawRoundedRectangle(r.X, r.Y, r.W, r.H, radius)
	c.dc.Fill()
}

func (c *canvas) strokeRounded(r Rect, radius, width float64, col color.Color) {
	c.dc.SetColor(col)
	c.lineWidth(width)
	c.dc.DrawRoundedRectangle(r.X+0.5, r.Y+0.5, r.W-1, r.H-1, radius)
	c.dc.Stroke()
}

func (c *canvas) line(x1, y1, x2, y2, width float64, col color.Color) {
	c.dc.SetColor(col)
	c.lineWidth(width)
	c.dc.DrawLine(x1, y1, x2, y2)
	c.dc.Stroke()
}

// clip limits drawing to r until unclip.
func (c *canvas) clip(r Rect) {
	c.dc.DrawRectangle(r.X, r.Y, r.W, r.H)
	c.dc.Clip()
}

func (c *canvas) unclip() { c.dc.ResetClip() }

// chevron draws a small "v" (down) or ">" (right) centred on x, y.
func (c *canvas) chevron(x, y, size float64, down bool, col color.Color) {
	c.dc.SetColor(col)
	c.lineWidth(1.6)
	h := size / 2
	if down {
		c.dc.MoveTo(x-h, y-h/2)
		c.dc.LineTo(x, y+h/2)
		c.dc.LineTo(x+h, y-h/2)
	} else {
		c.dc.MoveTo(x-h/2, y-h)
		c.dc.LineTo(x+h/2, y)
		c.dc.LineTo(x-h/2, y+h)
	}
	c.dc.Stroke()
}
