# kube-proxy image, part 2: the static binary behind a wrapper that first
# selects the iptables backend (legacy or nft) the node already uses.
ARG PROXY_OS
FROM ${PROXY_OS}
COPY kube-proxy /usr/local/bin/kube-proxy.bin
COPY kube-proxy-entry.sh /usr/local/bin/kube-proxy
