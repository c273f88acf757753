// Command dashshot draws a Grafana dashboard JSON against a Prometheus
// server into one PNG, so that docs can show the real dashboard without a
// Grafana. It reads the dashboard's panels (rows, time series, stat, state
// timeline), replaces the template variables and Grafana's built-ins in
// each query, asks Prometheus, and lays the panels out on Grafana's
// 24-column grid in its dark theme. hack/bench/dashshot/README.md says
// what is drawn exactly and what only approximately.
//
//	dashshot -dashboard charts/llmgw/dashboards/llmgw.json -prometheus http://127.0.0.1:19099 \
//	  -out docs/images/dashboard.png -range 15m -var namespace=llmgw-system -var alias=.*
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"image"
	"image/png"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"
	_ "time/tzdata" // -tz works on a machine without a zone database
)

// varFlags collects repeated -var name=value flags.
type varFlags []string

func (v *varFlags) String() string     { return strings.Join(*v, " ") }
func (v *varFlags) Set(s string) error { *v = append(*v, s); return nil }

type options struct {
	dashboard, prometheus, out string
	rng                        time.Duration
	end                        string
	vars                       varFlags
	width                      int
	scale                      float64
	scrape                     time.Duration
	rateInterval               string
	points                     int
	tz                         string
	datasource                 string
	timeout                    time.Duration
}

func parseFlags(args []string) (options, error) {
	var o options
	fs := flag.NewFlagSet("dashshot", flag.ContinueOnError)
	fs.StringVar(&o.dashboard, "dashboard", "", "Grafana dashboard JSON `file` (required)")
	fs.StringVar(&o.prometheus, "prometheus", "http://127.0.0.1:9090", "Prometheus base `URL`")
	fs.StringVar(&o.out, "out", "", "PNG `file` to write (required)")
	fs.DurationVar(&o.rng, "range", 15*time.Minute, "time range drawn, ending at -end")
	fs.StringVar(&o.end, "end", "", "end of the time range, RFC3339 (default now)")
	fs.Var(&o.vars, "var", "template variable `name=value`; repeat a name for several values; All, $__all or the variable's allValue select All (default: All, where the variable has it)")
	fs.IntVar(&o.width, "width", 1800, "picture width in `pixels`; the height follows from the panels")
	fs.Float64Var(&o.scale, "scale", 1, "picture pixels per dashboard pixel, like a browser's device pixel ratio: 2 draws a dashboard -width/2 wide at twice the size")
	fs.DurationVar(&o.scrape, "scrape-interval", 15*time.Second, "the data source's scrape interval: the smallest query step, and the base of $__rate_interval when it is auto")
	fs.StringVar(&o.rateInterval, "rate-interval", "1m", "$__rate_interval as a `duration`, or auto for Grafana's max($__interval + scrape, 4 × scrape)")
	fs.IntVar(&o.points, "max-points", 200, "data points per series: the query step is about range / this")
	fs.StringVar(&o.tz, "tz", "UTC", "time `zone` of the time axis and the range shown")
	fs.StringVar(&o.datasource, "datasource-name", "Prometheus", "data source name shown in the $datasource picker and used for ${datasource}")
	fs.DurationVar(&o.timeout, "timeout", 30*time.Second, "timeout of each Prometheus query")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if o.dashboard == "" || o.out == "" {
		return o, errors.New("-dashboard and -out are required")
	}
	if o.rng <= 0 || o.points < 1 || o.scale < 0.5 || o.scale > 4 || float64(o.width)/o.scale < 400 {
		return o, errors.New("-range must be positive, -max-points at least 1, -scale within 0.5..4 and -width / -scale at least 400")
	}
	return o, nil
}

func main() {
	o, err := parseFlags(os.Args[1:])
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "dashshot:", err)
		os.Exit(2)
	}
	if err := run(context.Background(), o, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "dashshot:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, o options, log io.Writer) error {
	d, err := loadDashboard(o.dashboard)
	if err != nil {
		return err
	}
	sel, err := parseSelections(d, o.vars, o.datasource)
	if err != nil {
		return err
	}
	loc, err := time.LoadLocation(o.tz)
	if err != nil {
		return fmt.Errorf("-tz: %w", err)
	}
	end := time.Now()
	if o.end != "" {
		if end, err = time.Parse(time.RFC3339, o.end); err != nil {
			return fmt.Errorf("-end: %w", err)
		}
	}
	var rate time.Duration
	if o.rateInterval != "auto" {
		if rate, err = time.ParseDuration(o.rateInterval); err != nil || rate <= 0 {
			return fmt.Errorf("-rate-interval %q: want a positive duration or auto", o.rateInterval)
		}
	}
	img, reports, err := render(ctx, renderConfig{
		Dashboard: d, Client: newPromClient(o.prometheus, o.timeout), Selected: sel,
		Timing: newTiming(end, o.rng, o.scrape, rate, o.points), Width: o.width, Scale: o.scale, Location: loc, Datasource: o.datasource,
	})
	if err != nil {
		return err
	}
	printReport(log, reports)
	if failed := countStatus(reports, "error"); failed > 0 && failed == len(reports)-countStatus(reports, "row") {
		return errors.New("every query failed: is Prometheus at -prometheus?")
	}
	if err := writePNG(o.out, img); err != nil {
		return err
	}
	b := img.Bounds()
	fmt.Fprintf(log, "dashshot: wrote %s (%d×%d)\n", o.out, b.Dx(), b.Dy())
	return nil
}

func countStatus(rs []PanelReport, status string) int {
	n := 0
	for _, r := range rs {
		if r.Status == status {
			n++
		}
	}
	return n
}

// printReport lists every panel and what it showed, so a run says which
// panels had no data without anyone opening the picture.
func printReport(w io.Writer, rs []PanelReport) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tTYPE\tPANEL\tSERIES\tSHOWS")
	for _, r := range rs {
		if r.Status == "row" {
			continue
		}
		status := r.Status
		if r.Err != nil {
			status += ": " + strings.ReplaceAll(r.Err.Error(), "\n", "; ")
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%d\t%s\n", r.ID, r.Type, r.Title, r.Series, status)
	}
	tw.Flush()
}

// writePNG writes the picture through a temporary file, so a failed run
// leaves the previous picture in place.
func writePNG(path string, img image.Image) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".dashshot-*.png")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer os.Remove(tmp.Name())
	enc := png.Encoder{CompressionLevel: png.BestCompression}
	if err := enc.Encode(tmp, img); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
