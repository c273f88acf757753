package main

import "testing"

func TestLegendName(t *testing.T) {
	labels := map[string]string{"alias": "chat-alpha", "status": "success", "code": "200"}
	for _, tc := range []struct {
		name, format string
		labels       map[string]string
		want         string
	}{
		{"labels replaced", "{{alias}} {{status}}", labels, "chat-alpha success"},
		{"spaces inside braces", "{{ alias }}/{{code}}", labels, "chat-alpha/200"},
		{"text around", "p99 stream={{stream}}", map[string]string{"stream": "true"}, "p99 stream=true"},
		{"missing label is empty", "{{alias}} {{nope}}", labels, "chat-alpha "},
		{"plain text", "requests/s", nil, "requests/s"},
		{"empty format names by labels", "", labels, `{alias="chat-alpha", code="200", status="success"}`},
		{"auto with metric name", "__auto", map[string]string{"__name__": "up", "pod": "p"}, `up{pod="p"}`},
		{"no labels: the metric", "", map[string]string{"__name__": "up"}, "up"},
		{"no labels, no metric: the query", "", map[string]string{}, "sum(x)"},
		{"format that comes out empty", "{{nope}}", map[string]string{"pod": "p"}, `{pod="p"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := legendName(tc.format, tc.labels, "sum(x)"); got != tc.want {
				t.Fatalf("legendName(%q) = %q, want %q", tc.format, got, tc.want)
			}
		})
	}
}
