package main

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Selection is what a template variable is set to: some values, or All.
type Selection struct {
	Values []string
	All    bool
}

// Scope is everything a query's $variables resolve to: the dashboard's
// variables as selected, and Grafana's built-ins ($__interval, ...).
type Scope struct {
	Vars     map[string]Variable
	Selected map[string]Selection
	Builtins map[string]string
}

// variableRef is Grafana's template-variable syntax: $name, [[name:fmt]]
// and ${name:fmt} (grafana/public/app/features/variables/utils.ts).
var variableRef = regexp.MustCompile(`\$(\w+)|\[\[(\w+?)(?::(\w+))?\]\]|\$\{(\w+)(?:\.([^:^}]+))?(?::([^}]+))?\}`)

// interpolate replaces every variable reference in a PromQL expression the
// way Grafana's Prometheus data source does. A name that is neither a
// variable nor a built-in stays as written (Grafana leaves it too, and
// Prometheus then says what is wrong with the query).
func (s Scope) interpolate(expr string) string {
	return variableRef.ReplaceAllStringFunc(expr, func(ref string) string {
		m := variableRef.FindStringSubmatch(ref)
		name, format := m[1], ""
		switch {
		case m[2] != "":
			name, format = m[2], m[3]
		case m[4] != "":
			name, format = m[4], m[6]
		}
		if v, ok := s.Builtins[name]; ok {
			return v
		}
		v, ok := s.Vars[name]
		if !ok {
			return ref
		}
		return formatSelection(v, s.Selected[name], format)
	})
}

// formatSelection is one variable's value in a query. Without a format it
// follows Grafana's interpolateQueryExpr for Prometheus: All is the
// variable's allValue unescaped; a multi-value or include-All variable's
// values are regex-escaped and joined as (a|b); any other value is escaped
// only for a PromQL string.
func formatSelection(v Variable, sel Selection, format string) string {
	if v.Type == "datasource" {
		return strings.Join(sel.Values, ",")
	}
	if sel.All {
		if v.AllValue != "" {
			return v.AllValue
		}
		// Grafana would join every option; without its option list the
		// regex that matches them all is the faithful stand-in.
		return ".*"
	}
	switch format {
	case "raw", "csv":
		return strings.Join(sel.Values, ",")
	case "pipe":
		return strings.Join(sel.Values, "|")
	case "regex":
		return regexJoin(sel.Values)
	}
	if !v.Multi && !v.IncludeAll {
		if len(sel.Values) == 0 {
			return ""
		}
		return promStringEscape(sel.Values[0])
	}
	return regexJoin(sel.Values)
}

func regexJoin(values []string) string {
	esc := make([]string, len(values))
	for i, v := range values {
		esc[i] = promRegexEscape(v)
	}
	if len(esc) == 1 {
		return esc[0]
	}
	return "(" + strings.Join(esc, "|") + ")"
}

// promStringEscape is Grafana's prometheusRegularEscape: a value inside a
// PromQL string literal.
func promStringEscape(s string) string {
	s = strings.ReplaceAll(s, `\`, `\\`)
	return strings.ReplaceAll(s, `'`, `\\'`)
}

// promRegexEscape is Grafana's prometheusSpecialRegexEscape: a literal value
// inside a regex inside a PromQL string, so every special character gets a
// backslash that is itself escaped for the string.
func promRegexEscape(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '\\':
			b.WriteString(`\\\\`)
		case strings.ContainsRune(`$^*{}[]'+?.()|`, r):
			b.WriteString(`\\`)
			b.WriteRune(r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// parseSelections turns -var name=value flags into selections, one per
// dashboard variable. Repeating a name selects several values (as Grafana's
// var-name=a&var-name=b URLs do); "All", "$__all" or the variable's own
// allValue select All. A variable left unset is All when it can be, the
// data source name for a data source variable, and an error otherwise.
func parseSelections(d *Dashboard, flags []string, datasource string) (map[string]Selection, error) {
	out := map[string]Selection{}
	for _, f := range flags {
		name, value, ok := strings.Cut(f, "=")
		if !ok || name == "" {
			return nil, fmt.Errorf("-var %q: want name=value", f)
		}
		v, ok := d.variable(name)
		if !ok {
			return nil, fmt.Errorf("-var %q: the dashboard has no variable %q", f, name)
		}
		sel := out[name]
		if value == "All" || value == "$__all" || (v.IncludeAll && v.AllValue != "" && value == v.AllValue) {
			if !v.IncludeAll {
				return nil, fmt.Errorf("-var %q: variable %q has no All option", f, name)
			}
			sel.All = true
		} else {
			sel.Values = append(sel.Values, value)
		}
		if len(sel.Values) > 1 && !v.Multi {
			return nil, fmt.Errorf("-var %q: variable %q takes one value", f, name)
		}
		out[name] = sel
	}
	for _, v := range d.Templating.List {
		if _, ok := out[v.Name]; ok {
			continue
		}
		switch {
		case v.Type == "datasource":
			out[v.Name] = Selection{Values: []string{datasource}}
		case v.IncludeAll:
			out[v.Name] = Selection{All: true}
		default:
			return nil, fmt.Errorf("variable %q has no All option: set it with -var %s=VALUE", v.Name, v.Name)
		}
	}
	return out, nil
}

// display is a selection as the variable picker shows it.
func (s Selection) display() string {
	if s.All {
		return "All"
	}
	return strings.Join(s.Values, " + ")
}

// Timing is a render's time range and the intervals derived from it.
type Timing struct {
	Start, End   time.Time
	Step         time.Duration // query_range step, also $__interval
	RateInterval time.Duration // $__rate_interval
}

// newTiming derives the query step from the range the way Grafana does
// (range / max data points, rounded to a nice interval, never below the
// scrape interval). rate <= 0 derives $__rate_interval as Grafana does,
// max($__interval + scrape, 4 × scrape).
func newTiming(end time.Time, rng, scrape, rate time.Duration, points int) Timing {
	step := max(roundInterval(rng/time.Duration(max(points, 1))), scrape)
	if rate <= 0 {
		rate = max(step+scrape, 4*scrape)
	}
	return Timing{Start: end.Add(-rng), End: end, Step: step, RateInterval: rate}
}

// builtins are Grafana's global variables for one render.
func (t Timing) builtins() map[string]string {
	rng := t.End.Sub(t.Start)
	return map[string]string{
		"__interval":         promDuration(t.Step),
		"__interval_ms":      strconv.FormatInt(t.Step.Milliseconds(), 10),
		"__rate_interval":    promDuration(t.RateInterval),
		"__rate_interval_ms": strconv.FormatInt(t.RateInterval.Milliseconds(), 10),
		"__range":            strconv.FormatInt(int64(rng.Round(time.Second)/time.Second), 10) + "s",
		"__range_s":          strconv.FormatInt(int64(rng.Round(time.Second)/time.Second), 10),
		"__range_ms":         strconv.FormatInt(rng.Milliseconds(), 10),
	}
}

// promDuration writes d in PromQL duration syntax with the largest unit
// that divides it: 1m, 90s, 250ms.
func promDuration(d time.Duration) string {
	switch {
	case d <= 0:
		return "0s"
	case d%time.Hour == 0:
		return strconv.FormatInt(int64(d/time.Hour), 10) + "h"
	case d%time.Minute == 0:
		return strconv.FormatInt(int64(d/time.Minute), 10) + "m"
	case d%time.Second == 0:
		return strconv.FormatInt(int64(d/time.Second), 10) + "s"
	default:
		return strconv.FormatInt(d.Milliseconds(), 10) + "ms"
	}
}

// roundInterval is Grafana's rangeutil.roundInterval, abridged: the nice
// interval nearest to d.
func roundInterval(d time.Duration) time.Duration {
	table := []struct{ below, to time.Duration }{
		{15 * time.Millisecond, 10 * time.Millisecond},
		{35 * time.Millisecond, 20 * time.Millisecond},
		{75 * time.Millisecond, 50 * time.Millisecond},
		{150 * time.Millisecond, 100 * time.Millisecond},
		{350 * time.Millisecond, 200 * time.Millisecond},
		{750 * time.Millisecond, 500 * time.Millisecond},
		{1500 * time.Millisecond, time.Second},
		{3500 * time.Millisecond, 2 * time.Second},
		{7500 * time.Millisecond, 5 * time.Second},
		{12500 * time.Millisecond, 10 * time.Second},
		{17500 * time.Millisecond, 15 * time.Second},
		{25 * time.Second, 20 * time.Second},
		{45 * time.Second, 30 * time.Second},
		{90 * time.Second, time.Minute},
		{210 * time.Second, 2 * time.Minute},
		{450 * time.Second, 5 * time.Minute},
		{750 * time.Second, 10 * time.Minute},
		{1050 * time.Second, 15 * time.Minute},
		{1500 * time.Second, 20 * time.Minute},
		{2700 * time.Second, 30 * time.Minute},
		{5400 * time.Second, time.Hour},
		{9000 * time.Second, 2 * time.Hour},
		{16200 * time.Second, 3 * time.Hour},
		{32400 * time.Second, 6 * time.Hour},
		{86400 * time.Second, 12 * time.Hour},
	}
	for _, r := range table {
		if d < r.below {
			return r.to
		}
	}
	return 24 * time.Hour
}
