# Node base image, part 1 (replaces kindest/base): Debian packages and kind's
# own base files. Built by hack/kind/image.sh from a debootstrap'ed Debian
# image; the context's kind-files/ is a copy of images/base/files from the
# sigs.k8s.io/kind module directory in the Go module cache.
ARG DEBIAN_IMAGE
FROM ${DEBIAN_IMAGE}
COPY kind-files/ /tmp/kind-files/
# Besides kind's own steps: restrict_oom_score_adj = true in containerd's
# config (this machine's bounding set lacks CAP_SYS_RESOURCE, so runc in the
# node cannot set a negative oom_score_adj), and Debian's CNI plugins
# (/usr/lib/cni) linked into /opt/cni/bin where containerd looks for them.
RUN set -eux; \
    export DEBIAN_FRONTEND=noninteractive; \
    apt-get update -qq; \
    apt-get install -y -qq --no-install-recommends \
      systemd \
      conntrack iptables nftables iproute2 ethtool util-linux mount kmod \
      libseccomp2 pigz fuse-overlayfs \
      e2fsprogs \
      bash ca-certificates curl jq procps \
      runc containernetworking-plugins socat >/dev/null; \
    apt-get clean; rm -rf /var/lib/apt/lists/* /var/cache/apt/*; \
    f=/tmp/kind-files; \
    install -m 0755 $f/usr/local/bin/* /usr/local/bin/; \
    mkdir -p /kind /LICENSES /etc/containerd /etc/default /etc/sysctl.d /etc/systemd/system/kubelet.service.d; \
    cp -r $f/kind/. /kind/; find /kind -type f -exec chmod 0644 {} +; chmod 0755 /kind /kind/bin /kind/bin/*; \
    install -m 0644 $f/LICENSES/* /LICENSES/; \
    for d in etc etc/containerd etc/default etc/sysctl.d etc/systemd/system etc/systemd/system/kubelet.service.d; do \
      find $f/$d -maxdepth 1 -type f -exec install -m 0644 {} /$d/ \; ; \
    done; \
    rm -rf $f; \
    sed -i 's/^\([[:space:]]*restrict_oom_score_adj[[:space:]]*=\).*/\1 true/' /etc/containerd/config.toml; \
    grep -q 'restrict_oom_score_adj = true' /etc/containerd/config.toml; \
    mkdir -p /opt/cni/bin; for p in host-local loopback ptp portmap bridge; do ln -sf /usr/lib/cni/$p /opt/cni/bin/$p; done; \
    find /lib/systemd/system/sysinit.target.wants/ -name "systemd-tmpfiles-setup.service" -delete; \
    rm -f /lib/systemd/system/multi-user.target.wants/* \
          /etc/systemd/system/*.wants/* \
          /lib/systemd/system/local-fs.target.wants/* \
          /lib/systemd/system/sockets.target.wants/*udev* \
          /lib/systemd/system/sockets.target.wants/*initctl* \
          /lib/systemd/system/basic.target.wants/*; \
    echo "ReadKMsg=no" >> /etc/systemd/journald.conf; \
    ln -sf /usr/lib/systemd/systemd /sbin/init; \
    systemctl enable kubelet.service containerd.service undo-mount-hacks.service; \
    systemctl mask systemd-binfmt.service; \
    mkdir -p /etc/kubernetes/manifests
