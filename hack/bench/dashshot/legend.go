package main

import (
	"maps"
	"regexp"
	"slices"
	"strings"
)

// legendRef is a {{label}} reference of a legendFormat.
var legendRef = regexp.MustCompile(`\{\{\s*(.+?)\s*\}\}`)

// legendName is a series' display name. A custom legendFormat has each
// {{label}} replaced by the series' value of that label, or nothing when it
// has none (what Grafana's Prometheus backend does since the queries moved
// there); "__auto", "__verbose" and an empty format name the series by its
// labels, as {label="value", ...}, and a series without labels by its
// query.
func legendName(format string, labels map[string]string, expr string) string {
	switch format {
	case "", "__auto", "__verbose":
		return labelString(labels, expr)
	}
	name := legendRef.ReplaceAllStringFunc(format, func(ref string) string {
		return labels[legendRef.FindStringSubmatch(ref)[1]]
	})
	if strings.TrimSpace(name) == "" {
		return labelString(labels, expr)
	}
	return name
}

// labelString is metric{a="1", b="2"} with the labels sorted, as Grafana
// names a series that has no legend.
func labelString(labels map[string]string, expr string) string {
	keys := slices.Sorted(maps.Keys(labels))
	keys = slices.DeleteFunc(keys, func(k string) bool { return k == "__name__" })
	if len(keys) == 0 {
		if n := labels["__name__"]; n != "" {
			return n
		}
		return expr
	}
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + `="` + labels[k] + `"`
	}
	return labels["__name__"] + "{" + strings.Join(parts, ", ") + "}"
}
