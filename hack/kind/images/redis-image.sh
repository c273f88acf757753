#!/usr/bin/env bash
# Builds the quota store's image (redis.Dockerfile: Debian's redis-server on
# an empty base) without a registry, and prints its reference on stdout:
#   llmgw-redis:<version of the Debian package>   e.g. llmgw-redis:7.0.15-1-deb12u10
# (the chart's and config/redis's default tag). The base is the debootstrap'ed
# Debian image the offline kind build made (llmgw-kind/debian:<suite>); on a
# machine without it (the online path) REDIS_BASE_IMAGE, default
# debian:<suite>-slim, which docker pulls. Cached: the image carries a hash of
# its inputs (label llmgw.kind.key) and is rebuilt only when they change.
# Logs go to stderr.
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
set -euo pipefail

REDIS_IMAGE_REPO=${REDIS_IMAGE_REPO:-llmgw-redis}
base=${REDIS_BASE_IMAGE:-}
if [[ -z $base ]]; then
  base=llmgw-kind/debian:$KIND_DEBIAN_SUITE
  docker_has "$base" || base=debian:$KIND_DEBIAN_SUITE-slim
fi
if ! docker_has "$base"; then
  log "quota store image: pulling $base (no local Debian image; make kind-image builds one offline)"
  docker pull "$base" >&2 || die "no base image $base"
fi
k=redis-$(key "$KIND_DIR/images/redis.Dockerfile" "$(docker image inspect -f '{{.Id}}' "$base")")
existing=$(docker image ls --filter "label=llmgw.kind.key=$k" --format '{{.Repository}}:{{.Tag}}' "$REDIS_IMAGE_REPO" |
  grep -v ':build-' | head -1 || true)
if [[ -n $existing ]]; then
  log "step quota store image: $existing (inputs $k) exists, skipped"
  echo "$existing"
  exit 0
fi
t=$(now)
log "step quota store image: redis-server from Debian on an empty base (FROM $base) ..."
tmp=$REDIS_IMAGE_REPO:build-${k#redis-}
dbuild --build-arg "DEBIAN_IMAGE=$base" --label "llmgw.kind.key=$k" --label "llmgw.image.repo=$REDIS_IMAGE_REPO" \
  -t "$tmp" -f "$KIND_DIR/images/redis.Dockerfile" "$KIND_DIR/images" >/dev/null || die "quota store image build failed"
# The tag is the Debian package inside: "5:7.0.15-1~deb12u10" -> 7.0.15-1-deb12u10.
c=$(docker create "$tmp")
deb=$(docker cp "$c:/etc/redis-debian-version" - | tar -xO)
docker rm "$c" >/dev/null
deb=${deb#*:}
image=$REDIS_IMAGE_REPO:${deb//\~/-}
docker tag "$tmp" "$image"
docker image rm "$tmp" >/dev/null
log "step quota store image: $image done in $(since "$t")"
old=$(docker image ls --filter "label=llmgw.image.repo=$REDIS_IMAGE_REPO" --format '{{.Repository}}:{{.Tag}}' | grep -vxF "$image" || true)
if [[ -n $old ]]; then
  log "removing superseded quota store images: $(echo $old)"
  # shellcheck disable=SC2086
  docker image rm $old >/dev/null 2>&1 || true
fi
echo "$image"
