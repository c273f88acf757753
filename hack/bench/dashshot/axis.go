package main

import (
	"math"
	"time"
)

// yScale is a value axis: its range and the step between ticks.
type yScale struct {
	Min, Max, Step float64
}

// ticks are the tick values from Min to Max.
func (s yScale) ticks() []float64 {
	var out []float64
	for i := 0; ; i++ {
		v := s.Min + float64(i)*s.Step
		if v > s.Max+s.Step*1e-9 || i > 100 {
			return out
		}
		out = append(out, v)
	}
}

// niceScale chooses a range covering lo..hi and a step of 1, 2, 2.5 or 5
// times a power of ten giving about n ticks. Like Grafana's axis it starts
// at zero for data that are never negative, and keeps the panel's min and
// max where they are set.
func niceScale(lo, hi float64, n int, fixedMin, fixedMax *float64) yScale {
	if math.IsInf(lo, 0) || math.IsNaN(lo) || math.IsInf(hi, 0) || math.IsNaN(hi) {
		lo, hi = 0, 1
	}
	if lo >= 0 {
		lo = 0
	}
	if fixedMin != nil {
		lo = *fixedMin
	}
	if fixedMax != nil {
		hi = *fixedMax
	}
	if hi <= lo {
		if lo == 0 {
			hi = 1
		} else {
			hi = lo + math.Abs(lo)
		}
	}
	if fixedMax == nil {
		hi += (hi - lo) * 0.05 // head room, so a flat top line does not hug the frame
	}
	step := niceStep((hi - lo) / float64(max(n, 1)))
	s := yScale{Min: math.Floor(lo/step) * step, Max: math.Ceil(hi/step-1e-9) * step, Step: step}
	if fixedMin != nil {
		s.Min = *fixedMin
	}
	if fixedMax != nil {
		s.Max = *fixedMax
	}
	return s
}

// niceStep rounds raw up to 1, 2, 2.5, 5 or 10 times its power of ten.
func niceStep(raw float64) float64 {
	if raw <= 0 || math.IsNaN(raw) || math.IsInf(raw, 0) {
		return 1
	}
	mag := math.Pow10(int(math.Floor(math.Log10(raw))))
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if raw <= m*mag*(1+1e-9) {
			return m * mag
		}
	}
	return 10 * mag
}

// timeTick is one tick of the time axis.
type timeTick struct {
	T     time.Time
	Label string
}

// timeTicks places time ticks on whole increments (1 s ... 1 d) at least
// minPx apart on an axis widthPx wide, labelled HH:MM (HH:MM:SS below a
// minute, with the date beyond a day).
func timeTicks(start, end time.Time, widthPx, minPx float64, loc *time.Location) []timeTick {
	span := end.Sub(start)
	if span <= 0 || widthPx <= 0 {
		return nil
	}
	incs := []time.Duration{
		time.Second, 2 * time.Second, 5 * time.Second, 10 * time.Second, 15 * time.Second, 30 * time.Second,
		time.Minute, 2 * time.Minute, 5 * time.Minute, 10 * time.Minute, 15 * time.Minute, 30 * time.Minute,
		time.Hour, 2 * time.Hour, 3 * time.Hour, 6 * time.Hour, 12 * time.Hour, 24 * time.Hour,
	}
	inc := incs[len(incs)-1]
	for _, d := range incs {
		if float64(d)/float64(span)*widthPx >= minPx {
			inc = d
			break
		}
	}
	layout := "15:04"
	switch {
	case inc < time.Minute:
		layout = "15:04:05"
	case span > 24*time.Hour:
		layout = "01/02 15:04"
	}
	_, off := start.In(loc).Zone()
	shift := time.Duration(off) * time.Second
	first := start.Add(shift).Truncate(inc).Add(-shift)
	if first.Before(start) {
		first = first.Add(inc)
	}
	var out []timeTick
	for t := first; !t.After(end); t = t.Add(inc) {
		out = append(out, timeTick{T: t, Label: t.In(loc).Format(layout)})
	}
	return out
}
