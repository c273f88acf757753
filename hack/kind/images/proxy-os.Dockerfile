# kube-proxy image, part 1: Debian with the packet-filter tools kube-proxy runs.
ARG DEBIAN_IMAGE
FROM ${DEBIAN_IMAGE}
RUN set -eux; \
    export DEBIAN_FRONTEND=noninteractive; \
    apt-get update -qq; \
    apt-get install -y -qq --no-install-recommends iptables nftables conntrack ipset kmod >/dev/null; \
    apt-get clean; rm -rf /var/lib/apt/lists/* /var/cache/apt/*
