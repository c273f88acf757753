package manifests

import (
	"fmt"
	"regexp"
	"slices"
	"testing"
)

// PromQL's aggregation operators, keywords and the functions the dashboard
// and the alerts may call: anything else written as name( is refused (a
// typo), and every other bare name is a metric.
var (
	promAggregations = []string{"sum", "min", "max", "avg", "count", "stddev", "stdvar", "topk", "bottomk",
		"quantile", "count_values", "group"}
	promKeywords = []string{"by", "without", "on", "ignoring", "group_left", "group_right", "bool",
		"and", "or", "unless", "offset", "atan2"}
	promLabelLists = []string{"by", "without", "on", "ignoring", "group_left", "group_right"}
	promFunctions  = []string{"abs", "absent", "absent_over_time", "avg_over_time", "ceil", "changes", "clamp", "clamp_max",
		"clamp_min", "count_over_time", "delta", "deriv", "exp", "floor", "histogram_count", "histogram_quantile",
		"histogram_sum", "idelta", "increase", "irate", "label_join", "label_replace", "last_over_time", "ln", "log10",
		"log2", "max_over_time", "min_over_time", "predict_linear", "quantile_over_time", "rate", "resets", "round",
		"scalar", "sgn", "sort", "sort_desc", "sqrt", "sum_over_time", "time", "timestamp", "vector"}
)

// grafanaVariable is a Grafana template variable in a query ($alias,
// ${datasource}, $__rate_interval): it stands inside a label value or a
// range, never for a metric.
var grafanaVariable = regexp.MustCompile(`\$\{?[A-Za-z_][A-Za-z0-9_]*(:[a-z]+)?\}?`)

// promMetricNames returns the metric names an expression selects: the bare
// names that are neither operators, keywords nor functions, outside label
// matchers ({...}), label lists (by (...)), strings and numbers. An unknown
// function or an unbalanced brace or string is an error.
func promMetricNames(expr string) ([]string, error) {
	s := grafanaVariable.ReplaceAllString(expr, "")
	var names []string
	isIdentStart := func(c byte) bool { return c == '_' || c == ':' || (c|0x20 >= 'a' && c|0x20 <= 'z') }
	isIdent := func(c byte) bool { return isIdentStart(c) || (c >= '0' && c <= '9') }
	skipString := func(i int) (int, error) {
		q := s[i]
		for j := i + 1; j < len(s); j++ {
			switch {
			case s[j] == '\\' && q != '`':
				j++
			case s[j] == q:
				return j + 1, nil
			}
		}
		return 0, fmt.Errorf("unterminated string at %d in %q", i, expr)
	}
	// skipGroup skips from an opening bracket to its match, strings included.
	skipGroup := func(i int, open, close byte) (int, error) {
		depth := 0
		for j := i; j < len(s); j++ {
			switch s[j] {
			case '"', '\'', '`':
				end, err := skipString(j)
				if err != nil {
					return 0, err
				}
				j = end - 1
			case open:
				depth++
			case close:
				depth--
				if depth == 0 {
					return j + 1, nil
				}
			}
		}
		return 0, fmt.Errorf("unbalanced %c at %d in %q", open, i, expr)
	}
	nextNonSpace := func(i int) int {
		for i < len(s) && (s[i] == ' ' || s[i] == '\n' || s[i] == '\t') {
			i++
		}
		return i
	}
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '"' || c == '\'' || c == '`':
			end, err := skipString(i)
			if err != nil {
				return nil, err
			}
			i = end
		case c == '{':
			end, err := skipGroup(i, '{', '}')
			if err != nil {
				return nil, err
			}
			i = end
		case c == '#': // a comment, to the end of the line
			for i < len(s) && s[i] != '\n' {
				i++
			}
		case c >= '0' && c <= '9' || (c == '.' && i+1 < len(s) && s[i+1] >= '0' && s[i+1] <= '9'):
			// A number or a duration (5m, 1h30m, 1e3, 0.99).
			for i < len(s) && (isIdent(s[i]) || s[i] == '.') {
				i++
			}
		case isIdentStart(c):
			j := i
			for j < len(s) && isIdent(s[j]) {
				j++
			}
			word, next := s[i:j], nextNonSpace(j)
			paren := next < len(s) && s[next] == '('
			switch {
			case slices.Contains(promLabelLists, word) && paren:
				end, err := skipGroup(next, '(', ')')
				if err != nil {
					return nil, err
				}
				j = end
			case slices.Contains(promKeywords, word) || slices.Contains(promAggregations, word):
			case paren:
				if !slices.Contains(promFunctions, word) {
					return nil, fmt.Errorf("unknown function %s( in %q", word, expr)
				}
			default:
				names = append(names, word)
			}
			i = j
		default:
			i++
		}
	}
	return names, nil
}

func TestPromMetricNames(t *testing.T) {
	for _, tc := range []struct {
		expr string
		want []string
	}{
		{`sum by (alias, status) (rate(llmgw_requests_total{namespace=~"$namespace", alias=~"$alias"}[$__rate_interval]))`,
			[]string{"llmgw_requests_total"}},
		{`histogram_quantile(0.99, sum by (le) (rate(gen_ai_server_request_duration_seconds_bucket{gen_ai_request_model=~"a|b"}[5m]))) > 0.05
and on (namespace) sum by (namespace) (rate(llmgw_gateway_added_seconds_count{job="x}y"}[1h30m])) > 1e-3`,
			[]string{"gen_ai_server_request_duration_seconds_bucket", "llmgw_gateway_added_seconds_count"}},
		{`count(llmgw_usage_store_writable{namespace=~"${namespace}"} == 0) or vector(0)`, []string{"llmgw_usage_store_writable"}},
		{`a / ignoring(pod) group_left(version) b offset 5m`, []string{"a", "b"}},
		{`max without (pod) (up)`, []string{"up"}},
	} {
		got, err := promMetricNames(tc.expr)
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("promMetricNames(%q) = %v, %v; want %v", tc.expr, got, err, tc.want)
		}
	}
	for _, bad := range []string{`rte(x[5m])`, `sum(x{a="b"`, `x{a="b}`} {
		if got, err := promMetricNames(bad); err == nil {
			t.Errorf("promMetricNames(%q) = %v, want an error", bad, got)
		}
	}
}
