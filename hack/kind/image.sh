#!/usr/bin/env bash
# make kind-image: builds the kind node image offline, from Go modules and
# Debian packages only, every step cached by version/content (see README.md).
# Prints the node image reference on stdout when done (also written to
# $KIND_CACHE/node-image.ref). Logs go to stderr.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
export DOCKER_BUILDKIT=0 GOWORK=off
T_ALL=$(now)

"$KIND_DIR/engine.sh"

mkdir -p "$KIND_CACHE"
KIND_DEBIAN_MIRROR=${KIND_DEBIAN_MIRROR:-http://deb.debian.org/debian}
KIND_DEBIAN_SECURITY_MIRROR=${KIND_DEBIAN_SECURITY_MIRROR:-http://deb.debian.org/debian-security}

# --- module directories (read-only, from the Go module cache) ---------------
[[ $(cd "$REPO" && $GO list -m -f '{{.Version}}' sigs.k8s.io/kind) == "$KIND_VERSION" ]] ||
  die "go.mod's sigs.k8s.io/kind is not KIND_VERSION=$KIND_VERSION from hack/versions.env"
moddir() { (cd "$KIND_CACHE" && GOFLAGS=-mod=mod $GO mod download -json "$1" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p'); }
KIND_MOD=$(moddir "sigs.k8s.io/kind@$KIND_VERSION")
KUBE_MOD=$(moddir "k8s.io/kubernetes@$K8S_VERSION")
[[ -d $KIND_MOD/images/base/files && -f $KUBE_MOD/build/pause/linux/pause.c ]] || die "module cache lookup failed ($KIND_MOD, $KUBE_MOD)"

# Image names kind's node-image build and cluster manifests ask for, read from
# kind's own sources so that a kind bump needs no edit here.
src_const() { sed -n "s/^const $2 = \"\(.*\)\"$/\1/p" "$KIND_MOD/pkg/build/nodeimage/$1"; }
KINDNETD_IMAGE=$(src_const const_cni.go kindnetdImage)
LPP_IMAGE=$(src_const const_storage.go storageProvisionerImage)
LPP_HELPER_IMAGE=$(src_const const_storage.go storageHelperImage)
SANDBOX_IMAGE=$(sed -n 's/^[[:space:]]*sandbox_image = "\(.*\)"$/\1/p' "$KIND_MOD/images/base/files/etc/containerd/config.toml")
[[ -n $KINDNETD_IMAGE && -n $LPP_IMAGE && -n $LPP_HELPER_IMAGE && -n $SANDBOX_IMAGE ]] || die "could not read image names from $KIND_MOD"

# --- background: Debian rootfs -> base-os and proxy-os images (network/IO) --
DEBIAN_IMAGE=llmgw-kind/debian:$KIND_DEBIAN_SUITE
BASE_OS_IMAGE=llmgw-kind/base-os:$(key "$KIND_DEBIAN_SUITE" "$KIND_VERSION" "$KIND_DIR/images/base-os.Dockerfile")
PROXY_OS_IMAGE=llmgw-kind/proxy-os:$(key "$KIND_DEBIAN_SUITE" "$KIND_DIR/images/proxy-os.Dockerfile")

have_image() { docker_has "$1"; }
have_file() { [[ -s $1 ]]; }
build_debian() {
  local root=$KIND_CACHE/debootstrap.tmp
  rm -rf "$root"
  debootstrap --variant=minbase "$KIND_DEBIAN_SUITE" "$root" "$KIND_DEBIAN_MIRROR" >"$KIND_CACHE/debootstrap.log" 2>&1 ||
    { tail -30 "$KIND_CACHE/debootstrap.log" >&2; die "debootstrap failed (log: $KIND_CACHE/debootstrap.log)"; }
  cat >"$root/etc/apt/sources.list" <<SRC
deb $KIND_DEBIAN_MIRROR $KIND_DEBIAN_SUITE main
deb $KIND_DEBIAN_MIRROR $KIND_DEBIAN_SUITE-updates main
deb $KIND_DEBIAN_SECURITY_MIRROR $KIND_DEBIAN_SUITE-security main
SRC
  rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/*
  tar -C "$root" --numeric-owner -c . | docker import - "$1" >/dev/null
  rm -rf "$root"
}
build_base_os() {
  local ctx=$KIND_CACHE/ctx/base-os
  rm -rf "$ctx" && mkdir -p "$ctx"
  cp -r "$KIND_MOD/images/base/files" "$ctx/kind-files" && chmod -R u+w "$ctx/kind-files"
  cp "$KIND_DIR/images/base-os.Dockerfile" "$ctx/Dockerfile"
  dbuild --build-arg "DEBIAN_IMAGE=$DEBIAN_IMAGE" -t "$1" "$ctx"
}
build_proxy_os() {
  dbuild --build-arg "DEBIAN_IMAGE=$DEBIAN_IMAGE" -t "$1" -f "$KIND_DIR/images/proxy-os.Dockerfile" "$KIND_DIR/images"
}
os_images() {
  step "Debian $KIND_DEBIAN_SUITE rootfs (debootstrap minbase) -> $DEBIAN_IMAGE" have_image build_debian "$DEBIAN_IMAGE"
  step "node base OS packages -> $BASE_OS_IMAGE" have_image build_base_os "$BASE_OS_IMAGE"
  step "kube-proxy OS packages -> $PROXY_OS_IMAGE" have_image build_proxy_os "$PROXY_OS_IMAGE"
}
OS_LOG=$KIND_CACHE/os-images.log
os_images >"$OS_LOG" 2>&1 &
OS_PID=$!
trap 'kill "$OS_PID" 2>/dev/null || true' EXIT
log "Debian-based OS images: checked/built in the background (pid $OS_PID, log $OS_LOG)"

# --- Go binaries (CPU) --------------------------------------------------------
GO_OUT=$KIND_CACHE/go
# go_install DIR TAGS LDFLAGS PKG@VER...: static builds of pinned module versions.
have_bins() {
  local dir=$1 p
  shift 3
  for p in "$@"; do p=${p%@*}; [[ -x $dir/${p##*/} ]] || return 1; done
}
go_install() {
  local dir=$1 tags=$2 ldflags=$3
  shift 3
  rm -rf "$dir.tmp" && mkdir -p "$dir.tmp"
  (cd "$KIND_CACHE" && GOBIN="$dir.tmp" CGO_ENABLED=0 GOFLAGS=-buildvcs=false \
    $GO install -trimpath -tags "$tags" -ldflags "$ldflags" "$@")
  rm -rf "$dir" && mv "$dir.tmp" "$dir"
}
CTRD=github.com/containerd/containerd/v2
step "containerd $CONTAINERD_VERSION (containerd, ctr, containerd-shim-runc-v2)" have_bins go_install \
  "$GO_OUT/containerd-$CONTAINERD_VERSION" "no_aufs no_btrfs no_devmapper no_zfs" \
  "-s -w -X $CTRD/version.Version=$CONTAINERD_VERSION -X $CTRD/version.Revision=llmgw-offline" \
  "$CTRD/cmd/containerd@$CONTAINERD_VERSION" "$CTRD/cmd/ctr@$CONTAINERD_VERSION" "$CTRD/cmd/containerd-shim-runc-v2@$CONTAINERD_VERSION"
step "crictl $CRICTL_VERSION" have_bins go_install "$GO_OUT/crictl-$CRICTL_VERSION" "" \
  "-s -w -X sigs.k8s.io/cri-tools/pkg/version.Version=${CRICTL_VERSION#v}" "sigs.k8s.io/cri-tools/cmd/crictl@$CRICTL_VERSION"
# CoreDNS: our own main (hack/kind/_coredns, only the plugins kind needs) in a
# throwaway module that requires github.com/coredns/coredns@$COREDNS_VERSION.
COREDNS_DIR=$GO_OUT/coredns-$COREDNS_VERSION-$(key "$KIND_DIR/_coredns/main.go")
build_coredns() {
  local mod=$KIND_CACHE/gomod/coredns-$COREDNS_VERSION gomod
  rm -rf "$mod" && mkdir -p "$mod"
  gomod=$(moddir "github.com/coredns/coredns@$COREDNS_VERSION")/go.mod
  printf 'module llmgw.local/coredns-build\n\ngo %s\n\nrequire github.com/coredns/coredns %s\n' \
    "$(sed -n 's/^go //p' "$gomod")" "$COREDNS_VERSION" >"$mod/go.mod"
  cp "$KIND_DIR/_coredns/main.go" "$mod/main.go"
  (cd "$mod" && GOFLAGS=-mod=mod $GO mod tidy &&
    CGO_ENABLED=0 GOFLAGS=-buildvcs=false $GO build -trimpath -ldflags "-s -w -X github.com/coredns/coredns/coremain.GitCommit=llmgw-offline" -o "$1.tmp" .)
  mv "$1.tmp" "$1"
}
mkdir -p "$COREDNS_DIR"
step "coredns $COREDNS_VERSION (hack/kind/_coredns)" have_file build_coredns "$COREDNS_DIR/coredns"
step "local-path-provisioner $LOCAL_PATH_PROVISIONER_VERSION" have_bins go_install \
  "$GO_OUT/local-path-provisioner-$LOCAL_PATH_PROVISIONER_VERSION" "" "-s -w" \
  "github.com/rancher/local-path-provisioner@$LOCAL_PATH_PROVISIONER_VERSION"

CNI_DIR=$GO_OUT/cni-standin-$(key "$KIND_DIR/cni-standin/main.go")
build_cni() {
  (cd "$REPO" && CGO_ENABLED=0 $GO build -trimpath -ldflags "-s -w" -o "$1.tmp" ./hack/kind/cni-standin) && mv "$1.tmp" "$1"
}
step "CNI stand-in (hack/kind/cni-standin)" have_file build_cni "$CNI_DIR/cni-standin"

K8S_NAMES=(kube-apiserver kube-controller-manager kube-scheduler kube-proxy kubelet kubeadm kubectl)
ETCD_BIN=$KIND_CACHE/etcd/$ETCD_VERSION
K8S_BUILD=$REPO/hack/k8s/build.sh
[[ -x $K8S_BUILD ]] || die "$K8S_BUILD is missing (it builds the Kubernetes binaries)"
have_k8s() { local n; for n in "${K8S_NAMES[@]}"; do [[ -x $K8S_BIN/$n ]] || return 1; done; }
build_k8s() { K8S_BUILD_MODDIR=$KIND_CACHE/k8s/.mod K8S_BUILD_REUSE=$ENVTEST_BIN "$K8S_BUILD" "$K8S_BIN" "${K8S_NAMES[@]}"; }
step "Kubernetes $K8S_VERSION binaries (${K8S_NAMES[*]})" have_k8s build_k8s
have_etcd() { [[ -x $ETCD_BIN/etcd ]]; }
build_etcd() { K8S_BUILD_MODDIR=$KIND_CACHE/k8s/.mod K8S_BUILD_REUSE=$ENVTEST_BIN "$K8S_BUILD" "$ETCD_BIN" etcd; }
step "etcd $ETCD_VERSION" have_etcd build_etcd

# The pins must be what kubeadm will ask for.
want=$("$K8S_BIN/kubeadm" config images list --kubernetes-version "$K8S_VERSION" 2>/dev/null) || die "kubeadm config images list failed"
for img in "registry.k8s.io/etcd:$ETCD_IMAGE_TAG" "registry.k8s.io/coredns/coredns:$COREDNS_VERSION" "registry.k8s.io/pause:$PAUSE_VERSION"; do
  grep -qxF "$img" <<<"$want" || die "kubeadm $K8S_VERSION expects:"$'\n'"$want"$'\n'"but hack/versions.env pins $img"
done

PAUSE_DIR=$KIND_CACHE/pause/$PAUSE_VERSION-$(key "$KUBE_MOD/build/pause/linux/pause.c")
build_pause() {
  mkdir -p "$(dirname "$1")"
  gcc -Os -Wall -Werror -static -DVERSION="v$PAUSE_VERSION-llmgw" -o "$1.tmp" "$KUBE_MOD/build/pause/linux/pause.c"
  strip "$1.tmp" && mv "$1.tmp" "$1"
}
step "pause $PAUSE_VERSION (gcc -static build/pause/linux/pause.c)" have_file build_pause "$PAUSE_DIR/pause"

# --- wait for the OS images ---------------------------------------------------
log "waiting for the background OS images ..."
if ! wait "$OS_PID"; then cat "$OS_LOG" >&2; die "OS images failed"; fi
trap - EXIT
cat "$OS_LOG" >&2

# --- images -------------------------------------------------------------------
# Content hashes of every binary that goes into an image, computed once.
declare -A SUMS=()
while read -r h f; do SUMS[$f]=${h:0:16}; done < <(sha256sum "$GO_OUT/containerd-$CONTAINERD_VERSION/containerd" \
  "$GO_OUT/crictl-$CRICTL_VERSION/crictl" "${K8S_NAMES[@]/#/$K8S_BIN/}" "$ETCD_BIN/etcd" \
  "$COREDNS_DIR/coredns" "$PAUSE_DIR/pause" \
  "$GO_OUT/local-path-provisioner-$LOCAL_PATH_PROVISIONER_VERSION/local-path-provisioner" /bin/busybox "$CNI_DIR/cni-standin")
sum() { [[ -n ${SUMS[$1]:-} ]] || die "no content hash for $1"; echo "${SUMS[$1]}"; }
have_keyed() { [[ $(image_key "$1") == "$2" ]]; }

BASE_IMAGE=llmgw-kind/base:$(key "$BASE_OS_IMAGE" "$KIND_DIR/images/base.Dockerfile" "$CONTAINERD_VERSION" "$CRICTL_VERSION" \
  "$(sum "$GO_OUT/containerd-$CONTAINERD_VERSION/containerd")" "$(sum "$GO_OUT/crictl-$CRICTL_VERSION/crictl")")
build_base() {
  local ctx=$KIND_CACHE/ctx/base
  rm -rf "$ctx" && mkdir -p "$ctx/bin"
  cp "$GO_OUT/containerd-$CONTAINERD_VERSION"/* "$GO_OUT/crictl-$CRICTL_VERSION/crictl" "$ctx/bin/"
  cp "$KIND_DIR/images/base.Dockerfile" "$ctx/Dockerfile"
  dbuild --build-arg "BASE_OS=$BASE_OS_IMAGE" -t "$1" "$ctx"
}
step "node base image (containerd + crictl) -> $BASE_IMAGE" have_image build_base "$BASE_IMAGE"

# static_image TAG KEY ENTRYPOINT_JSON FILE:DEST...: a FROM-scratch image made
# with docker import (no shell, no build context); PATH is set for kubeadm's
# bare command names.
static_image() {
  local tag=$1 k=$2 entry=$3 root f
  shift 3
  root=$KIND_CACHE/ctx/rootfs.tmp
  rm -rf "$root" && mkdir -p "$root/tmp" "$root/etc" && chmod 1777 "$root/tmp"
  printf 'root:x:0:0:root:/root:/sbin/nologin\nnobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\n' >"$root/etc/passwd"
  printf 'root:x:0:\nnobody:x:65534:\n' >"$root/etc/group"
  for f in "$@"; do
    install -D -m 0755 "${f%%:*}" "$root/${f#*:}"
  done
  if [[ $tag == "$LPP_HELPER_IMAGE" ]]; then
    for f in $("$root/bin/busybox" --list); do [[ -e $root/bin/$f ]] || ln -s busybox "$root/bin/$f"; done
  fi
  local -a changes=(--change "ENV PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin" --change "LABEL llmgw.kind.key=$k")
  [[ -z $entry ]] || changes+=(--change "ENTRYPOINT $entry")
  tar -C "$root" --owner=0 --group=0 --numeric-owner -c . | docker import "${changes[@]}" - "$tag" >/dev/null
  rm -rf "$root"
}
img_step() { # img_step LABEL TAG KEY ENTRYPOINT FILE:DEST...
  local label=$1 tag=$2 k=$3
  shift 3
  step "$label -> $tag" have_keyed static_image "$tag" "$k" "$@"
}
for n in kube-apiserver kube-controller-manager kube-scheduler; do
  img_step "$n image (FROM scratch)" "registry.k8s.io/$n:$K8S_VERSION" "$(key static-v1 "$(sum "$K8S_BIN/$n")")" "" \
    "$K8S_BIN/$n:usr/local/bin/$n"
done
img_step "etcd image (FROM scratch)" "registry.k8s.io/etcd:$ETCD_IMAGE_TAG" "$(key static-v1 "$(sum "$ETCD_BIN/etcd")")" "" \
  "$ETCD_BIN/etcd:usr/local/bin/etcd"
img_step "CoreDNS image (FROM scratch)" "registry.k8s.io/coredns/coredns:$COREDNS_VERSION" \
  "$(key static-v1 "$(sum "$COREDNS_DIR/coredns")")" '["/coredns"]' \
  "$COREDNS_DIR/coredns:coredns"
img_step "pause image (FROM scratch)" "registry.k8s.io/pause:$PAUSE_VERSION" "$(key static-v1 "$(sum "$PAUSE_DIR/pause")")" '["/pause"]' \
  "$PAUSE_DIR/pause:pause"
docker tag "registry.k8s.io/pause:$PAUSE_VERSION" "$SANDBOX_IMAGE"
LPP_BIN=$GO_OUT/local-path-provisioner-$LOCAL_PATH_PROVISIONER_VERSION/local-path-provisioner
img_step "local-path-provisioner image (FROM scratch)" "$LPP_IMAGE" "$(key static-v1 "$(sum "$LPP_BIN")")" \
  '["/usr/local/bin/local-path-provisioner"]' "$LPP_BIN:usr/local/bin/local-path-provisioner"
img_step "local-path helper image (busybox-static)" "$LPP_HELPER_IMAGE" "$(key static-v1 "$(sum /bin/busybox)")" '["/bin/sh"]' \
  "/bin/busybox:bin/busybox"
img_step "CNI stand-in image (as kindnetd)" "$KINDNETD_IMAGE" "$(key static-v1 "$(sum "$CNI_DIR/cni-standin")")" '["/bin/kindnetd"]' \
  "$CNI_DIR/cni-standin:bin/kindnetd"

KP_IMAGE=registry.k8s.io/kube-proxy:$K8S_VERSION
KP_KEY=$(key "$PROXY_OS_IMAGE" "$KIND_DIR/images/kube-proxy.Dockerfile" "$KIND_DIR/images/kube-proxy-entry.sh" "$(sum "$K8S_BIN/kube-proxy")")
build_kube_proxy() {
  local ctx=$KIND_CACHE/ctx/kube-proxy
  rm -rf "$ctx" && mkdir -p "$ctx"
  cp "$K8S_BIN/kube-proxy" "$KIND_DIR/images/kube-proxy-entry.sh" "$ctx/"
  chmod 0755 "$ctx/kube-proxy-entry.sh"
  cp "$KIND_DIR/images/kube-proxy.Dockerfile" "$ctx/Dockerfile"
  dbuild --build-arg "PROXY_OS=$PROXY_OS_IMAGE" --label "llmgw.kind.key=$2" -t "$1" "$ctx"
}
step "kube-proxy image (Debian + iptables) -> $KP_IMAGE" have_keyed build_kube_proxy "$KP_IMAGE" "$KP_KEY"

# --- server tarball -------------------------------------------------------------
# kind reads kubernetes/version, server/bin/{kubeadm,kubelet,kubectl} and the
# four component image tarballs; containerd imports every image in each
# tarball, so the other images ride along in kube-proxy.tar.
EXTRA_IMAGES=("registry.k8s.io/etcd:$ETCD_IMAGE_TAG" "registry.k8s.io/coredns/coredns:$COREDNS_VERSION"
  "registry.k8s.io/pause:$PAUSE_VERSION" "$SANDBOX_IMAGE" "$LPP_IMAGE" "$LPP_HELPER_IMAGE" "$KINDNETD_IMAGE")
server_inputs=("$K8S_VERSION")
for n in kubeadm kubelet kubectl; do server_inputs+=("$(sum "$K8S_BIN/$n")"); done
for i in kube-apiserver kube-controller-manager kube-scheduler kube-proxy; do
  server_inputs+=("$(docker image inspect -f '{{.Id}}' "registry.k8s.io/$i:$K8S_VERSION")")
done
for i in "${EXTRA_IMAGES[@]}"; do server_inputs+=("$i=$(docker image inspect -f '{{.Id}}' "$i")"); done
SERVER_KEY=$(key "${server_inputs[@]}")
SERVER_TGZ=$KIND_CACHE/server/$SERVER_KEY/kubernetes-server-linux-amd64.tar.gz
build_server() {
  local st=$KIND_CACHE/server/$SERVER_KEY.tmp bin
  rm -rf "$st" && bin=$st/kubernetes/server/bin && mkdir -p "$bin"
  echo "$K8S_VERSION" >"$st/kubernetes/version"
  cp "$K8S_BIN/kubeadm" "$K8S_BIN/kubelet" "$K8S_BIN/kubectl" "$bin/"
  for i in kube-apiserver kube-controller-manager kube-scheduler; do
    docker save -o "$bin/$i.tar" "registry.k8s.io/$i:$K8S_VERSION"
  done
  docker save -o "$bin/kube-proxy.tar" "$KP_IMAGE" "${EXTRA_IMAGES[@]}"
  mkdir -p "$(dirname "$1")"
  local gz="gzip -1"
  command -v pigz >/dev/null && gz="pigz -1"
  tar -C "$st" -I "$gz" -cf "$1.tmp" kubernetes && mv "$1.tmp" "$1"
  rm -rf "$st"
}
step "server tarball (binaries + image tarballs) -> $SERVER_TGZ" have_file build_server "$SERVER_TGZ"

# --- node image -------------------------------------------------------------------
NODE_IMAGE=llmgw-kind/node:$K8S_VERSION-$(key "$SERVER_KEY" "$BASE_IMAGE" "$KIND_VERSION" "$KIND_DIR/shim/docker")
build_node() {
  local blog=$KIND_CACHE/node-image-build.log
  kind_cmd build node-image --type file "$SERVER_TGZ" --base-image "$BASE_IMAGE" --image "$1" >"$blog" 2>&1 ||
    { tail -60 "$blog" >&2; die "kind build node-image failed (log: $blog)"; }
}
step "node image (go tool kind build node-image --type file) -> $NODE_IMAGE" have_image build_node "$NODE_IMAGE"
docker tag "$NODE_IMAGE" "llmgw-kind/node:$K8S_VERSION"
echo "$NODE_IMAGE" >"$KIND_CACHE/node-image.ref"

# Drop superseded builds of our own images (older content keys), keep the rest.
for repo in llmgw-kind/node llmgw-kind/base llmgw-kind/base-os llmgw-kind/proxy-os; do
  docker image ls --format '{{.Repository}}:{{.Tag}}' "$repo" | while read -r t; do
    case $t in "$NODE_IMAGE" | "llmgw-kind/node:$K8S_VERSION" | "$BASE_IMAGE" | "$BASE_OS_IMAGE" | "$PROXY_OS_IMAGE") ;; *)
      log "removing superseded $t"; docker image rm "$t" >/dev/null 2>&1 || true ;; esac
  done
done
find "$KIND_CACHE/server" -mindepth 1 -maxdepth 1 ! -name "$SERVER_KEY" -exec rm -rf {} + 2>/dev/null || true

log "kind-image: $NODE_IMAGE ready in $(since "$T_ALL")"
echo "$NODE_IMAGE"
