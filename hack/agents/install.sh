#!/usr/bin/env bash
# Installs the real coding agents the agent tests drive — Claude Code
# (@anthropic-ai/claude-code) and Codex (@openai/codex), at the versions pinned
# in versions.env — and links them into bin/agents/ of the repository:
#
#   bin/agents/claude   the native Claude Code binary of this platform
#   bin/agents/codex    Codex's launcher (node), which runs its native binary
#
# Each package version is installed once into a cache shared by work trees,
# ${LLMGW_CACHE:-$HOME/.cache/llmgw}/agents/<pkg>@<version>, from the npm
# registry only: install scripts are not run (Claude Code's postinstall only
# copies the native binary of the platform package, which the link below
# points at directly), so nothing else is downloaded. A second run finds the
# cache and only refreshes the links. Needs node and npm.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
# shellcheck source=versions.env
source "$here/versions.env"
cache=${LLMGW_CACHE:-$HOME/.cache/llmgw}/agents
bin=$root/bin/agents

log() { echo "[agents] $*" >&2; }
die() { log "error: $*"; exit 1; }

# A fresh CI machine may lack npm (Node.js) and strace (the test checks with
# it that the agents connect to loopback only): Debian's packages, when this
# runs as root with apt-get; otherwise say what is missing.
missing=()
command -v npm >/dev/null || missing+=(nodejs npm)
command -v strace >/dev/null || missing+=(strace)
if ((${#missing[@]})) && [[ $(id -u) == 0 ]] && command -v apt-get >/dev/null; then
	log "installing Debian packages: ${missing[*]}"
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null ||
		{ apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null; }
fi
command -v npm >/dev/null || die "npm is required (apt-get install nodejs npm, or a Node.js install)"

# platform is the suffix of the native packages of both agents for this machine.
platform() {
	local os arch
	case "$(uname -s)" in
	Linux) os=linux ;;
	Darwin) os=darwin ;;
	*) die "unsupported OS $(uname -s)" ;;
	esac
	case "$(uname -m)" in
	x86_64 | amd64) arch=x64 ;;
	aarch64 | arm64) arch=arm64 ;;
	*) die "unsupported CPU $(uname -m)" ;;
	esac
	echo "$os-$arch"
}

# install PKG VERSION: npm install into the cache, once. The install goes to a
# temporary directory renamed into place when complete, so an interrupted run
# leaves nothing that looks installed.
install_pkg() {
	local pkg=$1 version=$2 dir tmp
	dir=$cache/$pkg@$version
	if [[ -f $dir/.llmgw-complete ]]; then
		log "$pkg@$version: cached in $dir"
		return
	fi
	mkdir -p "$(dirname "$dir")"
	tmp=$(mktemp -d "$(dirname "$dir")/.install.XXXXXX")
	trap 'rm -rf "$tmp"' EXIT
	log "$pkg@$version: npm install into $dir"
	# --ignore-scripts: no install script runs, so no download besides the
	# registry's tarballs; the platform's native package arrives as an
	# optional dependency. The engines warning (Claude Code asks for
	# node >= 22 for its JS wrapper) does not concern the native binary.
	npm install --prefix "$tmp" --no-save --no-package-lock --no-audit --no-fund \
		--ignore-scripts --loglevel=error --omit=dev "$pkg@$version" >&2
	touch "$tmp/.llmgw-complete"
	rm -rf "$dir"
	mv "$tmp" "$dir"
	trap - EXIT
}

plat=$(platform)
install_pkg @anthropic-ai/claude-code "$CLAUDE_CODE_VERSION"
install_pkg @openai/codex "$CODEX_VERSION"

claude_dir=$cache/@anthropic-ai/claude-code@$CLAUDE_CODE_VERSION/node_modules/@anthropic-ai
claude=$claude_dir/claude-code-$plat/claude
if [[ $plat == linux-* ]] && ldd --version 2>&1 | grep -qi musl; then
	claude=$claude_dir/claude-code-$plat-musl/claude
fi
[[ -x $claude ]] || die "no native Claude Code binary at $claude (platform $plat)"
codex=$cache/@openai/codex@$CODEX_VERSION/node_modules/@openai/codex/bin/codex.js
[[ -f $codex ]] || die "no Codex launcher at $codex"

mkdir -p "$bin"
ln -sfn "$claude" "$bin/claude"
ln -sfn "$codex" "$bin/codex"

# The links must run and be the pinned versions.
got=$("$bin/claude" --version 2>&1) || die "bin/agents/claude --version failed: $got"
[[ $got == "$CLAUDE_CODE_VERSION "* ]] || die "bin/agents/claude is '$got', want $CLAUDE_CODE_VERSION"
got=$("$bin/codex" --version 2>&1) || die "bin/agents/codex --version failed: $got"
[[ $got == *" $CODEX_VERSION" ]] || die "bin/agents/codex is '$got', want $CODEX_VERSION"
log "bin/agents/claude -> Claude Code $CLAUDE_CODE_VERSION, bin/agents/codex -> Codex $CODEX_VERSION"
