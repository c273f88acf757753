#!/usr/bin/env bash
# make kind-up: creates the single-node kind cluster $KIND_CLUSTER_NAME (llmgw)
# from the offline node image (or from $KIND_NODE_IMAGE when set) and waits
# until the node and all system pods are Ready. A healthy existing cluster is
# left alone; an unhealthy one is deleted and created again.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
T0=$(now)
"$KIND_DIR/engine.sh"
mkdir -p "$(dirname "$KIND_KUBECONFIG")"
CREATE_LOG=$KIND_CACHE/kind-create.log
mkdir -p "$KIND_CACHE"

healthy() {
  [[ $(docker inspect -f '{{.State.Running}}' "$NODE_CONTAINER" 2>/dev/null) == true ]] || return 1
  kind_cmd export kubeconfig --name "$KIND_CLUSTER_NAME" --kubeconfig "$KIND_KUBECONFIG" >/dev/null 2>&1 || return 1
  wait_system_ready "${1:-30}"
}

if cluster_exists; then
  ensure_kubectl
  if healthy 60; then
    log "cluster $KIND_CLUSTER_NAME is already up and healthy: nothing to do (KUBECONFIG=$KIND_KUBECONFIG)"
    exit 0
  fi
  log "cluster $KIND_CLUSTER_NAME exists but is not healthy: deleting it and creating it again"
  diagnostics
  "$KIND_DIR/down.sh"
fi

if [[ -n ${KIND_NODE_IMAGE:-} ]]; then
  IMAGE=$KIND_NODE_IMAGE
  log "KIND_NODE_IMAGE is set: using $IMAGE (no local image build)"
else
  IMAGE=$("$KIND_DIR/image.sh")
fi
ensure_kubectl

# Failures worth one more try: time-outs and races of a loaded 2-core machine.
TRANSIENT='could not find a log line|timed out waiting|context deadline exceeded|TLS handshake timeout|i/o timeout|connection refused|connection reset by peer|address already in use|network with name kind already exists|did not become Ready'

create_once() {
  local t0 rc=0
  t0=$(now)
  log "creating cluster $KIND_CLUSTER_NAME from $IMAGE (log: $CREATE_LOG)"
  kind_cmd create cluster --name "$KIND_CLUSTER_NAME" --image "$IMAGE" --config "$KIND_DIR/cluster.yaml" \
    --kubeconfig "$KIND_KUBECONFIG" --wait 180s --retain >"$CREATE_LOG" 2>&1 || rc=$?
  cat "$CREATE_LOG" >&2
  if ((rc != 0)); then
    log "kind create cluster failed (exit $rc) after $(since "$t0")"
    return 1
  fi
  log "kind create cluster done in $(since "$t0"); waiting for the node and all system pods to be Ready"
  if ! wait_system_ready 240; then
    echo "node or system pods did not become Ready within 240s" >>"$CREATE_LOG"
    log "node or system pods did not become Ready within 240s"
    return 1
  fi
}

if ! create_once; then
  reason=$(grep -oE "$TRANSIENT" "$CREATE_LOG" | head -1 || true)
  diagnostics
  if [[ -z $reason ]]; then
    "$KIND_DIR/down.sh" || true
    die "cluster $KIND_CLUSTER_NAME could not be created (not a known transient failure; see the log above)"
  fi
  log "known transient failure: \"$reason\"; deleting the cluster and retrying once"
  "$KIND_DIR/down.sh" || true
  if ! create_once; then
    diagnostics
    "$KIND_DIR/down.sh" || true
    die "cluster $KIND_CLUSTER_NAME could not be created on the second try either"
  fi
fi
kc get nodes -o wide >&2
kc get pods -A >&2
log "kind-up: cluster $KIND_CLUSTER_NAME ready in $(since "$T0")"
log "use: hack/kind/kubectl.sh get pods -A   (or KUBECONFIG=$KIND_KUBECONFIG kubectl ...)"
