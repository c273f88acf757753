#!/usr/bin/env bash
# Makes sure a docker engine runs on this machine with the llmgw-runc runtime
# registered, and that the host tools the image build needs are installed.
# Changes it makes to the machine (and nothing else):
#  - apt-get install docker.io debootstrap busybox-static (only when missing);
#  - starts dockerd in the background when none answers (log: /var/log/llmgw-dockerd.log);
#  - installs the runtime wrapper at /usr/local/lib/llmgw-kind/runtime-wrapper and
#    adds {"runtimes": {"llmgw-runc": {"path": ...}}} to /etc/docker/daemon.json,
#    then HUPs dockerd so it reloads (other keys of daemon.json are kept).
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

DAEMON_JSON=${DAEMON_JSON:-/etc/docker/daemon.json}
need_pkgs=()

have_host_pkgs() {
  need_pkgs=()
  command -v dockerd >/dev/null 2>&1 || need_pkgs+=(docker.io)
  command -v debootstrap >/dev/null 2>&1 || need_pkgs+=(debootstrap)
  dpkg -s busybox-static >/dev/null 2>&1 || need_pkgs+=(busybox-static)
  command -v gcc >/dev/null 2>&1 || need_pkgs+=(gcc libc6-dev)
  [[ ${#need_pkgs[@]} -eq 0 ]]
}
install_host_pkgs() {
  [[ $(id -u) -eq 0 ]] || die "need root to apt-get install ${need_pkgs[*]}"
  log "apt-get install ${need_pkgs[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need_pkgs[@]}" >/dev/null
}

wrapper_src=$KIND_DIR/runtime-wrapper/main.go
wrapper_bin() { echo "$KIND_CACHE/runtime-wrapper/$(key "$wrapper_src" "$($GO env GOVERSION)")"; }
have_wrapper() { [[ -x $KIND_RUNTIME_PATH ]] && cmp -s "$(wrapper_bin)" "$KIND_RUNTIME_PATH"; }
install_wrapper() {
  local bin
  bin=$(wrapper_bin)
  if [[ ! -x $bin ]]; then
    mkdir -p "$(dirname "$bin")"
    (cd "$REPO" && CGO_ENABLED=0 $GO build -trimpath -o "$bin.tmp" ./hack/kind/runtime-wrapper) && mv "$bin.tmp" "$bin"
  fi
  install -D -m 0755 "$bin" "$KIND_RUNTIME_PATH"
}

dockerd_pid() {
  local p
  p=$(cat /var/run/docker.pid 2>/dev/null || true)
  if [[ -n $p ]] && kill -0 "$p" 2>/dev/null; then echo "$p"; return; fi
  pgrep -x dockerd | head -1 || true
}
engine_up() { docker info >/dev/null 2>&1; }
has_runtime() { docker info --format '{{json .Runtimes}}' 2>/dev/null | grep -q "\"$KIND_RUNTIME_NAME\""; }

registered() { grep -q "\"$KIND_RUNTIME_NAME\"" "$DAEMON_JSON" 2>/dev/null && grep -qF "\"$KIND_RUNTIME_PATH\"" "$DAEMON_JSON"; }
register() {
  local rc=0
  # keep the machine's own daemon.json once, before our first change
  if [[ -e $DAEMON_JSON && ! -e $DAEMON_JSON.llmgw-backup ]]; then cp -a "$DAEMON_JSON" "$DAEMON_JSON.llmgw-backup"; fi
  "$KIND_RUNTIME_PATH" --llmgw-register "$DAEMON_JSON" "$KIND_RUNTIME_NAME" "$KIND_RUNTIME_PATH" || rc=$?
  [[ $rc -eq 0 || $rc -eq 3 ]] || die "could not update $DAEMON_JSON"
  log "registered runtime $KIND_RUNTIME_NAME in $DAEMON_JSON"
}

engine_ready() { engine_up && has_runtime; }
start_or_reload() {
  local pid i
  pid=$(dockerd_pid)
  if [[ -n $pid ]]; then
    log "reloading dockerd (pid $pid) with SIGHUP"
    kill -HUP "$pid"
  else
    log "starting dockerd in the background (log: /var/log/llmgw-dockerd.log)"
    nohup setsid dockerd >>/var/log/llmgw-dockerd.log 2>&1 </dev/null &
  fi
  for i in $(seq 1 60); do
    engine_ready && return 0
    sleep 1
  done
  tail -20 /var/log/llmgw-dockerd.log >&2 || true
  die "docker engine did not come up with runtime $KIND_RUNTIME_NAME within 60s"
}

step "host packages (docker.io, debootstrap, busybox-static)" have_host_pkgs install_host_pkgs
step "runtime wrapper ($KIND_RUNTIME_PATH)" have_wrapper install_wrapper
step "register runtime $KIND_RUNTIME_NAME in $DAEMON_JSON" registered register
step "docker engine running with runtime $KIND_RUNTIME_NAME" engine_ready start_or_reload
