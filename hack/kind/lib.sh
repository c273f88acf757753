# shellcheck shell=bash
# Shared helpers for hack/kind/*.sh. Source it; do not run it.
set -euo pipefail

KIND_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$KIND_DIR/../.." && pwd)
# shellcheck source=../versions.env
source "$REPO/hack/versions.env"

case ":$PATH:" in *:/usr/local/go/bin:*) ;; *) [[ -x /usr/local/go/bin/go ]] && PATH="$PATH:/usr/local/go/bin" ;; esac
export PATH
GO=${GO:-go}

# Everything built here is cached outside the work tree, so a fresh clone (CI)
# on the same machine reuses it. Override with KIND_CACHE.
KIND_CACHE=${KIND_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/llmgw-kind}
KIND_CLUSTER_NAME=${KIND_CLUSTER_NAME:-llmgw}
# Dedicated kubeconfig for the cluster (never touches ~/.kube/config).
KIND_KUBECONFIG=${KIND_KUBECONFIG:-$REPO/bin/kind/kubeconfig}
# The docker runtime that drops CAP_SYS_RESOURCE (see runtime-wrapper/main.go).
KIND_RUNTIME_NAME=llmgw-runc
KIND_RUNTIME_PATH=/usr/local/lib/llmgw-kind/runtime-wrapper
K8S_BIN=$KIND_CACHE/k8s/$K8S_VERSION
# make envtest's binaries (hack/envtest.sh): kube-apiserver, kubectl and etcd
# built there are reused here rather than built twice (K8S_BUILD_REUSE).
ENVTEST_BIN=${LLMGW_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/llmgw}/envtest/$K8S_VERSION

log() { echo "[kind] $*" >&2; }
die() { echo "[kind] ERROR: $*" >&2; exit 1; }

now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1fs", b - a }'; }

# step LABEL CHECK_FN DO_FN [ARGS...]: prints what it does and how long it
# took; skipped when CHECK_FN ARGS... succeeds (its output already exists).
step() {
  local label=$1 check=$2 do=$3 t0
  shift 3
  t0=$(now)
  if "$check" "$@"; then
    log "step $label: cached, skipped"
    return 0
  fi
  log "step $label: building ..."
  "$do" "$@"
  "$check" "$@" || die "step $label: finished but its output is missing"
  log "step $label: done in $(since "$t0")"
}

# key ARGS...: a short content hash of strings and files (files by content).
key() {
  local a
  for a in "$@"; do
    if [[ -f $a ]]; then printf '%s\n' "${a#"$REPO"/}"; cat "$a"; else printf '%s\n' "$a"; fi
  done | sha256sum | cut -c1-12
}

# dbuild ARGS...: docker build with the classic builder (these machines have no
# buildx); its output is shown only when the build fails.
dbuild() {
  local out rc=0
  out=$(DOCKER_BUILDKIT=0 docker build "$@" 2>&1) || rc=$?
  ((rc == 0)) || { printf '%s\n' "$out" | tail -60 >&2; log "docker build $* failed (exit $rc)"; }
  return $rc
}
docker_has() { docker image inspect "$1" >/dev/null 2>&1; }
# image_key IMAGE: the llmgw.kind.key label of a local image (empty if absent).
image_key() { docker image inspect -f '{{index .Config.Labels "llmgw.kind.key"}}' "$1" 2>/dev/null || true; }

# --- the two paths (README "Two paths") ---------------------------------------
# KIND_MODE: auto (default) detects, offline/online force a path. The decision
# is hack/kind/mode (Go); KIND_RESOLVED_MODE holds its outcome in this process
# and the scripts it starts.
KIND_MODE=${KIND_MODE:-auto}

# mode_tool ARGS...: hack/kind/mode, built once per source content (static,
# so that it can also be the privileged probe's container entrypoint).
mode_tool() {
  local src=() f bin
  for f in "$KIND_DIR"/mode/*.go; do [[ $f == *_test.go ]] || src+=("$f"); done
  # cksum, not key(): no sha256sum on every machine the online path runs on
  bin=$KIND_CACHE/mode/$({ cat "${src[@]}"; echo "$KIND_VERSION $("$GO" env GOVERSION)"; } | cksum | awk '{print $1}')/kind-mode
  if [[ ! -x $bin ]]; then
    mkdir -p "$(dirname "$bin")"
    (cd "$REPO" && CGO_ENABLED=0 "$GO" build -trimpath -o "$bin.tmp" ./hack/kind/mode) && mv "$bin.tmp" "$bin" ||
      die "could not build hack/kind/mode"
  fi
  (cd "$REPO" && KIND_CACHE=$KIND_CACHE "$bin" "$@")
}

# decide_mode [ARGS...]: probes (registry, privileged container; each bounded
# by a time limit), prints the decision and the list of changes the chosen path
# makes, and sets KIND_RESOLVED_MODE (offline|online) and KIND_UPSTREAM_IMAGE
# (the online path's node image, or KIND_NODE_IMAGE).
decide_mode() {
  local out
  out=$(mode_tool -mode "$KIND_MODE" -node-image "${KIND_NODE_IMAGE:-}" "$@") || die "hack/kind/mode failed (KIND_MODE=$KIND_MODE)"
  read -r KIND_RESOLVED_MODE KIND_UPSTREAM_IMAGE <<<"$out"
  [[ $KIND_RESOLVED_MODE == offline || $KIND_RESOLVED_MODE == online ]] || die "hack/kind/mode printed \"$out\""
  export KIND_RESOLVED_MODE
}

# cluster_path: the path an existing cluster was created by (its node
# container's runtime), for scripts that do not decide (smoke, down): offline
# when there is no node container.
cluster_path() {
  local rt
  rt=$(docker inspect -f '{{.HostConfig.Runtime}}' "$NODE_CONTAINER" 2>/dev/null || true)
  if [[ -n $rt && $rt != "$KIND_RUNTIME_NAME" ]]; then echo online; else echo offline; fi
}

# kind_cmd ARGS...: kind from go.mod's tool directive. On the offline path the
# docker shim goes first on PATH for kind only (it forces the llmgw-runc
# runtime); on the online path kind runs the real docker, unchanged.
kind_cmd() { kind_timeout "" "$@"; }
# kind_timeout SECONDS ARGS...: kind_cmd bounded by `timeout SECONDS` ("" = none).
kind_timeout() {
  local t=$1 pre=() tc
  shift
  tc=$(timeout_cmd)
  [[ -z $t || $tc == env ]] || pre=("$tc" "$t")
  [[ -n ${KIND_RESOLVED_MODE:-} ]] || KIND_RESOLVED_MODE=$(cluster_path)
  # `kind build node-image` happens on the offline path only (image.sh).
  if [[ $KIND_RESOLVED_MODE == online && ${1:-} != build ]]; then
    (cd "$REPO" && ${pre[@]+"${pre[@]}"} "$GO" tool kind "$@")
  else
    (cd "$REPO" && PATH="$KIND_DIR/shim:$PATH" LLMGW_KIND_RUNTIME=$KIND_RUNTIME_NAME ${pre[@]+"${pre[@]}"} "$GO" tool kind "$@")
  fi
}

# kubectl built from source with hack/k8s/build.sh (no host kubectl needed).
KUBECTL=$K8S_BIN/kubectl
ensure_kubectl() {
  [[ -x $KUBECTL ]] && return 0
  log "building kubectl $K8S_VERSION (hack/k8s/build.sh)"
  K8S_BUILD_MODDIR=$KIND_CACHE/k8s/.mod K8S_BUILD_REUSE=$ENVTEST_BIN "$REPO/hack/k8s/build.sh" "$K8S_BIN" kubectl >&2
}
kc() { KUBECONFIG=$KIND_KUBECONFIG "$KUBECTL" "$@"; }

NODE_CONTAINER=$KIND_CLUSTER_NAME-control-plane
# timeout_cmd: GNU timeout (gtimeout on macOS with coreutils); "env" (no limit) without one.
timeout_cmd() { command -v timeout || command -v gtimeout || echo env; }
engine_answers() {
  local t
  t=$(timeout_cmd)
  if [[ $t == env ]]; then docker info >/dev/null 2>&1; else "$t" 20 docker info >/dev/null 2>&1; fi
}
cluster_exists() { kind_cmd get clusters 2>/dev/null | grep -qx "$KIND_CLUSTER_NAME"; }

# ready_summary: one line of what is Ready, e.g. "node Ready, kube-system 7/8, local-path-storage 0/1".
ready_summary() {
  local node ns counts=()
  node=$(kc get nodes --no-headers --request-timeout=5s 2>/dev/null | awk '{print $2; exit}')
  for ns in kube-system local-path-storage; do
    counts+=("$ns $(kc -n "$ns" get pods --no-headers --request-timeout=5s 2>/dev/null |
      awk '{split($2, a, "/"); n++; if ($3 == "Running" && a[1] == a[2]) r++} END {printf "%d/%d", r, n}')")
  done
  echo "node ${node:-unknown}, ${counts[0]} pods Ready, ${counts[1]}"
}

# wait_system_ready SECONDS: the node and every pod in kube-system and
# local-path-storage Ready. Returns 1 on time-out. Prints what is Ready every
# 15 seconds while it waits.
wait_system_ready() {
  local deadline=$((SECONDS + $1)) start=$SECONDS next=$((SECONDS + 15)) ns
  while ((SECONDS < deadline)); do
    if ((SECONDS >= next)); then
      log "  waiting for Ready ($((SECONDS - start))s of $1s): $(ready_summary)"
      next=$((SECONDS + 15))
    fi
    if kc wait --for=condition=Ready node --all --timeout=5s >/dev/null 2>&1; then
      local ok=1
      for ns in kube-system local-path-storage; do
        # `kubectl wait --all` fails while a namespace has no pods yet: that is "not ready".
        kc -n "$ns" get pods -o name 2>/dev/null | grep -q . || { ok=0; break; }
        kc -n "$ns" wait --for=condition=Ready pod --all --timeout=5s >/dev/null 2>&1 || { ok=0; break; }
      done
      ((ok)) && return 0
    fi
    sleep 2
  done
  return 1
}

# diagnostics: `kind export logs` of the cluster into
# $KIND_LOGS_DIR/<cluster>-<time> (kubelet, containerd and the node's journal,
# every pod's and container's log, docker inspect of the node), then a short
# tail of the files that usually say what went wrong.
KIND_LOGS_DIR=${KIND_LOGS_DIR:-$REPO/bin/kind/logs}
diagnostics() {
  local dir node f n=0 t0
  t0=$(now)
  dir=$KIND_LOGS_DIR/$KIND_CLUSTER_NAME-$(date +%Y%m%d-%H%M%S)
  node=$dir/$NODE_CONTAINER
  mkdir -p "$KIND_LOGS_DIR"
  log "---- diagnostics for cluster $KIND_CLUSTER_NAME: kind export logs -> $dir ----"
  if ! kind_timeout 180 export logs --name "$KIND_CLUSTER_NAME" "$dir" >/dev/null 2>"$dir.err"; then
    log "kind export logs failed ($(tail -1 "$dir.err" 2>/dev/null)); the node container's own log instead:"
    docker logs --tail 30 "$NODE_CONTAINER" >&2 2>&1 || true
  fi
  [[ -s $dir.err ]] || rm -f "$dir.err"
  if [[ -d $dir ]]; then
    log "logs of cluster $KIND_CLUSTER_NAME are in $dir ($(find "$dir" -type f | wc -l) files, $(since "$t0"))"
    for f in kubelet.log:20 containerd.log:10; do
      [[ -s $node/${f%%:*} ]] || continue
      log "-- tail of $node/${f%%:*}"
      tail -n "${f##*:}" "$node/${f%%:*}" >&2 || true
    done
  fi
  # pods not Running and Ready, as ns_pod_ prefixes of their log directories;
  # "" (every pod) when the API server does not answer
  local bad=("") pods
  if [[ -x $KUBECTL && -s $KIND_KUBECONFIG ]] && pods=$(kc get pods -A -o wide --request-timeout=10s 2>/dev/null); then
    log "-- pods"
    printf '%s\n' "$pods" >&2
    mapfile -t bad < <(awk 'NR > 1 {split($3, a, "/"); if ($4 != "Running" || a[1] != a[2]) print $1 "_" $2 "_"}' <<<"$pods")
    log "-- latest events"
    kc get events -A --sort-by=.lastTimestamp --request-timeout=10s 2>&1 | tail -10 >&2 || true
  else
    log "-- pods: no answer from the API server (or no kubeconfig yet)"
  fi
  if [[ -d $node/pods ]]; then
    if ((${#bad[@]} == 0)); then
      log "-- every pod is Running and Ready: no container logs shown (they are in $node/pods)"
    fi
    # the newest log of each container of a pod that is not Ready, 5 lines each, at most 8 containers
    while read -r f; do
      ((n++ < 8)) || break
      log "-- ${f#"$node/pods/"}"
      tail -n 5 "$f" >&2 || true
    done < <(for p in ${bad[@]+"${bad[@]}"}; do
      for c in "$node/pods/$p"*/*/; do [[ -d $c ]] && ls -1t "$c"*.log 2>/dev/null | head -1; done
    done)
  fi
  if [[ -d $dir ]]; then log "---- end of diagnostics (all of it: $dir) ----"; else log "---- end of diagnostics ----"; fi
}

# progress KEY TEXT: "[kind] KEY step N (+Ns): TEXT", N counting up from 1 and
# the seconds since $T0 (set by the script at its start).
progress() {
  _PROGRESS_STEP=$((${_PROGRESS_STEP:-0} + 1))
  log "$1 step $_PROGRESS_STEP (+$(since "${T0:-$(now)}")): ${*:2}"
}

# progress_run LABEL CMD...: runs CMD and, while it runs, prints
# "LABEL: still running, Ns" every $KIND_PROGRESS_EVERY seconds (30), then
# "LABEL: exit RC after Ns". CMD's stdout and stderr pass through.
progress_run() {
  local label=$1 t0 rc=0 pid hb every=${KIND_PROGRESS_EVERY:-30}
  shift
  t0=$(now)
  "$@" &
  pid=$!
  (
    n=0
    while kill -0 "$pid" 2>/dev/null; do
      sleep 1
      n=$((n + 1))
      ((n % every != 0)) || log "$label: still running, $(since "$t0")"
    done
  ) >&2 &
  hb=$!
  wait "$pid" || rc=$?
  kill "$hb" 2>/dev/null || true
  wait "$hb" 2>/dev/null || true
  log "$label: exit $rc after $(since "$t0")"
  return "$rc"
}

# Run as a script (kind.mk): bash hack/kind/lib.sh progress_run LABEL CMD...
if [[ ${BASH_SOURCE[0]} == "$0" ]]; then
  case ${1:-} in
    progress_run) shift && progress_run "$@" ;;
    *) die "usage: bash hack/kind/lib.sh progress_run LABEL CMD... (otherwise: source it)" ;;
  esac
fi
