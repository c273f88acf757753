package main

import (
	"strings"
	"testing"
	"time"
)

var testVars = map[string]Variable{
	"datasource": {Name: "datasource", Type: "datasource"},
	"namespace":  {Name: "namespace", Type: "query", IncludeAll: true, AllValue: ".*", Multi: true},
	"alias":      {Name: "alias", Type: "query", IncludeAll: true, AllValue: ".*", Multi: true},
	"single":     {Name: "single", Type: "custom"},
	"noall":      {Name: "noall", Type: "query", IncludeAll: true, Multi: true},
}

func TestInterpolate(t *testing.T) {
	builtins := Timing{
		Start: time.Unix(0, 0), End: time.Unix(900, 0), Step: 5 * time.Second, RateInterval: time.Minute,
	}.builtins()
	for _, tc := range []struct {
		name string
		sel  map[string]Selection
		expr string
		want string
	}{
		{"all is the allValue, unescaped", map[string]Selection{"namespace": {All: true}},
			`x{namespace=~"$namespace"}`, `x{namespace=~".*"}`},
		{"one value", map[string]Selection{"namespace": {Values: []string{"llmgw-system"}}},
			`x{namespace=~"$namespace"}`, `x{namespace=~"llmgw-system"}`},
		{"regex characters escaped for regex and string", map[string]Selection{"alias": {Values: []string{"chat.alpha"}}},
			`x{alias=~"$alias"}`, `x{alias=~"chat\\.alpha"}`},
		{"several values", map[string]Selection{"alias": {Values: []string{"chat-alpha", "chat-beta"}}},
			`x{alias=~"$alias"}`, `x{alias=~"(chat-alpha|chat-beta)"}`},
		{"braces syntax", map[string]Selection{"alias": {Values: []string{"a"}}},
			`x{alias=~"${alias}"}`, `x{alias=~"a"}`},
		{"brackets syntax", map[string]Selection{"alias": {Values: []string{"a"}}},
			`x{alias=~"[[alias]]"}`, `x{alias=~"a"}`},
		{"pipe format", map[string]Selection{"alias": {Values: []string{"a.b", "c"}}},
			`${alias:pipe}`, `a.b|c`},
		{"raw format", map[string]Selection{"alias": {Values: []string{"a", "b"}}},
			`${alias:raw}`, `a,b`},
		{"all without allValue matches everything", map[string]Selection{"noall": {All: true}},
			`$noall`, `.*`},
		{"single-value variable escaped only for the string", map[string]Selection{"single": {Values: []string{`it's\`}}},
			`x{a="$single"}`, `x{a="it\\'s\\"}`},
		{"data source", map[string]Selection{"datasource": {Values: []string{"Prometheus"}}},
			`${datasource}`, `Prometheus`},
		{"rate interval", nil, `rate(x[$__rate_interval])`, `rate(x[1m])`},
		{"interval", nil, `rate(x[$__interval])`, `rate(x[5s])`},
		{"range in seconds", nil, `increase(x[$__range])`, `increase(x[900s])`},
		{"range_s is not range", nil, `$__range_s $__range_ms`, `900 900000`},
		{"unknown variable stays", nil, `x{a="$nope"}`, `x{a="$nope"}`},
		{"several in one query", map[string]Selection{"namespace": {All: true}, "alias": {Values: []string{"a"}}},
			`sum(rate(x{namespace=~"$namespace", alias=~"$alias"}[$__rate_interval]))`,
			`sum(rate(x{namespace=~".*", alias=~"a"}[1m]))`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := Scope{Vars: testVars, Selected: tc.sel, Builtins: builtins}
			if got := s.interpolate(tc.expr); got != tc.want {
				t.Fatalf("interpolate(%s) = %s, want %s", tc.expr, got, tc.want)
			}
		})
	}
}

func TestParseSelections(t *testing.T) {
	d := &Dashboard{Templating: Templating{List: []Variable{
		testVars["datasource"], testVars["namespace"], testVars["alias"], testVars["single"],
	}}}
	for _, tc := range []struct {
		name  string
		flags []string
		want  map[string]string // display per variable
		err   string
	}{
		{"defaults: All, the data source; single needs a value", nil, nil, `variable "single" has no All option`},
		{"values and All forms", []string{"single=x", "namespace=llmgw-system", "alias=.*"},
			map[string]string{"datasource": "DS", "namespace": "llmgw-system", "alias": "All", "single": "x"}, ""},
		{"All by name", []string{"single=x", "alias=All"}, map[string]string{"alias": "All", "namespace": "All"}, ""},
		{"$__all", []string{"single=x", "alias=$__all"}, map[string]string{"alias": "All"}, ""},
		{"repeated name selects several", []string{"single=x", "alias=a", "alias=b"}, map[string]string{"alias": "a + b"}, ""},
		{"unknown variable", []string{"single=x", "nope=1"}, nil, `no variable "nope"`},
		{"no equals sign", []string{"single"}, nil, "want name=value"},
		{"two values for a single-value variable", []string{"single=x", "single=y"}, nil, "takes one value"},
		{"All where there is none", []string{"single=All"}, nil, "has no All option"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sel, err := parseSelections(d, tc.flags, "DS")
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for name, want := range tc.want {
				if got := sel[name].display(); got != want {
					t.Errorf("%s = %q, want %q", name, got, want)
				}
			}
		})
	}
}

func TestTiming(t *testing.T) {
	end := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name               string
		rng, scrape, rate  time.Duration
		points             int
		wantStep, wantRate time.Duration
	}{
		{"15m over 200 points is 4.5 s, rounded to 5 s", 15 * time.Minute, time.Second, time.Minute, 200, 5 * time.Second, time.Minute},
		{"never below the scrape interval", 15 * time.Minute, 15 * time.Second, time.Minute, 200, 15 * time.Second, time.Minute},
		{"auto rate interval: 4 × scrape", 15 * time.Minute, 5 * time.Second, 0, 200, 5 * time.Second, 20 * time.Second},
		{"auto rate interval: step + scrape", 3 * time.Hour, 15 * time.Second, 0, 200, time.Minute, 75 * time.Second},
		{"6h is 108 s, rounded to 2 m", 6 * time.Hour, 15 * time.Second, time.Minute, 200, 2 * time.Minute, time.Minute},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tm := newTiming(end, tc.rng, tc.scrape, tc.rate, tc.points)
			if tm.Step != tc.wantStep || tm.RateInterval != tc.wantRate || !tm.End.Equal(end) || tm.End.Sub(tm.Start) != tc.rng {
				t.Fatalf("step %v rate %v range %v..%v, want step %v rate %v", tm.Step, tm.RateInterval, tm.Start, tm.End, tc.wantStep, tc.wantRate)
			}
		})
	}
}

func TestPromDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{
		time.Minute: "1m", 90 * time.Second: "90s", 2 * time.Hour: "2h", 250 * time.Millisecond: "250ms", 0: "0s",
	} {
		if got := promDuration(d); got != want {
			t.Errorf("promDuration(%v) = %s, want %s", d, got, want)
		}
	}
}
