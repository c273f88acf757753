#!/usr/bin/env bash
# kubectl (built from source, cached) against the kind cluster's kubeconfig:
#   hack/kind/kubectl.sh get pods -A
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
ensure_kubectl
exec env KUBECONFIG="$KIND_KUBECONFIG" "$KUBECTL" "$@"
