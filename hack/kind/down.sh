#!/usr/bin/env bash
# make kind-down: deletes the cluster $KIND_CLUSTER_NAME and, when nothing else
# uses it, kind's docker network. Images and build caches are kept.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
T0=$(now)
if ! docker info >/dev/null 2>&1; then
  if ! command -v dockerd >/dev/null 2>&1; then
    log "no docker engine on this machine: no cluster to delete"
    exit 0
  fi
  "$KIND_DIR/engine.sh"
fi
if cluster_exists || docker inspect "$NODE_CONTAINER" >/dev/null 2>&1; then
  kind_cmd delete cluster --name "$KIND_CLUSTER_NAME" --kubeconfig "$KIND_KUBECONFIG"
else
  log "cluster $KIND_CLUSTER_NAME does not exist"
fi
if docker network inspect kind >/dev/null 2>&1; then
  if [[ -z $(docker network inspect -f '{{range .Containers}}{{.Name}} {{end}}' kind) ]]; then
    docker network rm kind >/dev/null && log "removed docker network kind"
  else
    log "docker network kind is still used by other containers: kept"
  fi
fi
rm -f "$KIND_KUBECONFIG"
log "kind-down: done in $(since "$T0")"
