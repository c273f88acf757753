#!/usr/bin/env bash
# Builds the envtest control plane (kube-apiserver, etcd, kubectl) from Go
# modules into $LLMGW_CACHE/envtest/<K8S_VERSION>/ (default ~/.cache/llmgw, outside
# the clone, so a second clone on the same machine skips the build) and prints that directory on stdout, the
# value for KUBEBUILDER_ASSETS:
#
#   export KUBEBUILDER_ASSETS=$(hack/envtest.sh)
#
# Build progress goes to stderr; a second run only checks the cached binaries.
set -euo pipefail
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
source "$REPO/hack/versions.env"
CACHE=${LLMGW_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/llmgw}
OUT=${ENVTEST_ASSETS:-$CACHE/envtest/$K8S_VERSION}
# The kind node image build (hack/kind/image.sh) makes the same three binaries
# from the same recipe: when it ran first, they are reused from its cache.
KIND_CACHE=${KIND_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/llmgw-kind}
K8S_BUILD_REUSE="$KIND_CACHE/k8s/$K8S_VERSION $KIND_CACHE/etcd/$ETCD_VERSION" \
  K8S_BUILD_MODDIR=${K8S_BUILD_MODDIR:-$CACHE/envtest/.mod} "$REPO/hack/k8s/build.sh" "$OUT" etcd kube-apiserver kubectl >&2
echo "$OUT"
