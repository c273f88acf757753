#!/usr/bin/env bash
# make kind-down: deletes the cluster $KIND_CLUSTER_NAME and, when nothing else
# uses it, kind's docker network. Images and build caches are kept. Works for
# clusters of either path; it starts dockerd only on a machine the offline path
# set up (runtime llmgw-runc registered), never installs anything.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
T0=$(now)
progress kind-down "docker engine"
if ! engine_answers; then
  if command -v dockerd >/dev/null 2>&1 && grep -qs "\"$KIND_RUNTIME_NAME\"" "${DAEMON_JSON:-/etc/docker/daemon.json}"; then
    log "no docker engine answers; this machine was set up by the offline path: starting it (hack/kind/engine.sh)"
    "$KIND_DIR/engine.sh"
  else
    log "no docker engine answers: no cluster to delete"
    rm -f "$KIND_KUBECONFIG"
    exit 0
  fi
fi
if cluster_exists || docker inspect "$NODE_CONTAINER" >/dev/null 2>&1; then
  progress kind-down "deleting cluster $KIND_CLUSTER_NAME ($(cluster_path) path)"
  kind_cmd delete cluster --name "$KIND_CLUSTER_NAME" --kubeconfig "$KIND_KUBECONFIG"
else
  log "cluster $KIND_CLUSTER_NAME does not exist"
fi
if docker network inspect kind >/dev/null 2>&1; then
  progress kind-down "docker network kind"
  if [[ -z $(docker network inspect -f '{{range .Containers}}{{.Name}} {{end}}' kind) ]]; then
    docker network rm kind >/dev/null && log "removed docker network kind"
  else
    log "docker network kind is still used by other containers: kept"
  fi
fi
rm -f "$KIND_KUBECONFIG"
log "kind-down: done in $(since "$T0")"
