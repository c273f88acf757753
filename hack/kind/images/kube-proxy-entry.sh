#!/bin/sh
# kubeadm runs /usr/local/bin/kube-proxy: pick the iptables backend that holds
# the node's rules (same rule as kubernetes-sigs/iptables-wrappers and kind's
# entrypoint), then run the real binary.
legacy=$( (iptables-legacy-save; ip6tables-legacy-save) 2>/dev/null | grep -c '^-' || true)
nft=$( (iptables-nft-save; ip6tables-nft-save) 2>/dev/null | grep -c '^-' || true)
mode=nft
[ "${legacy:-0}" -gt "${nft:-0}" ] && mode=legacy
for t in iptables ip6tables; do
  update-alternatives --set "$t" "/usr/sbin/$t-$mode" >/dev/null 2>&1 || true
done
exec /usr/local/bin/kube-proxy.bin "$@"
