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

# kind_cmd ARGS...: kind from go.mod's tool directive, with the docker shim
# first on PATH for kind only.
kind_cmd() {
  (cd "$REPO" && PATH="$KIND_DIR/shim:$PATH" LLMGW_KIND_RUNTIME=$KIND_RUNTIME_NAME "$GO" tool kind "$@")
}

# kubectl built from source with hack/k8s/build.sh (no host kubectl needed).
KUBECTL=$K8S_BIN/kubectl
ensure_kubectl() {
  [[ -x $KUBECTL ]] && return 0
  log "building kubectl $K8S_VERSION (hack/k8s/build.sh)"
  K8S_BUILD_MODDIR=$KIND_CACHE/k8s/.mod "$REPO/hack/k8s/build.sh" "$K8S_BIN" kubectl >&2
}
kc() { KUBECONFIG=$KIND_KUBECONFIG "$KUBECTL" "$@"; }

NODE_CONTAINER=$KIND_CLUSTER_NAME-control-plane
cluster_exists() { kind_cmd get clusters 2>/dev/null | grep -qx "$KIND_CLUSTER_NAME"; }

# wait_system_ready SECONDS: the node and every pod in kube-system and
# local-path-storage Ready. Returns 1 on time-out.
wait_system_ready() {
  local deadline=$((SECONDS + $1)) ns
  while ((SECONDS < deadline)); do
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

diagnostics() {
  log "---- diagnostics for cluster $KIND_CLUSTER_NAME ----"
  docker ps -a --filter "name=$NODE_CONTAINER" >&2 || true
  docker logs --tail 30 "$NODE_CONTAINER" >&2 2>&1 || true
  docker exec "$NODE_CONTAINER" journalctl -u kubelet --no-pager 2>/dev/null | tail -40 >&2 || true
  docker exec "$NODE_CONTAINER" journalctl -u containerd --no-pager 2>/dev/null | tail -20 >&2 || true
  docker exec "$NODE_CONTAINER" crictl ps -a >&2 2>&1 || true
  if [[ -x $KUBECTL && -s $KIND_KUBECONFIG ]]; then
    kc get nodes -o wide >&2 2>&1 || true
    kc get pods -A -o wide >&2 2>&1 || true
    kc get events -A --sort-by=.lastTimestamp 2>&1 | tail -25 >&2 || true
  fi
  log "---- end of diagnostics ----"
}
