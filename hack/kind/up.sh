#!/usr/bin/env bash
# make kind-up: creates the single-node kind cluster $KIND_CLUSTER_NAME (llmgw)
# and waits until the node and all system pods are Ready. A healthy existing
# cluster is left alone; an unhealthy one is deleted and created again.
#
# It takes one of two paths (README "Two paths"), chosen by hack/kind/mode
# from KIND_MODE (auto|offline|online, default auto) and two probes:
#  - online: plain kind, upstream node image (kind's default for the pinned
#    Kubernetes minor, or $KIND_NODE_IMAGE); nothing on the machine changes;
#  - offline: engine.sh (apt packages, runtime wrapper, daemon.json, dockerd),
#    image.sh (the node image built from source, or $KIND_NODE_IMAGE), kind
#    through the docker shim. The list of changes is printed before any is made.
#
#   hack/kind/up.sh               the cluster
#   hack/kind/up.sh --image-only  make kind-image: only the node image (offline path)
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
T0=$(now)
IMAGE_ONLY=0
case ${1:-} in
  "") ;;
  --image-only) IMAGE_ONLY=1 ;;
  *) die "usage: $0 [--image-only]" ;;
esac
TARGET=kind-up
((IMAGE_ONLY == 0)) || TARGET=kind-image
mkdir -p "$(dirname "$KIND_KUBECONFIG")" "$KIND_CACHE"
CREATE_LOG=$KIND_CACHE/kind-create.log

healthy() {
  [[ $(docker inspect -f '{{.State.Running}}' "$NODE_CONTAINER" 2>/dev/null) == true ]] || return 1
  kind_cmd export kubeconfig --name "$KIND_CLUSTER_NAME" --kubeconfig "$KIND_KUBECONFIG" >/dev/null 2>&1 || return 1
  wait_system_ready "${1:-30}"
}

# contain_cluster_traffic keeps the cluster's own addresses inside the node:
# an "unreachable" route for the pod and Service ranges means a connection to
# a Service IP that kube-proxy has not (yet, or any more) translated, or to a
# deleted pod's IP, fails at once (a connection error the gateway falls back
# on) instead of leaving through the node's default route to whatever
# answers beyond it. Per-pod /32 routes and kube-proxy's DNAT still win.
contain_cluster_traffic() {
  local cidr
  for cidr in "${KIND_POD_SUBNET:-10.244.0.0/16}" "${KIND_SERVICE_SUBNET:-10.96.0.0/16}"; do
    docker exec "$NODE_CONTAINER" ip route replace unreachable "$cidr" ||
      die "could not add the unreachable route for $cidr in $NODE_CONTAINER"
  done
  log "node $NODE_CONTAINER: pod and Service ranges routed unreachable beyond their own routes"
}

# existing_cluster: exits 0 when the cluster is there and healthy; deletes an
# unhealthy one (after diagnostics).
CHECKED_EXISTING=0
existing_cluster() {
  CHECKED_EXISTING=1
  cluster_exists || return 0
  progress "$TARGET" "cluster $KIND_CLUSTER_NAME exists ($(cluster_path) path): checking that it is healthy"
  ensure_kubectl
  if healthy 60; then
    contain_cluster_traffic
    log "cluster $KIND_CLUSTER_NAME is already up and healthy: nothing to do (KUBECONFIG=$KIND_KUBECONFIG, $(since "$T0"))"
    exit 0
  fi
  log "cluster $KIND_CLUSTER_NAME exists but is not healthy: deleting it and creating it again"
  diagnostics
  "$KIND_DIR/down.sh"
}

# A running engine shows an existing cluster before anything is probed or changed.
if ((IMAGE_ONLY == 0)) && engine_answers; then existing_cluster; fi

if ((IMAGE_ONLY)) && [[ -n ${KIND_NODE_IMAGE:-} ]]; then
  log "kind-image: KIND_NODE_IMAGE=$KIND_NODE_IMAGE: no local node image build"
  exit 0
fi
progress "$TARGET" "choosing the path (KIND_MODE=$KIND_MODE): hack/kind/mode"
decide_mode

if [[ $KIND_RESOLVED_MODE == offline ]]; then
  progress "$TARGET" "offline path: docker engine and runtime $KIND_RUNTIME_NAME (hack/kind/engine.sh)"
  "$KIND_DIR/engine.sh"
  ((IMAGE_ONLY || CHECKED_EXISTING)) || existing_cluster
  if [[ -n ${KIND_NODE_IMAGE:-} ]]; then
    IMAGE=$KIND_NODE_IMAGE
    log "KIND_NODE_IMAGE is set: using $IMAGE (no local image build)"
  else
    progress "$TARGET" "offline path: node image (hack/kind/image.sh; cached steps are skipped)"
    IMAGE=$(progress_run "$TARGET: hack/kind/image.sh" "$KIND_DIR/image.sh")
  fi
else
  engine_answers ||
    die "online path: no docker engine answers; start Docker (or podman's docker-compatible socket), or take the offline path with KIND_MODE=offline"
  ((IMAGE_ONLY || CHECKED_EXISTING)) || existing_cluster
  IMAGE=$KIND_UPSTREAM_IMAGE
  if ((IMAGE_ONLY)); then
    log "kind-image: online path: nothing to build (kind-up uses $IMAGE)"
    exit 0
  fi
fi
if ((IMAGE_ONLY)); then
  log "kind-image: node image $IMAGE ($KIND_RESOLVED_MODE path) ready after $(since "$T0")"
  exit 0
fi

progress "$TARGET" "kubectl $K8S_VERSION (built from source once, cached)"
ensure_kubectl

# Failures worth one more try: time-outs and races of a loaded 2-core machine.
TRANSIENT='could not find a log line|timed out waiting|context deadline exceeded|TLS handshake timeout|i/o timeout|connection refused|connection reset by peer|address already in use|network with name kind already exists|did not become Ready'

create_once() {
  local t0 rc=0
  t0=$(now)
  progress "$TARGET" "creating cluster $KIND_CLUSTER_NAME from $IMAGE ($KIND_RESOLVED_MODE path; log: $CREATE_LOG)"
  kind_cmd create cluster --name "$KIND_CLUSTER_NAME" --image "$IMAGE" --config "$KIND_DIR/cluster.yaml" \
    --kubeconfig "$KIND_KUBECONFIG" --wait 180s --retain 2>&1 | tee "$CREATE_LOG" >&2 || rc=$?
  if ((rc != 0)); then
    log "kind create cluster failed (exit $rc) after $(since "$t0")"
    return 1
  fi
  progress "$TARGET" "kind create cluster done in $(since "$t0"); waiting for the node and all system pods to be Ready (up to 240s)"
  if ! wait_system_ready 240; then
    echo "node or system pods did not become Ready within 240s" >>"$CREATE_LOG"
    log "node or system pods did not become Ready within 240s: $(ready_summary)"
    return 1
  fi
}

if ! create_once; then
  reason=$(grep -oE "$TRANSIENT" "$CREATE_LOG" | head -1 || true)
  diagnostics
  if [[ -z $reason ]]; then
    "$KIND_DIR/down.sh" || true
    die "cluster $KIND_CLUSTER_NAME could not be created (not a known transient failure; see the log and diagnostics above)"
  fi
  log "known transient failure: \"$reason\"; deleting the cluster and retrying once"
  "$KIND_DIR/down.sh" || true
  if ! create_once; then
    diagnostics
    "$KIND_DIR/down.sh" || true
    die "cluster $KIND_CLUSTER_NAME could not be created on the second try either"
  fi
fi
contain_cluster_traffic
kc get nodes -o wide >&2
kc get pods -A >&2
log "kind-up: cluster $KIND_CLUSTER_NAME ready ($KIND_RESOLVED_MODE path) in $(since "$T0")"
log "use: hack/kind/kubectl.sh get pods -A   (or KUBECONFIG=$KIND_KUBECONFIG kubectl ...)"
