package main

import (
	"encoding/json"
	"math"
	"slices"
	"strconv"
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
}

// percentile is the nearest-rank p-th percentile (0 < p <= 100) of sorted
// samples: the smallest sample with at least p % of all samples at or below
// it. Nearest rank never interpolates, so a reported p99.9 is a latency some
// request really had.
func percentile[T time.Duration | float64](sorted []T, p float64) T {
	if len(sorted) == 0 {
		return 0
	}
	// The epsilon keeps float error (99.9/100*1000 = 999.0000000000001)
	// from moving the rank up by one.
	rank := int(math.Ceil(p/100*float64(len(sorted)) - 1e-9))
	return sorted[min(max(rank, 1), len(sorted))-1]
}

func us(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }

// distOf sorts samples in place and returns their distribution.
func distOf(samples []time.Duration) Dist {
	if len(samples) == 0 {
		return Dist{}
	}
	slices.Sort(samples)
	return Dist{N: len(samples), P50: us(percentile(samples, 50)), P90: us(percentile(samples, 90)),
		P99: us(percentile(samples, 99)), P999: us(percentile(samples, 99.9)), Max: us(samples[len(samples)-1])}
}

// median of per-round values, NaN ones left out: the middle one, or the
// mean of the middle two; NaN for none, so a missing measure never reads
// as zero.
func median(xs []float64) float64 {
	s := slices.DeleteFunc(slices.Clone(xs), math.IsNaN)
	if len(s) == 0 {
		return math.NaN()
	}
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

// Num is a float64 that encodes NaN and ±Inf as JSON null: a measure that
// could not be taken must not read as a number.
type Num float64

// MarshalJSON implements json.Marshaler.
func (n Num) MarshalJSON() ([]byte, error) {
	f := float64(n)
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return []byte("null"), nil
	}
	return strconv.AppendFloat(nil, f, 'g', 6, 64), nil
}

// UnmarshalJSON implements json.Unmarshaler.
func (n *Num) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*n = Num(math.NaN())
		return nil
	}
	var f float64
	if err := json.Unmarshal(b, &f); err != nil {
		return err
	}
	*n = Num(f)
	return nil
}
