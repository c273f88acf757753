package manifests

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
)

var (
	codeStringsOnce sync.Once
	codeStringsSet  map[string]bool
	codeStringsErr  error
)

// codeStrings: every double-quoted, name-like string literal of the
// repository's non-test Go files outside test/ and hack/: where the
// gateway and the controller name their metrics.
func codeStrings(t *testing.T) map[string]bool {
	t.Helper()
	codeStringsOnce.Do(func() {
		codeStringsSet = map[string]bool{}
		lit := regexp.MustCompile(`"([a-zA-Z_:][a-zA-Z0-9_:]*)"`)
		codeStringsErr = filepath.WalkDir(repo, func(path string, e fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if e.IsDir() {
				rel, _ := filepath.Rel(repo, path)
				if slices.Contains([]string{".git", "bin", "test", "hack", "docs", "charts", "config"}, rel) || e.Name() == "testdata" {
					return filepath.SkipDir
				}
				return nil
			}
			if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return nil
			}
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			for _, m := range lit.FindAllSubmatch(b, -1) {
				codeStringsSet[string(m[1])] = true
			}
			return nil
		})
	})
	if codeStringsErr != nil {
		t.Fatal(codeStringsErr)
	}
	return codeStringsSet
}

// registered: the metric is named in the code, a histogram's or summary's
// series (_bucket, _sum, _count) by the family's name.
func registered(code map[string]bool, metric string) (family string, ok bool) {
	for _, suffix := range []string{"", "_bucket", "_sum", "_count"} {
		if base, cut := strings.CutSuffix(metric, suffix); cut && code[base] {
			return base, true
		}
	}
	return "", false
}

// TestMetricsExistInCode: every metric the dashboard and the alerts query
// is one the code registers (a string literal of a non-test Go file), so a
// typo or a renamed metric fails here rather than as an empty panel or an
// alert that never fires.
func TestMetricsExistInCode(t *testing.T) {
	code := codeStrings(t)
	_, d := readDashboardFile(t)
	exprs := d.exprs(t)
	for name, r := range alertsOf(t, renderHelm(t, "--set", "monitoring.prometheusRule.enabled=true")) {
		exprs["alert "+name] = r.Expr
	}
	if len(exprs) < 20 {
		t.Fatalf("only %d expressions found", len(exprs))
	}
	for where, e := range exprs {
		names, err := promMetricNames(e)
		if err != nil {
			t.Errorf("%s: %v", where, err)
			continue
		}
		if len(names) == 0 {
			t.Errorf("%s: %q selects no metric", where, e)
		}
		for _, n := range names {
			if _, ok := registered(code, n); !ok {
				t.Errorf("%s: metric %s is registered nowhere in the Go code", where, n)
			}
		}
	}
}

// TestRegisteredFindsTheCode: the search finds metrics the code is known to
// register, with and without histogram suffixes, and nothing made up.
func TestRegisteredFindsTheCode(t *testing.T) {
	code := codeStrings(t)
	for _, m := range []string{"llmgw_requests_total", "llmgw_gateway_added_seconds_bucket", "llmgw_usage_journal_commit_lag_seconds_sum",
		"llmgw_controller_snapshot_writes_total", "gen_ai_client_token_usage_sum", "llmgw_controller_publish_seconds_bucket"} {
		if _, ok := registered(code, m); !ok {
			t.Errorf("%s not found in the code", m)
		}
	}
	for _, m := range []string{"llmgw_requests_totals", "llmgw_made_up_seconds_bucket", "llmgw_requests_total_bucket_sum"} {
		if f, ok := registered(code, m); ok || f != "" {
			t.Errorf("%s found (%q, %v)", m, f, ok)
		}
	}
}
