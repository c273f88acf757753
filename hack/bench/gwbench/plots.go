package main

import (
	"fmt"
	"image/color"
	"math"
	"path/filepath"
	"slices"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
)

const plotW, plotH = 7 * vg.Inch, 4.2 * vg.Inch

// percentileTicks label the nines axis.
var percentileTicks = plot.ConstantTicks{
	{Value: nines(0), Label: "0%"}, {Value: nines(50), Label: "50%"}, {Value: nines(90), Label: "90%"},
	{Value: nines(99), Label: "99%"}, {Value: nines(99.9), Label: "99.9%"}, {Value: nines(99.99), Label: "99.99%"},
	{Value: nines(99.999), Label: "99.999%"},
}

// msTicks labels a log-scale millisecond axis at 1, 2 and 5 of each decade.
type msTicks struct{}

func (msTicks) Ticks(lo, hi float64) []plot.Tick {
	var out []plot.Tick
	for e := math.Floor(math.Log10(lo)); math.Pow10(int(e)) <= hi*10; e++ {
		for _, m := range []float64{1, 2, 5} {
			v := m * math.Pow10(int(e))
			if v < lo/1.01 || v > hi*1.01 {
				continue
			}
			out = append(out, plot.Tick{Value: v, Label: strings.TrimSuffix(strings.TrimRight(fmt.Sprintf("%.3f", v), "0"), ".")})
		}
	}
	return out
}

// targetStyle gives every target the same color and dash in every plot.
func targetStyle(targets []string, name string) (color.Color, []vg.Length) {
	i := slices.Index(targets, name)
	return plotutil.Color(i), plotutil.Dashes(0)
}

// writePlots renders every percentile curve group and the streams plots;
// it returns the file names written.
func writePlots(rep *Report, dir string) ([]string, error) {
	var files []string
	var targets []string
	for _, t := range rep.Targets {
		targets = append(targets, t.Name)
	}
	type groupKey struct{ phase, workload, metric string }
	var order []groupKey
	groups := map[groupKey][]Curve{}
	for _, c := range rep.Curves {
		if !plotted(c) {
			continue
		}
		k := groupKey{c.Phase, c.Workload, c.Metric}
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], c)
	}
	for _, k := range order {
		name := fmt.Sprintf("latency-%s-%s-%s.png", k.phase, strings.ReplaceAll(k.workload, "/", "-"), k.metric)
		if err := percentilePlot(filepath.Join(dir, name), plotTitle(k.phase, k.workload, k.metric, rep.Settings.Rounds), groups[k], targets); err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		files = append(files, name)
	}
	for _, sp := range []struct {
		file, title, y string
		limit          float64
		get            func(StreamSample) float64
	}{
		{"streams-rss.png", "RSS against streams open (dashed: issue 12's 90 MB)", "RSS (MB)", goalPeakRSSMB, func(s StreamSample) float64 { return s.RSSMB }},
		{"streams-goroutines.png", "goroutines against streams open", "goroutines", 0, func(s StreamSample) float64 { return float64(s.Goroutines) }},
	} {
		ok, err := streamsPlot(filepath.Join(dir, sp.file), sp.title, sp.y, sp.limit, rep, targets, sp.get)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", sp.file, err)
		}
		if ok {
			files = append(files, sp.file)
		}
	}
	return files, nil
}

// plotted picks the curves worth a plot: c=1 (JSON to the end, SSE to the
// first content) and every open-loop curve. The c=N latencies are queueing
// behind the client's own workers, and the streams' are the mock's delays.
func plotted(c Curve) bool {
	switch {
	case c.Phase == "c1":
		return c.Metric == "first" || !strings.HasSuffix(c.Workload, "/sse")
	case strings.HasPrefix(c.Phase, "open"):
		return true
	}
	return false
}

func plotTitle(phase, workload, metric string, rounds int) string {
	p := phase
	switch {
	case phase == "c1":
		p = "closed loop c=1"
	case strings.HasPrefix(phase, "open"):
		p = "open loop " + strings.TrimPrefix(phase, "open") + " req/s"
	case strings.HasPrefix(phase, "c"):
		p = "closed loop c=" + strings.TrimPrefix(phase, "c")
	}
	m := "to the end"
	if metric == "first" {
		m = "to the first content byte"
	}
	return fmt.Sprintf("%s, %s, latency %s (%d round(s) pooled)", p, workload, m, rounds)
}

func percentilePlot(path, title string, curves []Curve, targets []string) error {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "percentile"
	p.Y.Label.Text = "latency (ms, log scale)"
	p.Y.Scale = plot.LogScale{}
	p.Y.Tick.Marker = msTicks{}
	p.X.Tick.Marker = percentileTicks
	p.Legend.Top, p.Legend.Left = true, true
	p.Add(plotter.NewGrid())
	slices.SortFunc(curves, func(a, b Curve) int { return slices.Index(targets, a.Target) - slices.Index(targets, b.Target) })
	lo, hi, maxX := math.Inf(1), 0.0, 0.0
	for _, c := range curves {
		var xys plotter.XYs
		for _, pt := range c.Points {
			if pt.Pct >= 100 || pt.US <= 0 {
				continue
			}
			x, y := nines(pt.Pct), pt.US/1000
			xys = append(xys, plotter.XY{X: x, Y: y})
			lo, hi, maxX = min(lo, y), max(hi, y), max(maxX, x)
		}
		if len(xys) == 0 {
			continue
		}
		l, err := plotter.NewLine(xys)
		if err != nil {
			return err
		}
		l.Color, l.Dashes = targetStyle(targets, c.Target)
		l.Width = vg.Points(1.5)
		p.Add(l)
		p.Legend.Add(fmt.Sprintf("%s (n=%d)", c.Target, c.N), l)
	}
	if hi == 0 {
		return fmt.Errorf("no samples")
	}
	// The margin keeps the last tick's label inside the picture.
	p.X.Min, p.X.Max = 0, math.Ceil(maxX)+0.12
	p.Y.Min, p.Y.Max = lo/1.2, hi*1.2
	return p.Save(plotW, plotH, path)
}

// streamsPlot draws, per target, the samples of its median-peak round; it
// reports false when no target had the measure (goroutines of the mock).
func streamsPlot(path, title, yLabel string, limit float64, rep *Report, targets []string, get func(StreamSample) float64) (bool, error) {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "streams open"
	p.Y.Label.Text = yLabel
	p.Legend.Top, p.Legend.Left = false, false
	p.Add(plotter.NewGrid())
	drawn, maxX := false, 0.0
	for _, name := range targets {
		row, ok := medianPeakRound(rep.Rounds, name)
		if !ok {
			continue
		}
		var xys plotter.XYs
		for _, s := range row.Samples {
			if v := get(s); v > 0 {
				xys = append(xys, plotter.XY{X: float64(s.Open), Y: v})
				maxX = max(maxX, float64(s.Open))
			}
		}
		if len(xys) == 0 {
			continue
		}
		l, err := plotter.NewLine(xys)
		if err != nil {
			return false, err
		}
		l.Color, l.Dashes = targetStyle(targets, name)
		l.Width = vg.Points(1.5)
		p.Add(l)
		label := name
		if name == "direct" {
			label = "direct (the mock)"
		}
		p.Legend.Add(label, l)
		drawn = true
	}
	if !drawn {
		return false, nil
	}
	if limit > 0 {
		l, err := plotter.NewLine(plotter.XYs{{X: 0, Y: limit}, {X: max(maxX, 1), Y: limit}})
		if err != nil {
			return false, err
		}
		l.Color, l.Dashes = color.Gray{Y: 90}, []vg.Length{vg.Points(4), vg.Points(3)}
		p.Add(l)
	}
	p.Y.Min = 0
	return true, p.Save(plotW, plotH, path)
}

// medianPeakRound is a target's streams row from the round whose peak RSS
// is the median (the lower middle one for an even count).
func medianPeakRound(rounds []Round, target string) (StreamRow, bool) {
	var rows []StreamRow
	for _, r := range rounds {
		for _, s := range r.Streams {
			if s.Target == target {
				rows = append(rows, s)
			}
		}
	}
	if len(rows) == 0 {
		return StreamRow{}, false
	}
	slices.SortFunc(rows, func(a, b StreamRow) int {
		switch {
		case a.PeakRSS < b.PeakRSS:
			return -1
		case a.PeakRSS > b.PeakRSS:
			return 1
		}
		return 0
	})
	return rows[(len(rows)-1)/2], true
}
