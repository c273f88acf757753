#!/usr/bin/env bash
# Builds the llmgw image (Dockerfile at the repo root) from the host-built
# static binary, tagged llmgw:<appVersion>-<hash>, where <hash> is the first 12
# hex digits of the SHA-256 of everything the image contains (the binary, the
# CA bundle and the Dockerfile). The same source gives the same binary
# (-trimpath, no VCS stamp) and so the same tag: an unchanged tree rebuilds
# nothing and `make deploy` restarts nothing.
# Prints the image reference on stdout and writes it to bin/image/tag.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

version=$(app_version)
[[ -n $version ]] || die "no appVersion in $CHART_DIR/Chart.yaml"
mkdir -p "$IMAGE_DIR"

t=$(date +%s.%N)
log "step image/binary: CGO_ENABLED=0 go build -trimpath -ldflags='-s -w' -o bin/image/llmgw ."
(cd "$REPO" && CGO_ENABLED=0 GOOS=linux GOARCH=${GOARCH:-$("$GO" env GOARCH)} "$GO" build -trimpath -buildvcs=false -ldflags="-s -w" -o "$IMAGE_DIR/llmgw.tmp" .)
mv -f "$IMAGE_DIR/llmgw.tmp" "$IMAGE_DIR/llmgw"
log "step image/binary: done in $(since "$t") ($(du -h "$IMAGE_DIR/llmgw" | cut -f1))"

# TLS roots for https:// providers: the host's bundle (FROM scratch has none).
ca=${CA_BUNDLE:-/etc/ssl/certs/ca-certificates.crt}
if [[ -r $ca ]]; then
  cmp -s "$ca" "$IMAGE_DIR/ca-certificates.crt" || cp "$ca" "$IMAGE_DIR/ca-certificates.crt"
else
  log "WARNING: no CA bundle at $ca (set CA_BUNDLE): the image trusts no TLS server"
  : >"$IMAGE_DIR/ca-certificates.crt"
fi

sha256() { if command -v sha256sum >/dev/null; then sha256sum; else shasum -a 256; fi; }
hash=$(cat "$IMAGE_DIR/llmgw" "$IMAGE_DIR/ca-certificates.crt" "$REPO/Dockerfile" | sha256 | cut -c1-12)
image=$IMAGE_REPO:$version-$hash

t=$(date +%s.%N)
if docker image inspect "$image" >/dev/null 2>&1; then
  log "step image/docker: $image exists, skipped"
else
  log "step image/docker: docker build -t $image (FROM scratch, nothing pulled) ..."
  dbuild -t "$image" \
    --label org.opencontainers.image.title=llmgw \
    --label org.opencontainers.image.version="$version" \
    --label llmgw.image.repo="$IMAGE_REPO" \
    -f "$REPO/Dockerfile" "$REPO" >/dev/null || die "docker build failed"
  log "step image/docker: done in $(since "$t")"
  # Superseded builds of this repository (same label), except the new one.
  old=$(docker image ls --filter "label=llmgw.image.repo=$IMAGE_REPO" --format '{{.Repository}}:{{.Tag}}' |
    grep -vxF "$image" | grep "^$IMAGE_REPO:" || true)
  if [[ -n $old ]]; then
    log "removing superseded images: $(echo $old)"
    # shellcheck disable=SC2086
    docker image rm $old >/dev/null 2>&1 || true
  fi
fi
echo "$image" >"$IMAGE_TAG_FILE"
log "image: $image"
echo "$image"
