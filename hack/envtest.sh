#!/usr/bin/env bash
# Builds the envtest control plane (kube-apiserver, etcd, kubectl) from Go
# modules into bin/k8s/<K8S_VERSION>/ and prints that directory on stdout, the
# value for KUBEBUILDER_ASSETS:
#
#   export KUBEBUILDER_ASSETS=$(hack/envtest.sh)
#
# Build progress goes to stderr; a second run only checks the cached binaries.
set -euo pipefail
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
source "$REPO/hack/versions.env"
OUT=${ENVTEST_ASSETS:-$REPO/bin/k8s/$K8S_VERSION}
"$REPO/hack/k8s/build.sh" "$OUT" etcd kube-apiserver kubectl >&2
echo "$OUT"
