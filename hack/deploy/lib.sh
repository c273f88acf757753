# shellcheck shell=bash
# Shared helpers for hack/deploy/*.sh. Source it; do not run it.
# Reuses hack/kind/lib.sh: kind from go.mod (kind_cmd), kubectl built from
# source (ensure_kubectl, kc) and the cluster's kubeconfig bin/kind/kubeconfig.
DEPLOY_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=../kind/lib.sh
source "$DEPLOY_DIR/../kind/lib.sh"
set -euo pipefail

DEPLOY_T0=${DEPLOY_T0:-$(date +%s.%N)}
export DEPLOY_T0
# log MESSAGE: "[deploy +12.3s] MESSAGE" (seconds since the command started).
log() { echo "[deploy +$(awk -v a="$DEPLOY_T0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1fs", b - a }')] $*" >&2; }
die() { log "ERROR: $*"; exit 1; }

# Image name and version. The version is the chart's appVersion (one place);
# the tag adds a hash of the image content: llmgw:<appVersion>-<12 hex>.
IMAGE_REPO=${IMAGE_REPO:-llmgw}
CHART_DIR=$REPO/charts/llmgw
app_version() { sed -n 's/^appVersion: *"\{0,1\}\([^"]*\)"\{0,1\} *$/\1/p' "$CHART_DIR/Chart.yaml"; }
IMAGE_DIR=$REPO/bin/image
# The tag `make image` built last, for `make deploy` and `make image-tag`.
IMAGE_TAG_FILE=$IMAGE_DIR/tag

DEPLOY_NAMESPACE=${DEPLOY_NAMESPACE:-llmgw-system}
