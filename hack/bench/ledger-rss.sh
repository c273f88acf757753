#!/usr/bin/env bash
# ledger-rss.sh: what a long-running gateway keeps in anonymous memory as its
# ledger grows. Each variant runs on a fresh process and ledger in front of
# the same `llmgw mockprovider --flavor alpha` (ab-cpu.sh's rig): 200 JSON
# requests, then N more at c=8, then 7 s without traffic (past the heap
# floor's idle release, so the Go heap is back to what it keeps); RssAnon
# from /proc/PID/status after each. Memory the collector cannot give back
# (SQLite's page cache lives in modernc's own mappings) shows as what stays
# after the quiet spell. docs/BENCHMARK.md, "eighteenth round".
#
#   hack/bench/ledger-rss.sh [-n 150000] BINARY[:FLAGS]...
#
# Build first: make bench-tools (bin/llmgw).
set -euo pipefail
cd "$(dirname "$0")/../.."
n=150000
while [[ $# -gt 0 && $1 == -* ]]; do
	case $1 in
	-n) n=$2 ;;
	*) echo "unknown flag $1" >&2; exit 2 ;;
	esac
	shift 2
done
[[ $# -gt 0 ]] || { sed -n '2,12p' "$0" >&2; exit 2; }
work=$(mktemp -d bin/ledger-rss.XXXX)
pids=()
cleanup() { kill "${pids[@]}" 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT

# shellcheck source=hack/bench/rig.sh
. hack/bench/rig.sh
start_alpha_rig 4
anon() { awk '/^RssAnon:/ {printf "%.1f MB", $2 * 1024 / 1e6}' "/proc/$1/status"; }

for v in "$@"; do
	port=$(free_port) mport=$(free_port)
	start_gateway "$v"
	pids+=("$pid")
	wait_up "http://127.0.0.1:$port/health"
	"$work/client" "http://127.0.0.1:$port" "$key" 200 2 off >/dev/null
	first=$(anon "$pid")
	"$work/client" "http://127.0.0.1:$port" "$key" "$n" 8 off >/dev/null
	loaded=$(anon "$pid")
	sleep 7
	printf '%-40s RssAnon after 200 requests %s, after %d more %s, 7 s quiet later %s\n' "$v" "$first" "$n" "$loaded" "$(anon "$pid")"
	kill "$pid"
	wait "$pid" 2>/dev/null || true
done
