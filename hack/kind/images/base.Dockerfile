# Node base image, part 2: containerd v2 and crictl built from Go modules.
ARG BASE_OS
FROM ${BASE_OS}
COPY bin/ /usr/local/bin/
RUN set -eux; \
    ctr oci spec \
      | jq '.hooks.createContainer[.hooks.createContainer| length] |= . + {"path": "/kind/bin/mount-product-files.sh"}' \
      | jq 'del(.process.rlimits)' > /etc/containerd/cri-base.json; \
    containerd --version; crictl --version
ENV container=docker
STOPSIGNAL SIGRTMIN+3
ENTRYPOINT [ "/usr/local/bin/entrypoint", "/sbin/init" ]
