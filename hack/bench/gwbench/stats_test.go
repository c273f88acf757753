package main

import (
	"encoding/json"
	"math"
	"testing"
	"time"
)

func ms(n ...int) []time.Duration {
	out := make([]time.Duration, len(n))
	for i, v := range n {
		out[i] = time.Duration(v) * time.Millisecond
	}
	return out
}

func TestPercentile(t *testing.T) {
	hundred := make([]time.Duration, 100)
	for i := range hundred {
		hundred[i] = time.Duration(i+1) * time.Millisecond
	}
	thousand := make([]time.Duration, 1000)
	for i := range thousand {
		thousand[i] = time.Duration(i+1) * time.Microsecond
	}
	for _, tc := range []struct {
		name   string
		sorted []time.Duration
		p      float64
		want   time.Duration
	}{
		{"empty", nil, 50, 0},
		{"one sample is every percentile", ms(7), 99.9, 7 * time.Millisecond},
		{"p50 of 1..100 is 50 (nearest rank)", hundred, 50, 50 * time.Millisecond},
		{"p99 of 1..100 is 99", hundred, 99, 99 * time.Millisecond},
		{"p99.9 of 1..100 is the max", hundred, 99.9, 100 * time.Millisecond},
		{"p100 is the max", hundred, 100, 100 * time.Millisecond},
		{"tiny p is the min", hundred, 0.001, time.Millisecond},
		{"p99.9 of 1..1000 is 999", thousand, 99.9, 999 * time.Microsecond},
		{"p50 of two is the lower", ms(1, 9), 50, time.Millisecond},
		{"p51 of two is the upper", ms(1, 9), 51, 9 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := percentile(tc.sorted, tc.p); got != tc.want {
				t.Errorf("percentile(%v) = %v, want %v", tc.p, got, tc.want)
			}
		})
	}
}

func TestSummarize(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   []time.Duration
		want Dist
	}{
		{"empty", nil, Dist{}},
		{"unsorted input", ms(4, 1, 3, 2), Dist{N: 4, P50: 2000, P90: 4000, P99: 4000, P999: 4000, Max: 4000, Mean: 2500}},
		{"constant", ms(5, 5, 5), Dist{N: 3, P50: 5000, P90: 5000, P99: 5000, P999: 5000, Max: 5000, Mean: 5000}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := summarize(tc.in); got != tc.want {
				t.Errorf("summarize = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestMedian(t *testing.T) {
	for _, tc := range []struct {
		in   []float64
		want float64
	}{
		{nil, math.NaN()},
		{[]float64{3}, 3},
		{[]float64{3, 1, 2}, 2},
		{[]float64{4, 1, 3, 2}, 2.5},
		{[]float64{100, 1, 2}, 2}, // one outlier round moves nothing
	} {
		got := median(tc.in)
		if got != tc.want && !(math.IsNaN(got) && math.IsNaN(tc.want)) {
			t.Errorf("median(%v) = %v, want %v", tc.in, got, tc.want)
		}
	}
	in := []float64{3, 1, 2}
	median(in)
	if in[0] != 3 {
		t.Error("median reordered its input")
	}
}

func TestRatio(t *testing.T) {
	for _, tc := range []struct {
		a, b, want float64
	}{
		{2, 1, 2},
		{1, 4, 0.25},
		{1, 0, math.NaN()},  // against nothing
		{1, -5, math.NaN()}, // against a negative added latency
		{math.NaN(), 1, math.NaN()},
		{1, math.NaN(), math.NaN()},
	} {
		got := ratio(tc.a, tc.b)
		if got != tc.want && !(math.IsNaN(got) && math.IsNaN(tc.want)) {
			t.Errorf("ratio(%v, %v) = %v, want %v", tc.a, tc.b, got, tc.want)
		}
	}
}

func TestVerdict(t *testing.T) {
	for _, tc := range []struct {
		name            string
		measured, limit float64
		met             bool
		over            float64
	}{
		{"under", 1.1, 1.3, true, 0},
		{"at the limit is met", 2, 2, true, 0},
		{"over", 2.6, 1.3, false, 1},
		{"slightly over", 33, 30, false, 0.1},
		{"not measured is not met", math.NaN(), 2, false, math.NaN()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := verdict(tc.measured, tc.limit)
			over := float64(v.Over)
			if v.Met != tc.met || !(math.Abs(over-tc.over) < 1e-9 || math.IsNaN(over) && math.IsNaN(tc.over)) {
				t.Errorf("verdict(%v, %v) = %+v, want met %v over %v", tc.measured, tc.limit, v, tc.met, tc.over)
			}
		})
	}
}

func TestCurvePercentiles(t *testing.T) {
	for _, tc := range []struct {
		n    int
		last float64 // the highest percentile kept: at least 10 samples beyond it
	}{
		{100, 90},
		{1000, 99},
		{8000, 99.855},
		{24000, 99.954},
	} {
		ps := curvePercentiles(tc.n)
		if got := ps[len(ps)-1]; math.Abs(got-tc.last) > 1e-9 {
			t.Errorf("n=%d: last percentile %v, want %v", tc.n, got, tc.last)
		}
		for i := 1; i < len(ps); i++ {
			if ps[i] <= ps[i-1] {
				t.Fatalf("n=%d: not increasing at %d: %v", tc.n, i, ps[i-1:i+1])
			}
		}
	}
}

func TestCurve(t *testing.T) {
	d := make([]time.Duration, 1000)
	for i := range d {
		d[i] = time.Duration(i+1) * time.Microsecond
	}
	c := curve(d)
	if last := c[len(c)-1]; last.Pct != 100 || last.US != 1000 {
		t.Errorf("curve ends at %+v, want the max at 100", last)
	}
	for i := 1; i < len(c); i++ {
		if c[i].US < c[i-1].US {
			t.Fatalf("curve decreases at %d: %+v", i, c[i-1:i+1])
		}
	}
	if curve(nil) != nil {
		t.Error("curve of nothing should be nil")
	}
}

func TestNines(t *testing.T) {
	for _, tc := range []struct{ pct, want float64 }{{0, 0}, {90, 1}, {99, 2}, {99.9, 3}} {
		if got := nines(tc.pct); math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("nines(%v) = %v, want %v", tc.pct, got, tc.want)
		}
	}
	if !math.IsInf(nines(100), 1) {
		t.Error("nines(100) should be +Inf")
	}
}

func TestNumJSON(t *testing.T) {
	for _, tc := range []struct {
		in   Num
		want string
	}{
		{Num(math.NaN()), "null"},
		{Num(math.Inf(1)), "null"},
		{Num(1.5), "1.5"},
		{Num(1234567), "1.23457e+06"},
	} {
		b, err := json.Marshal(tc.in)
		if err != nil || string(b) != tc.want {
			t.Errorf("Marshal(%v) = %s, %v; want %s", float64(tc.in), b, err, tc.want)
		}
	}
	var n Num
	if err := json.Unmarshal([]byte("null"), &n); err != nil || !math.IsNaN(float64(n)) {
		t.Errorf("null decodes to %v, %v; want NaN", n, err)
	}
}

func TestSliceOrderPutsEveryTargetInEveryPosition(t *testing.T) {
	for n := 1; n <= 5; n++ {
		seen := make([]map[int]bool, n) // position → targets seen there
		for i := range seen {
			seen[i] = map[int]bool{}
		}
		for s := range n {
			order := sliceOrder(n, s)
			once := map[int]bool{}
			for pos, target := range order {
				if once[target] {
					t.Fatalf("n=%d slice %d: target %d twice in %v", n, s, target, order)
				}
				once[target] = true
				seen[pos][target] = true
			}
			if len(once) != n {
				t.Fatalf("n=%d slice %d: %v leaves a target out", n, s, order)
			}
		}
		for pos := range seen {
			if len(seen[pos]) != n {
				t.Fatalf("n=%d: position %d held only %v over %d slices", n, pos, seen[pos], n)
			}
		}
	}
}
