package main

import (
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
)

const plotW, plotH = 7 * vg.Inch, 4.2 * vg.Inch

// nines maps a percentile to the x position of a percentile plot:
// -log10(1 - p/100), so 90 % is 1, 99 % is 2, 99.9 % is 3.
func nines(pct float64) float64 { return -math.Log10(1 - pct/100) }

var percentileTicks = plot.ConstantTicks{
	{Value: nines(0), Label: "0%"}, {Value: nines(50), Label: "50%"}, {Value: nines(90), Label: "90%"},
	{Value: nines(99), Label: "99%"}, {Value: nines(99.9), Label: "99.9%"}, {Value: nines(99.99), Label: "99.99%"},
}

// msTicks labels a log-scale millisecond axis at 1, 2 and 5 of each decade.
type msTicks struct{}

func (msTicks) Ticks(lo, hi float64) []plot.Tick {
	var out []plot.Tick
	for e := math.Floor(math.Log10(lo)); math.Pow10(int(e)) <= hi; e++ {
		for _, m := range []float64{1, 2, 5} {
			if v := m * math.Pow10(int(e)); v >= lo && v <= hi {
				out = append(out, plot.Tick{Value: v, Label: strconv.FormatFloat(v, 'g', -1, 64)})
			}
		}
	}
	return out
}

// curvePercentiles are the points of a curve of n samples: every 5 % up to
// 90, then 20 steps in each decade of nines, up to the last percentile with
// at least 10 samples beyond it.
func curvePercentiles(n int) []float64 {
	var out []float64
	for p := 5.0; p < 90; p += 5 {
		out = append(out, p)
	}
	for lo := 90.0; lo < 99.999; lo = 100 - (100-lo)/10 {
		hi := 100 - (100-lo)/10
		for i := range 20 {
			if p := lo + (hi-lo)*float64(i)/20; float64(n)*(100-p)/100 >= 10 {
				out = append(out, p)
			}
		}
	}
	return out
}

// writePlots draws a percentile plot for every c=1 and open-loop measure
// (samples of all rounds pooled) and the streams' memory against streams
// open; it returns the file names written.
func writePlots(rep *Report, samples map[curveKey][]float64, dir string) ([]string, error) {
	type group struct{ Phase, Workload, Metric string }
	curves := map[group][]curveKey{}
	for k := range samples {
		// c=1 SSE is plotted to the first content event: its end is the mock's pace.
		if k.Phase == "c1" && strings.HasSuffix(k.Workload, "/sse") && k.Metric == "total" {
			continue
		}
		g := group{k.Phase, k.Workload, k.Metric}
		curves[g] = append(curves[g], k)
	}
	groups := make([]group, 0, len(curves))
	for g := range curves {
		groups = append(groups, g)
	}
	slices.SortFunc(groups, func(a, b group) int {
		return strings.Compare(a.Phase+a.Workload+a.Metric, b.Phase+b.Workload+b.Metric)
	})
	var files []string
	for _, g := range groups {
		name := fmt.Sprintf("latency-%s-%s-%s.png", g.Phase, strings.ReplaceAll(g.Workload, "/", "-"), g.Metric)
		title := fmt.Sprintf("%s, %s, latency to the %s", phaseTitle(g.Phase), g.Workload, map[string]string{"total": "end", "first": "first content"}[g.Metric])
		if err := percentilePlot(filepath.Join(dir, name), title, curves[g], samples, rep.Settings.Targets); err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		files = append(files, name)
	}
	if len(rep.Rounds) > 0 && len(rep.Rounds[len(rep.Rounds)-1].Streams) > 0 {
		if err := streamsPlot(filepath.Join(dir, "streams-anon.png"), rep); err != nil {
			return nil, fmt.Errorf("streams-anon.png: %w", err)
		}
		files = append(files, "streams-anon.png")
	}
	return files, nil
}

func phaseTitle(phase string) string {
	if rate, ok := strings.CutPrefix(phase, "open"); ok {
		return "open loop " + rate + " req/s"
	}
	return "closed loop c=" + strings.TrimPrefix(phase, "c")
}

func percentilePlot(path, title string, keys []curveKey, samples map[curveKey][]float64, targets []string) error {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "percentile"
	p.Y.Label.Text = "latency (ms, log scale)"
	p.Y.Scale = plot.LogScale{}
	p.Y.Tick.Marker = msTicks{}
	p.X.Tick.Marker = percentileTicks
	p.Legend.Top, p.Legend.Left = true, true
	p.Add(plotter.NewGrid())
	slices.SortFunc(keys, func(a, b curveKey) int { return slices.Index(targets, a.Target) - slices.Index(targets, b.Target) })
	maxX := 0.0
	for _, k := range keys {
		d := slices.Clone(samples[k])
		slices.Sort(d)
		var xys plotter.XYs
		for _, pct := range curvePercentiles(len(d)) {
			if v := percentile(d, pct); v > 0 {
				xys = append(xys, plotter.XY{X: nines(pct), Y: v / 1000})
				maxX = max(maxX, nines(pct))
			}
		}
		if len(xys) == 0 {
			continue
		}
		l, err := plotter.NewLine(xys)
		if err != nil {
			return err
		}
		l.Color, l.Width = plotutil.Color(slices.Index(targets, k.Target)), vg.Points(1.5)
		p.Add(l)
		p.Legend.Add(fmt.Sprintf("%s (n=%d)", k.Target, len(d)), l)
	}
	p.X.Min, p.X.Max = 0, math.Ceil(maxX)+0.12
	return p.Save(plotW, plotH, path)
}

// streamsPlot draws each target's RssAnon against the streams open, in the
// last round.
func streamsPlot(path string, rep *Report) error {
	p := plot.New()
	p.Title.Text = fmt.Sprintf("anonymous memory (RssAnon) against streams open, round %d", len(rep.Rounds))
	p.X.Label.Text = "streams open"
	p.Y.Label.Text = "RssAnon (MB)"
	p.Legend.Top, p.Legend.Left = true, true
	p.Add(plotter.NewGrid())
	for _, row := range rep.Rounds[len(rep.Rounds)-1].Streams {
		var xys plotter.XYs
		for _, s := range row.Samples {
			xys = append(xys, plotter.XY{X: float64(s.Open), Y: s.AnonMB})
		}
		if len(xys) == 0 {
			continue
		}
		l, err := plotter.NewLine(xys)
		if err != nil {
			return err
		}
		l.Color, l.Width = plotutil.Color(slices.Index(rep.Settings.Targets, row.Target)), vg.Points(1.5)
		p.Add(l)
		p.Legend.Add(row.Target, l)
	}
	p.Y.Min = 0
	return p.Save(plotW, plotH, path)
}
