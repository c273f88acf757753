package main

import (
	"math"
	"strconv"
	"strings"
)

// Formatted is a value as Grafana shows it: prefix, number, suffix. The
// suffix usually starts with a space ("5 ms").
type Formatted struct {
	Prefix, Text, Suffix string
}

func (f Formatted) String() string { return f.Prefix + f.Text + f.Suffix }

// scaled is how a unit shows one value: multiply by Factor, then write the
// prefix and suffix around it.
type scaled struct {
	Factor         float64
	Prefix, Suffix string
}

// scaleFor picks the scale of value v in unit, after Grafana's value
// formats (packages/grafana-data/src/valueFormats): time units step
// through ns/µs/ms/s/min/hour/day, counts through K/M/B, bytes through
// powers of 1024. An unknown unit is a suffix of its own, as in Grafana.
func scaleFor(unit string, v float64) scaled {
	a := math.Abs(v)
	switch unit {
	case "", "none":
		return scaled{Factor: 1}
	case "short":
		return siScale(a, 1000, []string{"", " K", " Mil", " Bil", " Tri"}, "", "")
	case "reqps":
		return countUnit(a, "req/s")
	case "ops":
		return countUnit(a, "ops/s")
	case "rps":
		return countUnit(a, "rd/s")
	case "wps":
		return countUnit(a, "wr/s")
	case "percentunit":
		return scaled{Factor: 100, Suffix: "%"}
	case "percent":
		return scaled{Factor: 1, Suffix: "%"}
	case "s":
		return timeScale(a)
	case "ms":
		return timeScale(a / 1000).times(1.0 / 1000)
	case "µs", "us":
		return timeScale(a / 1e6).times(1.0 / 1e6)
	case "ns":
		return timeScale(a / 1e9).times(1.0 / 1e9)
	case "bytes":
		return siScale(a, 1024, []string{" B", " KiB", " MiB", " GiB", " TiB", " PiB"}, "", "")
	case "decbytes":
		return siScale(a, 1000, []string{" B", " kB", " MB", " GB", " TB", " PB"}, "", "")
	case "currencyUSD":
		return siScale(a, 1000, []string{"", "K", "M", "B", "T"}, "$", "")
	case "currencyEUR":
		return siScale(a, 1000, []string{"", "K", "M", "B", "T"}, "€", "")
	case "currencyGBP":
		return siScale(a, 1000, []string{"", "K", "M", "B", "T"}, "£", "")
	}
	if p, ok := strings.CutPrefix(unit, "prefix:"); ok {
		return scaled{Factor: 1, Prefix: p}
	}
	if s, ok := strings.CutPrefix(unit, "suffix:"); ok {
		return scaled{Factor: 1, Suffix: s}
	}
	return scaled{Factor: 1, Suffix: " " + unit}
}

func (s scaled) times(f float64) scaled { s.Factor *= f; return s }

// siScale is Grafana's scaledUnits: the largest power of step at or below
// a, never below the first suffix.
func siScale(a, step float64, suffixes []string, prefix, after string) scaled {
	i := 0
	if a > 0 {
		i = int(math.Floor(math.Log(a) / math.Log(step)))
	}
	i = max(0, min(i, len(suffixes)-1))
	return scaled{Factor: math.Pow(step, -float64(i)), Prefix: prefix, Suffix: suffixes[i] + after}
}

// countUnit is Grafana's simpleCountUnit: K, M, B scaling then the symbol.
func countUnit(a float64, symbol string) scaled {
	return siScale(a, 1000, []string{"", "K", "M", "B", "T"}, "", " "+symbol)
}

// timeScale is Grafana's toSeconds for a duration of a seconds; zero
// stays in seconds.
func timeScale(a float64) scaled {
	switch {
	case a == 0:
		return scaled{Factor: 1, Suffix: " s"}
	case a < 1e-6:
		return scaled{Factor: 1e9, Suffix: " ns"}
	case a < 1e-3:
		return scaled{Factor: 1e6, Suffix: " µs"}
	case a < 1:
		return scaled{Factor: 1e3, Suffix: " ms"}
	case a < 60:
		return scaled{Factor: 1, Suffix: " s"}
	case a < 3600:
		return scaled{Factor: 1.0 / 60, Suffix: " min"}
	case a < 86400:
		return scaled{Factor: 1.0 / 3600, Suffix: " hour"}
	case a < 604800:
		return scaled{Factor: 1.0 / 86400, Suffix: " day"}
	default:
		return scaled{Factor: 1.0 / 604800, Suffix: " week"}
	}
}

// formatValue writes v in unit. decimals < 0 chooses them as Grafana's
// toFixed does (about two significant digits).
func formatValue(unit string, v float64, decimals int) Formatted {
	switch {
	case math.IsNaN(v):
		return Formatted{Text: "NaN"}
	case math.IsInf(v, 1):
		return Formatted{Text: "∞"}
	case math.IsInf(v, -1):
		return Formatted{Text: "-∞"}
	}
	s := scaleFor(unit, v)
	x := v * s.Factor
	if decimals < 0 {
		decimals = autoDecimals(x)
	}
	return Formatted{Prefix: s.Prefix, Text: toFixed(x, decimals), Suffix: s.Suffix}
}

// toFixed writes x with decimals digits, rounding halves away from zero
// as JavaScript's toFixed does for values it holds exactly (12.5 → 13).
func toFixed(x float64, decimals int) string {
	p := math.Pow10(decimals)
	if r := math.Round(x*p) / p; !math.IsInf(r, 0) {
		x = r
	}
	return strconv.FormatFloat(x, 'f', decimals, 64)
}

// autoDecimals is Grafana's getDecimalsForValue: two significant digits,
// three when the leading digits are above 2.25 (so 2.5 keeps its 5), none
// for a whole number.
func autoDecimals(x float64) int {
	a := math.Abs(x)
	if a == 0 || x == math.Trunc(x) {
		return 0
	}
	mag := math.Floor(math.Log10(a))
	dec := -int(mag) + 1
	if a/math.Pow(10, mag) > 2.25 {
		dec++
	}
	return max(0, dec)
}

// tickLabel writes an axis tick: the decimals are those the tick step needs
// in the tick's own scale, so 0.5 s steps read "500 ms", "1.0 s", "1.5 s".
func tickLabel(unit string, v, step float64) string {
	if math.Abs(v) < step*1e-9 {
		// Zero reads "0" whatever the step, as Grafana's axes show it.
		return formatValue(unit, 0, 0).String()
	}
	s := scaleFor(unit, v)
	return formatValue(unit, v, stepDecimals(step*s.Factor)).String()
}

// stepDecimals is how many decimals show every multiple of step apart.
func stepDecimals(step float64) int {
	step = math.Abs(step)
	for d := range 7 {
		x := step * math.Pow10(d)
		if math.Abs(x-math.Round(x)) < 1e-6*math.Max(1, x) {
			return d
		}
	}
	return 6
}
