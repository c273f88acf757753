package main

import (
	"math"
	"slices"
	"time"
)

// Dist summarizes one set of latency samples, in microseconds.
type Dist struct {
	N    int     `json:"n"`
	P50  float64 `json:"p50_us"`
	P90  float64 `json:"p90_us"`
	P99  float64 `json:"p99_us"`
	P999 float64 `json:"p99_9_us"`
	Max  float64 `json:"max_us"`
	Mean float64 `json:"mean_us"`
}

// percentile is the nearest-rank p-th percentile (0 < p <= 100) of sorted
// samples: the smallest sample with at least p % of all samples at or below
// it. Nearest rank never interpolates, so a reported p99.9 is a latency some
// request really had.
func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	// The epsilon keeps float error (99.9/100*1000 = 999.0000000000001)
	// from moving the rank up by one.
	rank := int(math.Ceil(p/100*float64(len(sorted)) - 1e-9))
	return sorted[min(max(rank, 1), len(sorted))-1]
}

func us(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }

// summarize sorts samples in place and returns their distribution.
func summarize(samples []time.Duration) Dist {
	if len(samples) == 0 {
		return Dist{}
	}
	slices.Sort(samples)
	var sum time.Duration
	for _, s := range samples {
		sum += s
	}
	return Dist{N: len(samples),
		P50: us(percentile(samples, 50)), P90: us(percentile(samples, 90)), P99: us(percentile(samples, 99)),
		P999: us(percentile(samples, 99.9)), Max: us(samples[len(samples)-1]),
		Mean: us(sum / time.Duration(len(samples)))}
}

// median of per-round values: the middle one, or the mean of the middle two.
// NaN for no values, so a missing measure never reads as zero.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// ratio is a/b, NaN when either is undefined or b is not positive (a ratio
// against a zero or negative baseline says nothing).
func ratio(a, b float64) float64 {
	if math.IsNaN(a) || math.IsNaN(b) || b <= 0 {
		return math.NaN()
	}
	return a / b
}

// CurvePoint is one point of a percentile curve.
type CurvePoint struct {
	Pct float64 `json:"pct"`
	US  float64 `json:"us"`
}

// curvePercentiles are the curve's points: dense where tails live, up to the
// last percentile the sample count supports (at least 10 samples beyond it).
func curvePercentiles(n int) []float64 {
	var out []float64
	for p := 5.0; p < 90; p += 5 {
		out = append(out, p)
	}
	// Each decade of nines (90, 99, 99.9, ...) in 20 steps.
	for lo := 90.0; lo < 99.9999; lo = 100 - (100-lo)/10 {
		hi := 100 - (100-lo)/10
		for i := 0; i < 20; i++ {
			out = append(out, lo+(hi-lo)*float64(i)/20)
		}
	}
	last := 0
	for i, p := range out {
		if float64(n)*(100-p)/100 >= 10 {
			last = i
		}
	}
	return out[:last+1]
}

// curve returns the percentile curve of sorted samples.
func curve(sorted []time.Duration) []CurvePoint {
	if len(sorted) == 0 {
		return nil
	}
	ps := curvePercentiles(len(sorted))
	out := make([]CurvePoint, 0, len(ps)+1)
	for _, p := range ps {
		out = append(out, CurvePoint{Pct: math.Round(p*1e4) / 1e4, US: math.Round(us(percentile(sorted, p))*10) / 10})
	}
	return append(out, CurvePoint{Pct: 100, US: us(sorted[len(sorted)-1])})
}

// nines maps a percentile to the x position of a percentile plot:
// -log10(1 - p/100), so 90 % is 1, 99 % is 2, 99.9 % is 3.
func nines(pct float64) float64 {
	if pct >= 100 {
		return math.Inf(1)
	}
	return -math.Log10(1 - pct/100)
}

// Verdict compares a measured ratio (or size) with its limit.
type Verdict struct {
	Measured Num  `json:"measured"`
	Limit    Num  `json:"limit"`
	Met      bool `json:"met"`
	// Over is how far past the limit the measure is, as a fraction of the
	// limit (0.4 = 40 % over); 0 when met, NaN when not measured.
	Over Num `json:"over"`
}

// verdict holds measured to "≤ limit". A measure that could not be taken
// is not met.
func verdict(measured, limit float64) Verdict {
	v := Verdict{Measured: Num(measured), Limit: Num(limit)}
	switch {
	case math.IsNaN(measured):
		v.Over = Num(math.NaN())
	case measured <= limit:
		v.Met = true
	default:
		v.Over = Num(measured/limit - 1)
	}
	return v
}
