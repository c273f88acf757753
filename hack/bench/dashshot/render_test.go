package main

import (
	"bytes"
	"context"
	"image"
	"image/png"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

const realDashboard = "../../../charts/llmgw/dashboards/llmgw.json"

// renderReal renders the chart's dashboard against a fake Prometheus.
func renderReal(t *testing.T, f *fakeProm, width int) (image.Image, []PanelReport, *Dashboard, Timing) {
	t.Helper()
	d, err := loadDashboard(realDashboard)
	if err != nil {
		t.Fatal(err)
	}
	sel, err := parseSelections(d, []string{"namespace=llmgw-system", "alias=.*"}, "Prometheus")
	if err != nil {
		t.Fatal(err)
	}
	tm := newTiming(time.Date(2026, 12, 1, 12, 15, 0, 0, time.UTC), 15*time.Minute, 5*time.Second, time.Minute, 200)
	img, reps, err := render(context.Background(), renderConfig{
		Dashboard: d, Client: newPromClient(f.URL, 5*time.Second), Selected: sel, Timing: tm,
		Width: width, Location: time.UTC, Datasource: "Prometheus",
	})
	if err != nil {
		t.Fatal(err)
	}
	return img, reps, d, tm
}

func TestRenderRealDashboard(t *testing.T) {
	f := newFakeProm(t, `credential_unavailable`, `^$`)
	img, reps, d, tm := renderReal(t, f, 1800)

	// The picture is the grid's size: Grafana's rows of 30 px + 8 px under
	// the header, for the lowest panel's bottom edge.
	bottom := 0
	for _, p := range d.Panels {
		bottom = max(bottom, p.GridPos.Y+p.GridPos.H)
	}
	wantH := headerH + 2*pagePadding + bottom*(cellHeight+cellMargin) - cellMargin
	if b := img.Bounds(); b.Dx() != 1800 || b.Dy() != wantH {
		t.Fatalf("picture %d×%d, want 1800×%d", b.Dx(), b.Dy(), wantH)
	}

	// Every panel is reported once, in gridPos order.
	if len(reps) != len(d.Panels) {
		t.Fatalf("%d panels reported, the dashboard has %d", len(reps), len(d.Panels))
	}
	seen := map[int]bool{}
	for i, r := range reps {
		if seen[r.ID] {
			t.Errorf("panel %d reported twice", r.ID)
		}
		seen[r.ID] = true
		if i > 0 && (r.Rect.Y < reps[i-1].Rect.Y || r.Rect.Y == reps[i-1].Rect.Y && r.Rect.X < reps[i-1].Rect.X) {
			t.Errorf("panel %d drawn out of gridPos order", r.ID)
		}
		want := "data"
		switch {
		case r.Type == "row":
			want = "row"
		case strings.Contains(strings.Join(r.Queries, " "), "credential_unavailable"):
			want = "no data"
		}
		if r.Status != want {
			t.Errorf("panel %d %q: %s (%v), want %s", r.ID, r.Title, r.Status, r.Err, want)
		}
	}

	// Every query went out with the variables replaced and the step of
	// range / 200 rounded (4.5 s → 5 s).
	reqs := f.seen()
	if len(reqs) == 0 {
		t.Fatal("no query reached the fake Prometheus")
	}
	for _, r := range reqs {
		if strings.Contains(r.Query, "$") {
			t.Errorf("query still has a variable: %s", r.Query)
		}
		if r.Path != "/api/v1/query_range" || r.Step != "5" {
			t.Errorf("%s step %q for %s, want query_range step 5", r.Path, r.Step, r.Query)
		}
	}
	joined := ""
	for _, r := range reqs {
		joined += r.Query + "\n"
	}
	for _, want := range []string{`namespace=~"llmgw-system"`, `alias=~".*"`, `[1m]`, `[900s]`} {
		if !strings.Contains(joined, want) {
			t.Errorf("no query has %s", want)
		}
	}
	_ = tm

	// Every panel with data has colour in it (a line, a filled stat, a state
	// bar), and the one without has none: nothing but the grey theme.
	for _, r := range reps {
		if r.Type == "row" {
			continue
		}
		if got, want := hasColour(img, r.Rect), r.Status == "data"; got != want {
			t.Errorf("panel %d %q (%s): coloured pixels %v, want %v", r.ID, r.Title, r.Status, got, want)
		}
	}
	if p := os.Getenv("DASHSHOT_PREVIEW"); p != "" {
		if err := writePNG(p, img); err != nil {
			t.Fatal(err)
		}
	}
}

// hasColour says whether r holds a saturated pixel: the theme is grey,
// every series, stat and state colour is not.
func hasColour(img image.Image, r Rect) bool {
	for y := int(r.Y) + 2; y < int(r.bottom())-2; y++ {
		for x := int(r.X) + 2; x < int(r.right())-2; x++ {
			cr, cg, cb, _ := img.At(x, y).RGBA()
			if absDiff(cr>>8, cg>>8)+absDiff(cg>>8, cb>>8) > 60 {
				return true
			}
		}
	}
	return false
}

func absDiff(a, b uint32) uint32 {
	if a > b {
		return a - b
	}
	return b - a
}

func TestRenderQueryError(t *testing.T) {
	f := newFakeProm(t, `^$`, `requests_total`)
	_, reps, _, _ := renderReal(t, f, 1200)
	errs := 0
	for _, r := range reps {
		failing := strings.Contains(strings.Join(r.Queries, " "), "requests_total")
		if failing {
			errs++
			if r.Err == nil || !strings.Contains(r.Err.Error(), "bad_data") {
				t.Errorf("panel %d %q: error %v, want Prometheus's bad_data", r.ID, r.Title, r.Err)
			}
			if r.Status != "error" {
				t.Errorf("panel %d %q: %s, want error", r.ID, r.Title, r.Status)
			}
		} else if r.Err != nil {
			t.Errorf("panel %d %q: error %v, want none", r.ID, r.Title, r.Err)
		}
	}
	if errs == 0 {
		t.Fatal("no panel queries llmgw_requests_total: the test proves nothing")
	}
}

// TestRunWritesPNG runs the command as run.sh does and reads the PNG back:
// -width pixels wide, and as high as the grid at -width / -scale.
func TestRunWritesPNG(t *testing.T) {
	d, err := loadDashboard(realDashboard)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		width int
		scale string
		wantH int
	}{
		{1400, "1", layoutDashboard(d, 1400).Height},
		{1400, "2", 2 * layoutDashboard(d, 700).Height},
		{1500, "1.5", int(math.Round(1.5 * float64(layoutDashboard(d, 1000).Height)))},
	} {
		t.Run(tc.scale, func(t *testing.T) {
			f := newFakeProm(t, `^$`, `^$`)
			out := filepath.Join(t.TempDir(), "dashboard.png")
			o, err := parseFlags([]string{"-dashboard", realDashboard, "-prometheus", f.URL, "-out", out,
				"-range", "10m", "-end", "2026-12-01T12:00:00Z", "-var", "namespace=llmgw-system", "-var", "alias=.*",
				"-width", strconv.Itoa(tc.width), "-scale", tc.scale, "-scrape-interval", "5s"})
			if err != nil {
				t.Fatal(err)
			}
			if err := run(context.Background(), o, io.Discard); err != nil {
				t.Fatal(err)
			}
			raw, err := os.ReadFile(out)
			if err != nil {
				t.Fatal(err)
			}
			cfg, err := png.DecodeConfig(bytes.NewReader(raw))
			if err != nil {
				t.Fatal(err)
			}
			if cfg.Width != tc.width || cfg.Height != tc.wantH {
				t.Fatalf("PNG %d×%d, want %d×%d", cfg.Width, cfg.Height, tc.width, tc.wantH)
			}
			for _, r := range f.seen() {
				// 10 m / 200 = 3 s, rounded to 2 s, below the 5 s scrape interval.
				if r.Step != "5" {
					t.Fatalf("step %q, want the scrape interval 5", r.Step)
				}
			}
		})
	}
}

func TestRunFailsWithoutPrometheus(t *testing.T) {
	f := newFakeProm(t, `^$`, `^$`)
	url := f.URL
	f.Close()
	out := filepath.Join(t.TempDir(), "dashboard.png")
	o, err := parseFlags([]string{"-dashboard", realDashboard, "-prometheus", url, "-out", out, "-timeout", "2s"})
	if err != nil {
		t.Fatal(err)
	}
	if err := run(context.Background(), o, io.Discard); err == nil || !strings.Contains(err.Error(), "every query failed") {
		t.Fatalf("run against a closed Prometheus: %v, want every query failed", err)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Fatalf("a picture was written without data: %v", err)
	}
}
