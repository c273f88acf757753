# rig.sh, sourced by the hack/bench scripts that run `llmgw gateway` from a
# snapshot in front of one mock: the helpers and the setup they share.
# Needs $work (a scratch directory under bin/) and the pids array; after
# start_alpha_rig CHUNKS: mock_port, the snapshot $work/snapshot.json (alias
# chat-alpha) and key, a gateway key with limits too high to trigger.
# start_rig FLAVOR CHUNKS does the same in front of a mock of FLAVOR (alpha:
# OpenAI protocol, beta: Anthropic style); the alias keeps its name, so the
# gateway's requests are the same bytes either way.

free_port() { python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])'; }
wait_up() { for _ in $(seq 600); do curl -sf -o /dev/null "$1" && return 0; sleep 0.1; done; echo "not up: $1" >&2; return 1; }

start_alpha_rig() { start_rig alpha "$1"; }

start_rig() {
	local protocol=openai
	[[ $1 == beta ]] && protocol=anthropic
	CGO_ENABLED=0 go build -o "$work/client" ./hack/bench/abclient
	mock_port=$(free_port)
	bin/llmgw mockprovider --flavor "$1" --addr "127.0.0.1:$mock_port" --default-chunks "$2" --log-level warn >"$work/mock.log" 2>&1 &
	pids+=($!)
	wait_up "http://127.0.0.1:$mock_port/healthz"
	cat >"$work/snapshot.json" <<JSON
{"providers":[{"name":"$1","protocol":"$protocol","baseURL":"http://127.0.0.1:$mock_port"}],
 "aliases":[{"name":"chat-alpha","primary":{"provider":"$1","model":"$1-large"},"maxFallbacks":0}]}
JSON
	bin/llmgw keys create --id bench --models chat-alpha --rpm 100000000 --burst 1000000 \
		--into "$work/snapshot.json" --key-out "$work/key" 2>/dev/null
	key=$(cat "$work/key")
}

# start_gateway VARIANT [PREFIX...] starts `llmgw gateway` on $port and
# $mport (the caller picks them) from the rig's snapshot, on a fresh ledger
# in $work, with no per-address limit; VARIANT is BINARY[:FLAGS]. PREFIX
# runs it under another command (valgrind). Sets pid; its output goes to
# $work/target.log.
start_gateway() {
	local v=$1 bin flags=""
	shift
	bin=${v%%:*}
	[[ $v == *:* ]] && flags=${v#*:}
	rm -f "$work"/usage.db*
	# shellcheck disable=SC2086 # flags are words
	"$@" "$bin" gateway --snapshot "$work/snapshot.json" --db "$work/usage.db" --addr "127.0.0.1:$port" \
		--mgmt-addr "127.0.0.1:$mport" --ip-rpm 0 $flags >"$work/target.log" 2>&1 &
	pid=$!
}
