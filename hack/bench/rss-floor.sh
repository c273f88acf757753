#!/usr/bin/env bash
# rss-floor.sh: what a process of this module pays in resident memory before
# it does anything: an empty main() that only imports (and so runs the
# package inits of) each package below, built like bin/llmgw, reports its
# VmRSS split into anonymous and file-backed (its binary's pages) after
# 0.5 s. The gap between "llmgw's packages" and a bare net/http server is
# what every process of the one binary starts with; the gateway gives the
# file-backed part back once it serves (gateway/residency), the other
# subcommands keep it (docs/BENCHMARK.md, "memory"). Usage:
# hack/bench/rss-floor.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
work=$(mktemp -d bin/rss-floor.XXXX)
trap 'rm -rf "$work"' EXIT
probe() { # name, import lines
	local d="$work/$1"
	mkdir -p "$d"
	cat >"$d/main.go" <<GO
package main

import (
	"fmt"
	"os"
	"strings"
	"time"
$2
)

func main() {
	time.Sleep(500 * time.Millisecond)
	b, _ := os.ReadFile("/proc/self/status")
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) == 3 && (f[0] == "VmRSS:" || f[0] == "RssAnon:" || f[0] == "RssFile:") {
			out = append(out, fmt.Sprintf("%s %5.1f MB", strings.TrimSuffix(f[0], ":"), float64(atoi(f[1]))*1024/1e6))
		}
	}
	fmt.Println(strings.Join(out, "  "))
}

func atoi(s string) (n int) {
	for _, c := range s {
		n = n*10 + int(c-'0')
	}
	return n
}
GO
	CGO_ENABLED=0 go build -trimpath -o "$d/probe" "$d/main.go"
	printf '%-34s binary %5.1f MB  %s\n' "$1" "$(echo "$(stat -c %s "$d/probe") / 1000000" | bc -l)" "$("$d/probe")"
}
probe "empty main" ""
probe "net/http" '	_ "net/http"'
probe "modernc.org/sqlite" '	_ "modernc.org/sqlite"'
probe "client-go kubernetes/scheme" '	_ "k8s.io/client-go/kubernetes/scheme"'
probe "llmgw gateway package" '	_ "github.com/llmgw/llmgw/gateway"'
probe "llmgw controllers package" '	_ "github.com/llmgw/llmgw/controllers"'
probe "llmgw's packages (main.go's imports)" "$(sed -n '/^import (/,/^)/p' main.go | grep '"github.com/llmgw' | sed 's/^[[:space:]]*\([a-z]* \)\?/	_ /')"
