package main

import (
	"math"
	"testing"
	"time"
)

func TestNiceScale(t *testing.T) {
	one := 1.0
	for _, tc := range []struct {
		name     string
		lo, hi   float64
		n        int
		min, max *float64
		want     yScale
	}{
		{"positive data start at zero", 0.3, 1.9, 4, nil, nil, yScale{0, 2, 0.5}},
		{"head room above a flat line", 2, 2, 4, nil, nil, yScale{0, 3, 1}},
		{"all zero", 0, 0, 4, nil, nil, yScale{0, 1.5, 0.5}},
		{"negative data", -3, 2, 5, nil, nil, yScale{-4, 4, 2}},
		{"fixed max", 0, 0.4, 4, nil, &one, yScale{0, 1, 0.25}},
		{"small values", 0.001, 0.0042, 4, nil, nil, yScale{0, 0.006, 0.002}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := niceScale(tc.lo, tc.hi, tc.n, tc.min, tc.max)
			if math.Abs(got.Min-tc.want.Min) > 1e-12 || math.Abs(got.Max-tc.want.Max) > 1e-12 || math.Abs(got.Step-tc.want.Step) > 1e-12 {
				t.Fatalf("niceScale(%v, %v) = %+v, want %+v", tc.lo, tc.hi, got, tc.want)
			}
			if ticks := got.ticks(); len(ticks) < 2 || ticks[0] != got.Min || math.Abs(ticks[len(ticks)-1]-got.Max) > 1e-9 {
				t.Fatalf("ticks %v do not span %+v", ticks, got)
			}
		})
	}
}

func TestTimeTicks(t *testing.T) {
	start := time.Date(2026, 12, 1, 12, 0, 30, 0, time.UTC)
	ticks := timeTicks(start, start.Add(15*time.Minute), 900, 90, time.UTC)
	// 900 px for 15 min: 1 min is 60 px (< 90), 2 min is 120 px.
	if len(ticks) != 7 || ticks[0].Label != "12:02" || ticks[6].Label != "12:14" {
		t.Fatalf("ticks %v, want 12:02 … 12:14 every 2 minutes", ticks)
	}
	short := timeTicks(start, start.Add(time.Minute), 900, 90, time.UTC)
	if len(short) == 0 || short[0].Label != "12:00:30" || short[1].Label != "12:00:40" {
		t.Fatalf("ticks %v, want every 10 s from 12:00:30, with seconds", short)
	}
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	if got := timeTicks(start, start.Add(15*time.Minute), 900, 90, berlin); got[0].Label != "13:02" {
		t.Fatalf("Berlin ticks %v, want local time 13:02 first", got)
	}
}

func TestSegments(t *testing.T) {
	t0 := time.Unix(0, 0)
	at := func(s ...int) []time.Time {
		var out []time.Time
		for _, x := range s {
			out = append(out, t0.Add(time.Duration(x)*time.Second))
		}
		return out
	}
	nan := math.NaN()
	for _, tc := range []struct {
		name string
		ts   []time.Time
		vs   []float64
		want [][2]int
	}{
		{"continuous", at(0, 5, 10), []float64{1, 2, 3}, [][2]int{{0, 3}}},
		{"NaN breaks", at(0, 5, 10, 15), []float64{1, nan, 3, 4}, [][2]int{{0, 1}, {2, 4}}},
		{"missing step breaks", at(0, 5, 20, 25), []float64{1, 2, 3, 4}, [][2]int{{0, 2}, {2, 4}}},
		{"all missing", at(0, 5), []float64{nan, nan}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := segments(tc.ts, tc.vs, 5*time.Second)
			if len(got) != len(tc.want) {
				t.Fatalf("segments %v, want %v", got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Fatalf("segments %v, want %v", got, tc.want)
				}
			}
		})
	}
}

func TestStackSeries(t *testing.T) {
	t0 := time.Unix(0, 0)
	t1 := t0.Add(5 * time.Second)
	in := []NamedSeries{
		{Name: "a", Points: []Point{{t0, 1}, {t1, 2}}},
		{Name: "b", Points: []Point{{t0, 3}, {t1, math.NaN()}}},
		{Name: "c", Points: []Point{{t1, 4}}},
	}
	got := stackSeries(in, true)
	if got[1].Base[0] != 1 || got[1].Top[0] != 4 || !math.IsNaN(got[1].Top[1]) {
		t.Fatalf("b stacked on a: base %v top %v", got[1].Base, got[1].Top)
	}
	if got[2].Base[0] != 2 || got[2].Top[0] != 6 {
		t.Fatalf("c at t1 sits on a (b is missing there): base %v top %v", got[2].Base, got[2].Top)
	}
	flat := stackSeries(in, false)
	if flat[1].Base[0] != 0 || flat[1].Top[0] != 3 {
		t.Fatalf("unstacked b: base %v top %v", flat[1].Base, flat[1].Top)
	}
}

func TestReduce(t *testing.T) {
	t0 := time.Unix(0, 0)
	pts := []Point{{t0, 1}, {t0, 4}, {t0, 2}, {t0, math.NaN()}}
	for _, tc := range []struct {
		calc string
		want float64
		ok   bool
	}{
		{"lastNotNull", 2, true}, {"", 2, true}, {"last", 0, false}, {"first", 1, true},
		{"mean", 7.0 / 3, true}, {"max", 4, true}, {"min", 1, true}, {"sum", 7, true},
		{"count", 3, true}, {"range", 3, true}, {"diff", 1, true},
	} {
		var calcs []string
		if tc.calc != "" {
			calcs = []string{tc.calc}
		}
		got, ok := reduce(pts, calcs)
		if ok != tc.ok || ok && math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("reduce %q = %v, %v; want %v, %v", tc.calc, got, ok, tc.want, tc.ok)
		}
	}
	if _, ok := reduce(nil, []string{"lastNotNull"}); ok {
		t.Error("reduce of no points has a value")
	}
}

func TestStateSpans(t *testing.T) {
	t0 := time.Unix(0, 0)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	pts := []Point{{at(0), 0}, {at(5), 0}, {at(10), 2}, {at(15), 2}, {at(30), 1}}
	got := stateSpans(pts, 5*time.Second, true)
	want := []stateSpan{{at(0), at(10), 0}, {at(10), at(20), 2}, {at(30), at(35), 1}}
	if len(got) != len(want) {
		t.Fatalf("spans %v, want %v", got, want)
	}
	for i := range got {
		if !got[i].From.Equal(want[i].From) || !got[i].To.Equal(want[i].To) || got[i].Value != want[i].Value {
			t.Fatalf("span %d = %v, want %v", i, got[i], want[i])
		}
	}
	if n := len(stateSpans(pts, 5*time.Second, false)); n != 5 {
		t.Fatalf("unmerged: %d spans, want one per point", n)
	}
}

func TestColours(t *testing.T) {
	v1, v2 := 1.0, 2.0
	th := Thresholds{Steps: []ThresholdStep{{"green", nil}, {"yellow", &v1}, {"red", &v2}}}
	for v, want := range map[float64]string{-5: "green", 0: "green", 1: "yellow", 1.5: "yellow", 2: "red", 9: "red"} {
		if got, ok := thresholdColor(th, v); !ok || got != namedColors[want] {
			t.Errorf("threshold colour of %v = %v, want %s", v, got, want)
		}
	}
	ms := []Mapping{{Type: "value", Options: map[string]MappingValue{"2": {Text: "open", Color: "red"}}}}
	if mv, ok := mappedValue(ms, 2); !ok || mv.Text != "open" {
		t.Errorf("mapping of 2: %v %v", mv, ok)
	}
	if _, ok := mappedValue(ms, 1); ok {
		t.Error("1 is not mapped")
	}
	for in, want := range map[string][4]uint8{
		"#73BF69": {0x73, 0xbf, 0x69, 255}, "#fff": {255, 255, 255, 255},
		"rgba(10, 20, 30, 0.5)": {10, 20, 30, 127}, "green": {0x73, 0xbf, 0x69, 255},
	} {
		c := parseColor(in)
		if [4]uint8{c.R, c.G, c.B, c.A} != want {
			t.Errorf("parseColor(%q) = %v, want %v", in, c, want)
		}
	}
}
