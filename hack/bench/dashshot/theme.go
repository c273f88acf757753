package main

import (
	"image/color"
	"strconv"
	"strings"
)

// Grafana's default (dark) theme, approximately.
var (
	colCanvas     = rgb(0x11, 0x12, 0x17)
	colPanel      = rgb(0x18, 0x1b, 0x1f)
	colBorder     = color.NRGBA{204, 204, 220, 30}
	colText       = rgb(0xcc, 0xcc, 0xdc)
	colTextWeak   = color.NRGBA{204, 204, 220, 166}
	colGrid       = color.NRGBA{240, 250, 255, 23}
	colInput      = rgb(0x11, 0x12, 0x17)
	colLabelBox   = rgb(0x22, 0x25, 0x2b)
	colError      = rgb(0xf2, 0x49, 0x5c)
	colStatText   = rgb(0xff, 0xff, 0xff)
	colNoDataText = colTextWeak
)

// classicPalette is Grafana's palette-classic, in order.
var classicPalette = []color.NRGBA{
	hex("#7EB26D"), hex("#EAB839"), hex("#6ED0E0"), hex("#EF843C"), hex("#E24D42"), hex("#1F78C1"),
	hex("#BA43A9"), hex("#705DA0"), hex("#508642"), hex("#CCA300"), hex("#447EBC"), hex("#C15C17"),
	hex("#890F02"), hex("#0A437C"), hex("#6D1F62"), hex("#584477"), hex("#B7DBAB"), hex("#F4D598"),
	hex("#70DBED"), hex("#F9BA8F"), hex("#F29191"), hex("#82B5D8"), hex("#E5A8E2"), hex("#AEA2E0"),
}

// namedColors are the dark theme's named colors that thresholds and
// mappings use.
var namedColors = map[string]color.NRGBA{
	"green": hex("#73BF69"), "semi-dark-green": hex("#56A64B"), "dark-green": hex("#37872D"), "light-green": hex("#96D98D"),
	"yellow": hex("#FADE2A"), "semi-dark-yellow": hex("#F2CC0C"), "dark-yellow": hex("#E0B400"), "light-yellow": hex("#FFEE52"),
	"red": hex("#F2495C"), "semi-dark-red": hex("#E02F44"), "dark-red": hex("#C4162A"), "light-red": hex("#FF7383"),
	"orange": hex("#FF9830"), "semi-dark-orange": hex("#FF780A"), "dark-orange": hex("#FA6400"), "light-orange": hex("#FFB357"),
	"blue": hex("#5794F2"), "semi-dark-blue": hex("#3274D9"), "dark-blue": hex("#1F60C4"), "light-blue": hex("#8AB8FF"),
	"purple": hex("#B877D9"), "semi-dark-purple": hex("#A352CC"), "dark-purple": hex("#8F3BB8"), "light-purple": hex("#CA95E5"),
	"text": colText, "transparent": {},
}

// paletteColor is series i's color in palette-classic.
func paletteColor(i int) color.NRGBA { return classicPalette[i%len(classicPalette)] }

// parseColor reads a Grafana color: a name, #rgb, #rrggbb or rgb(a)(...).
// An unknown color is the text color, so it still shows.
func parseColor(s string) color.NRGBA {
	s = strings.TrimSpace(strings.ToLower(s))
	if c, ok := namedColors[s]; ok {
		return c
	}
	if strings.HasPrefix(s, "#") {
		return hex(s)
	}
	if inner, ok := strings.CutPrefix(s, "rgba("); ok {
		return rgbFunc(strings.TrimSuffix(inner, ")"))
	}
	if inner, ok := strings.CutPrefix(s, "rgb("); ok {
		return rgbFunc(strings.TrimSuffix(inner, ")"))
	}
	return colText
}

func rgbFunc(inner string) color.NRGBA {
	parts := strings.Split(inner, ",")
	if len(parts) < 3 {
		return colText
	}
	var v [4]float64
	v[3] = 1
	for i := 0; i < len(parts) && i < 4; i++ {
		f, err := strconv.ParseFloat(strings.TrimSpace(parts[i]), 64)
		if err != nil {
			return colText
		}
		v[i] = f
	}
	return color.NRGBA{uint8(v[0]), uint8(v[1]), uint8(v[2]), uint8(v[3] * 255)}
}

func hex(s string) color.NRGBA {
	s = strings.TrimPrefix(s, "#")
	if len(s) == 3 {
		s = string([]byte{s[0], s[0], s[1], s[1], s[2], s[2]})
	}
	n, err := strconv.ParseUint(s, 16, 32)
	if err != nil || len(s) != 6 {
		return colText
	}
	return rgb(uint8(n>>16), uint8(n>>8), uint8(n))
}

func rgb(r, g, b uint8) color.NRGBA { return color.NRGBA{r, g, b, 255} }

// withAlpha is c at opacity a (0..1).
func withAlpha(c color.NRGBA, a float64) color.NRGBA {
	c.A = uint8(float64(c.A) * max(0, min(1, a)))
	return c
}

// lighten mixes c towards white by f (0..1).
func lighten(c color.NRGBA, f float64) color.NRGBA {
	mix := func(x uint8) uint8 { return uint8(float64(x) + (255-float64(x))*f) }
	return color.NRGBA{mix(c.R), mix(c.G), mix(c.B), c.A}
}

// darken mixes c towards black by f (0..1).
func darken(c color.NRGBA, f float64) color.NRGBA {
	mix := func(x uint8) uint8 { return uint8(float64(x) * (1 - f)) }
	return color.NRGBA{mix(c.R), mix(c.G), mix(c.B), c.A}
}

// thresholdColor is the color of the highest step at or below v; the first
// step (value null) applies from -∞.
func thresholdColor(t Thresholds, v float64) (color.NRGBA, bool) {
	var c color.NRGBA
	found := false
	for _, s := range t.Steps {
		if s.Value == nil || v >= *s.Value {
			c, found = parseColor(s.Color), true
		}
	}
	return c, found
}

// mappedValue is a value mapping's text and color for v, if one maps it.
func mappedValue(ms []Mapping, v float64) (MappingValue, bool) {
	key := strconv.FormatFloat(v, 'f', -1, 64)
	for _, m := range ms {
		if m.Type != "value" {
			continue
		}
		if mv, ok := m.Options[key]; ok {
			return mv, true
		}
	}
	return MappingValue{}, false
}
