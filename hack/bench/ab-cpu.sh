#!/usr/bin/env bash
# ab-cpu.sh: the gateway's own CPU per request, A against B, with less noise
# than make bench's 3-second closed-loop windows. Every variant runs on a
# fresh process in front of the same `llmgw mockprovider --flavor alpha` (or beta);
# rounds interleave the variants (A B C A B C ...), so a slow minute of the
# shared machine hits all of them. A run: W unmeasured requests, then N
# requests from C concurrent clients (keep-alive, hack/bench/abclient), the
# process's user+system CPU (/proc/PID/stat) over them divided by N. Prints
# every run and, per variant, the median and its ratio to the first
# variant's median.
#
#   hack/bench/ab-cpu.sh [-n 20000] [-c 8] [-r 5] [-stream on|off] [-chunks 4] [-flavor alpha|beta] [-bursts 1 -pause 0] [-measure cpu|instructions|syscalls] [-keep DIR] VARIANT...
#
# -bursts B -pause S (CPU only) sends the N measured requests in B bursts
# of N/B, each after S seconds without traffic, as traffic that comes and
# goes does; the CPU over all of it (the pauses too) is divided by N, and
# the process's minor page faults a request are printed beside it.
#
# -flavor beta puts an Anthropic-style mock behind every variant instead:
# the gateway translates (its alias routes to a provider of protocol
# anthropic), the reverse proxy is sent the mock's own /v1/messages.
#
# -keep DIR copies each run's callgrind dump or strace table there (named
# round-variant), for callgrind_annotate --inclusive=yes or a closer look.
#
# -chunks sets the content pieces of every mock answer (a stream's events:
# that many content chunks plus the role, finish and usage ones).
#
# -measure instructions counts instead the user-space instructions the
# process executes per request, under valgrind's callgrind (zeroed after the
# warm-up, dumped after the N requests): the same count for the same work
# whatever else the shared machine does (±1 % between runs), so changes of
# a few percent show where CPU time cannot. It leaves out the kernel's time
# (system calls), and everything runs ~50× slower, so work paced by the clock
# (the ledger's 5 ms batches, timers, the checkpoint every second) weighs
# more than at full speed. Defaults then: -n 1000 -r 2, 300 warm-up
# requests; GODEBUG=asyncpreemptoff=1 (callgrind cannot follow Go's
# preemption signals) and cpu.rdtscp=off (valgrind 3.19 cannot decode
# RDTSCP, which the runtime's cputicks uses where the CPU has it: seen on
# an AMD EPYC VM).
#
# -measure syscalls counts the system calls the process makes per request,
# under `strace -c -f` attached for the N requests (defaults -n 2000 -r 1):
# the kernel's side that the instruction count leaves out. The table of each
# run (calls per request by name) is printed; the figure is all calls but
# futex and the scheduler's waits (epoll_pwait, nanosleep, sched_yield),
# whose number depends on timing rather than on the work.
#
# VARIANT is `revproxy` (hack/bench/revproxy: the baseline) or
# `BINARY[:FLAGS]`, an llmgw binary with extra `llmgw gateway` flags, e.g.
#   hack/bench/ab-cpu.sh revproxy bin/llmgw 'bin/llmgw:--log-flush-interval 0' bin/llmgw-old
# Build first: make bench-tools (bin/llmgw, bin/bench-revproxy).
set -euo pipefail
cd "$(dirname "$0")/../.."
n="" c=8 rounds="" stream=on chunks=4 flavor=alpha measure=cpu keep="" bursts=1 pause=0
while [[ $# -gt 0 && $1 == -* ]]; do
	case $1 in
	-n) n=$2 ;; -c) c=$2 ;; -r) rounds=$2 ;; -stream) stream=$2 ;; -chunks) chunks=$2 ;; -flavor) flavor=$2 ;; -bursts) bursts=$2 ;; -pause) pause=$2 ;; -measure) measure=$2 ;; -keep) keep=$2 ;;
	*) echo "unknown flag $1" >&2; exit 2 ;;
	esac
	shift 2
done
[[ $# -gt 0 ]] || { sed -n '2,46p' "$0" >&2; exit 2; }
[[ -z $keep ]] || mkdir -p "$keep"
case $measure in
cpu) n=${n:-20000} rounds=${rounds:-5} warm=1000 unit="µs CPU/request" ;;
instructions)
	command -v valgrind >/dev/null && command -v callgrind_control >/dev/null ||
		{ echo "-measure instructions needs valgrind (apt-get install valgrind)" >&2; exit 2; }
	n=${n:-1000} rounds=${rounds:-2} warm=300 unit="instructions/request" ;;
syscalls)
	command -v strace >/dev/null || { echo "-measure syscalls needs strace (apt-get install strace)" >&2; exit 2; }
	n=${n:-2000} rounds=${rounds:-1} warm=1000 unit="syscalls/request" ;;
*) echo "-measure is cpu, instructions or syscalls, not $measure" >&2; exit 2 ;;
esac
work=$(mktemp -d bin/ab-cpu.XXXX)
pids=()
cleanup() { kill "${pids[@]}" 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT

# shellcheck source=hack/bench/rig.sh
. hack/bench/rig.sh
case $flavor in alpha | beta) ;; *) echo "-flavor is alpha or beta, not $flavor" >&2; exit 2 ;; esac
[[ $bursts -ge 1 && ( $bursts -eq 1 || $measure == cpu ) ]] || { echo "-bursts is 1 or more, and more than 1 only with -measure cpu" >&2; exit 2; }
start_rig "$flavor" "$chunks"
tck=$(getconf CLK_TCK)

for r in $(seq "$rounds"); do
	for v in "$@"; do
		port=$(free_port) mport=$(free_port)
		# Under callgrind the target is valgrind's process: the same pid.
		under=()
		[[ $measure == instructions ]] && under=(env GODEBUG=asyncpreemptoff=1,cpu.rdtscp=off valgrind --tool=callgrind
			"--callgrind-out-file=$work/callgrind.%p")
		if [[ $v == revproxy ]]; then
			"${under[@]}" bin/bench-revproxy -addr "127.0.0.1:$port" -mgmt-addr "127.0.0.1:$mport" -alpha "http://127.0.0.1:$mock_port" \
				-beta "http://127.0.0.1:$mock_port" >"$work/target.log" 2>&1 &
			pid=$! k=unused health=/healthz proto=anthropic
			[[ $flavor == alpha ]] && proto=openai
		else
			start_gateway "$v" "${under[@]}"
			k=$key health=/health proto=openai
		fi
		pids+=("$pid")
		wait_up "http://127.0.0.1:$port$health"
		"$work/client" "http://127.0.0.1:$port" "$k" "$warm" "$c" "$stream" "$proto"
		if [[ $measure == cpu ]]; then
			read -r t0 f0 < <(awk '{print $14+$15, $10}' "/proc/$pid/stat")
			for _ in $(seq "$bursts"); do
				sleep "$pause"
				"$work/client" "http://127.0.0.1:$port" "$k" $((n / bursts)) "$c" "$stream" "$proto"
			done
			read -r t1 f1 < <(awk '{print $14+$15, $10}' "/proc/$pid/stat")
			sent=$((n / bursts * bursts))
			per=$(echo "($t1 - $t0) * 1000000 / $tck / $sent" | bc -l)
			printf '    %-45s %6.2f minor page faults/request\n' "$v" "$(echo "($f1 - $f0) / $sent" | bc -l)" >&2
		elif [[ $measure == syscalls ]]; then
			strace -c -f -q -p "$pid" -o "$work/strace" &
			spid=$!
			sleep 1 # strace attaches to every thread before the requests start
			"$work/client" "http://127.0.0.1:$port" "$k" "$n" "$c" "$stream" "$proto"
			kill -INT "$spid"
			wait "$spid" 2>/dev/null || true
			per=$(awk -v n="$n" -v v="$v" '
				# strace -c: % time, seconds, usecs/call, calls, [errors,] syscall
				NF >= 5 && $1 ~ /^[0-9.]+$/ && $4 ~ /^[0-9]+$/ {
					name = $NF; calls = $4
					if (name == "total") next
					if (name !~ /^(futex|epoll_pwait|epoll_wait|nanosleep|sched_yield)$/) sum += calls
					printf "    %-45s %-16s %8.2f\n", v, name, calls / n > "/dev/stderr"
				}
				END { printf "%.2f", sum / n }' "$work/strace")
			[[ -z $keep ]] || cp "$work/strace" "$keep/strace.$r.$(basename "${v%%:*}")"
		else
			callgrind_control -z "$pid" >/dev/null 2>&1
			"$work/client" "http://127.0.0.1:$port" "$k" "$n" "$c" "$stream" "$proto"
			callgrind_control -d "$pid" >/dev/null 2>&1
			for _ in $(seq 100); do
				dump=$(ls "$work/callgrind.$pid".* 2>/dev/null | head -1)
				[[ -n $dump ]] && grep -q '^summary:' "$dump" && break
				sleep 0.1
			done
			per=$(awk -v n="$n" '$1 == "summary:" { printf "%.0f", $2 / n }' "$dump")
			[[ -z $keep ]] || cp "$dump" "$keep/callgrind.$r.$(basename "${v%%:*}")"
			rm -f "$work/callgrind.$pid"*
		fi
		kill "$pid"
		wait "$pid" 2>/dev/null || true
		printf 'round %d  %-45s %10.1f %s\n' "$r" "$v" "$per" "$unit" >&2
		printf '%s\t%s\n' "$v" "$per" >>"$work/runs.tsv"
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
	for (o = 1; o <= k; o++) printf "median of %d  %-40s %10.1f %s   %.2f× %s\n", m, order[o], med[order[o]], unit, med[order[o]] / med[first], first
}' unit="$unit" "$work/runs.tsv"
