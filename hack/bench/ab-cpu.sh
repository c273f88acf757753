#!/usr/bin/env bash
# ab-cpu.sh: the gateway's own CPU per request, A against B, with less noise
# than make bench's 3-second closed-loop windows. Every variant runs on a
# fresh process in front of the same `llmgw mockprovider --flavor alpha`;
# rounds interleave the variants (A B C A B C ...), so a slow minute of the
# shared machine hits all of them. A run: 1,000 unmeasured requests, then N
# requests from C concurrent clients (keep-alive), the process's user+system
# CPU (/proc/PID/stat) over them divided by N. Prints every run and, per
# variant, the median and its ratio to the first variant's median.
#
#   hack/bench/ab-cpu.sh [-n 20000] [-c 8] [-r 5] [-stream on|off] [-chunks 4] VARIANT...
#
# -chunks sets the content pieces of every mock answer (a stream's events:
# that many content chunks plus the role, finish and usage ones).
#
# VARIANT is `revproxy` (hack/bench/revproxy: the baseline) or
# `BINARY[:FLAGS]`, an llmgw binary with extra `llmgw gateway` flags, e.g.
#   hack/bench/ab-cpu.sh revproxy bin/llmgw 'bin/llmgw:--log-flush-interval 0' bin/llmgw-old
# Build first: make bench-tools (bin/llmgw, bin/bench-revproxy).
set -euo pipefail
cd "$(dirname "$0")/../.."
n=20000 c=8 rounds=5 stream=on chunks=4
while [[ $# -gt 0 && $1 == -* ]]; do
	case $1 in
	-n) n=$2 ;; -c) c=$2 ;; -r) rounds=$2 ;; -stream) stream=$2 ;; -chunks) chunks=$2 ;;
	*) echo "unknown flag $1" >&2; exit 2 ;;
	esac
	shift 2
done
[[ $# -gt 0 ]] || { sed -n '2,20p' "$0" >&2; exit 2; }
work=$(mktemp -d bin/ab-cpu.XXXX)
pids=()
cleanup() { kill "${pids[@]}" 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT

free_port() { python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])'; }
wait_up() { for _ in $(seq 100); do curl -sf -o /dev/null "$1" && return 0; sleep 0.1; done; echo "not up: $1" >&2; return 1; }

# The client: N chat requests (SSE or JSON) from C goroutines, every body
# read to its end; any status but 200 fails the run.
mkdir -p "$work/client"
cat >"$work/client/main.go" <<'GO'
package main

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
)

func main() {
	url, key, stream := os.Args[1], os.Args[2], os.Args[5] == "on"
	n, _ := strconv.Atoi(os.Args[3])
	c, _ := strconv.Atoi(os.Args[4])
	body := fmt.Sprintf(`{"model":"chat-alpha","stream":%v,"messages":[{"role":"user","content":"hello there, how are you today?"}]}`, stream)
	http.DefaultTransport.(*http.Transport).MaxIdleConnsPerHost = c
	var wg sync.WaitGroup
	for g := 0; g < c; g++ {
		wg.Go(func() {
			for i := g; i < n; i += c {
				req, _ := http.NewRequest("POST", url+"/v1/chat/completions", strings.NewReader(body))
				req.Header.Set("Authorization", "Bearer "+key)
				req.Header.Set("Content-Type", "application/json")
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					fmt.Fprintln(os.Stderr, err)
					os.Exit(1)
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 {
					fmt.Fprintln(os.Stderr, resp.Status)
					os.Exit(1)
				}
			}
		})
	}
	wg.Wait()
}
GO
(cd "$work/client" && cat >go.mod <<<'module client' && CGO_ENABLED=0 go build -o client .)

mock_port=$(free_port)
bin/llmgw mockprovider --flavor alpha --addr "127.0.0.1:$mock_port" --default-chunks "$chunks" --log-level warn >"$work/mock.log" 2>&1 &
pids+=($!)
wait_up "http://127.0.0.1:$mock_port/healthz"
cat >"$work/snapshot.json" <<JSON
{"providers":[{"name":"alpha","protocol":"openai","baseURL":"http://127.0.0.1:$mock_port"}],
 "aliases":[{"name":"chat-alpha","primary":{"provider":"alpha","model":"alpha-large"},"maxFallbacks":0}]}
JSON
bin/llmgw keys create --id bench --models chat-alpha --rpm 100000000 --burst 1000000 \
	--into "$work/snapshot.json" --key-out "$work/key" 2>/dev/null
key=$(cat "$work/key")
tck=$(getconf CLK_TCK)

for r in $(seq "$rounds"); do
	i=0
	for v in "$@"; do
		i=$((i + 1))
		port=$(free_port) mport=$(free_port)
		if [[ $v == revproxy ]]; then
			bin/bench-revproxy -addr "127.0.0.1:$port" -mgmt-addr "127.0.0.1:$mport" -alpha "http://127.0.0.1:$mock_port" \
				-beta "http://127.0.0.1:$mock_port" >"$work/target.log" 2>&1 &
			pid=$! k=unused health=/healthz
		else
			bin=${v%%:*} flags=""
			[[ $v == *:* ]] && flags=${v#*:}
			rm -f "$work"/usage.db*
			# shellcheck disable=SC2086 # flags are words
			"$bin" gateway --snapshot "$work/snapshot.json" --db "$work/usage.db" --addr "127.0.0.1:$port" \
				--mgmt-addr "127.0.0.1:$mport" --ip-rpm 0 $flags >"$work/target.log" 2>&1 &
			pid=$! k=$key health=/health
		fi
		pids+=("$pid")
		wait_up "http://127.0.0.1:$port$health"
		"$work/client/client" "http://127.0.0.1:$port" "$k" 1000 "$c" "$stream"
		t0=$(awk '{print $14+$15}' "/proc/$pid/stat")
		"$work/client/client" "http://127.0.0.1:$port" "$k" "$n" "$c" "$stream"
		t1=$(awk '{print $14+$15}' "/proc/$pid/stat")
		kill "$pid"
		wait "$pid" 2>/dev/null || true
		cpu=$(echo "($t1 - $t0) * 1000000 / $tck / $n" | bc -l)
		printf 'round %d  %-45s %7.1f µs CPU/request\n' "$r" "$v" "$cpu" >&2
		printf '%s\t%s\n' "$v" "$cpu" >>"$work/runs.tsv"
	done
done
echo >&2
awk -F'\t' -v first="$1" '{
	if (!($1 in runs)) order[++k] = $1
	runs[$1] = runs[$1] " " $2
}
END {
	for (v in runs) {
		m = split(substr(runs[v], 2), xs, " ")
		for (i = 1; i <= m; i++) for (j = i + 1; j <= m; j++) if (xs[j] + 0 < xs[i] + 0) { t = xs[i]; xs[i] = xs[j]; xs[j] = t }
		med[v] = (m % 2) ? xs[(m + 1) / 2] : (xs[m / 2] + xs[m / 2 + 1]) / 2
	}
	for (o = 1; o <= k; o++) printf "median of %d  %-40s %7.1f µs   %.2f× %s\n", m, order[o], med[order[o]], med[order[o]] / med[first], first
}' "$work/runs.tsv"
