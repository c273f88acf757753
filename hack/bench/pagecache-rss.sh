#!/usr/bin/env bash
# pagecache-rss.sh: how the way the gateway's binary entered the page cache
# changes the gateway's file-backed RSS for the same work. The kernel caches
# a file read sequentially in large folios (up to 2 MiB) and a page fault
# maps the whole folio, huge where it can; a file just written is cached in
# small folios and a fault maps its 64 KiB neighbourhood. Which one the
# gateway meets depends on what read its binary before it started (cp from
# it, a checksum, a docker build context), not on the gateway.
#
# Every run starts `llmgw gateway` from a fresh copy of bin/llmgw in one of
# three states, in front of one mock (run from bin/llmgw itself):
#   written  the copy as written (a node right after pulling an image)
#   read     the copy written back, dropped from the page cache (fadvise,
#            through dd iflag=nocache) and read once with cat
#   cold     written back and dropped; the gateway's own faults read it
# then sends N streamed requests at c=8 (hack/bench/abclient) and prints
# the gateway's RssFile, and of it the part mapped huge (FilePmdMapped of
# its mappings of the copy). Rounds interleave the states.
#
#   hack/bench/pagecache-rss.sh [-n 4000] [-r 2]
#
# Build first: make build (bin/llmgw). Dropping a file's clean pages needs no
# privilege; pages still dirty cannot be dropped, hence sync first.
set -euo pipefail
cd "$(dirname "$0")/../.."
n=4000 rounds=2
while [[ $# -gt 0 && $1 == -* ]]; do
	case $1 in
	-n) n=$2 ;; -r) rounds=$2 ;;
	*) echo "unknown flag $1" >&2; exit 2 ;;
	esac
	shift 2
done
work=$(mktemp -d "$PWD/bin/pagecache-rss.XXXX") # absolute, as smaps names the copy
pids=()
cleanup() { kill "${pids[@]}" 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT
# shellcheck source=hack/bench/rig.sh
. hack/bench/rig.sh
start_alpha_rig 4

printf '%-8s %12s %14s\n' state "RssFile MB" "of it huge MB" >&2
for r in $(seq "$rounds"); do
	for state in written read cold; do
		copy="$work/llmgw-$state-$r"
		cp bin/llmgw "$copy"
		if [[ $state != written ]]; then
			sync "$copy"
			dd if="$copy" iflag=nocache count=0 status=none
			[[ $state == read ]] && cat "$copy" >/dev/null
		fi
		port=$(free_port)
		rm -f "$work"/usage.db*
		"$copy" gateway --snapshot "$work/snapshot.json" --db "$work/usage.db" --addr "127.0.0.1:$port" \
			--mgmt-addr "" --ip-rpm 0 --log-level warn >"$work/target.log" 2>&1 &
		pid=$!
		pids+=("$pid")
		wait_up "http://127.0.0.1:$port/health"
		"$work/client" "http://127.0.0.1:$port" "$key" "$n" 8 on
		file=$(awk '$1 == "RssFile:" { print $2 }' "/proc/$pid/status")
		huge=$(awk -v f="$copy" '$NF == f { on = 1; next } /^[0-9a-f]+-[0-9a-f]+ / { on = 0 }
			on && $1 == "FilePmdMapped:" { s += $2 } END { print s + 0 }' "/proc/$pid/smaps")
		kill "$pid"
		wait "$pid" 2>/dev/null || true
		rm -f "$copy"
		printf '%-8s %12.1f %14.1f\n' "$state" "$(echo "$file * 1024 / 1000000" | bc -l)" "$(echo "$huge * 1024 / 1000000" | bc -l)" >&2
	done
done
