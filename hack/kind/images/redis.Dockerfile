# The quota store's image (Redis from Debian's redis-server package), built
# like the kind node's images: nothing pulled from a registry. Stage 1 is the
# debootstrap'ed Debian image (hack/kind/image.sh) with redis-server
# apt-installed; stage 2 is FROM scratch with the server binary, the shared
# libraries ldd lists for it, and an empty /data. hack/kind/images/redis-image.sh
# builds it (classic builder: multi-stage works without buildx).
ARG DEBIAN_IMAGE
FROM ${DEBIAN_IMAGE} AS build
# redis-server is a symlink to redis-check-rdb: the binary picks its mode
# from its name, so it is copied under the name redis-server.
RUN set -eux; \
    export DEBIAN_FRONTEND=noninteractive; \
    apt-get update -qq; \
    apt-get install -y -qq --no-install-recommends redis-server >/dev/null; \
    bin=$(readlink -f /usr/bin/redis-server); \
    mkdir -p /out/usr/bin /out/data /out/tmp /out/etc; \
    cp "$bin" /out/usr/bin/redis-server; \
    for lib in $(ldd "$bin" | awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// { print $1 }'); do \
      cp --parents -L "$lib" /out/; \
    done; \
    printf 'root:x:0:0:root:/root:/sbin/nologin\nredis:x:65532:65532:redis:/data:/sbin/nologin\n' >/out/etc/passwd; \
    printf 'root:x:0:\nredis:x:65532:\n' >/out/etc/group; \
    chown 65532:65532 /out/data; chmod 0750 /out/data; chmod 1777 /out/tmp; \
    dpkg-query -W -f='${Version}\n' redis-server >/out/etc/redis-debian-version; \
    chroot /out /usr/bin/redis-server --version

FROM scratch
COPY --from=build /out/ /
# Numeric, so runAsNonRoot can verify it without /etc/passwd.
USER 65532:65532
WORKDIR /data
EXPOSE 6379
ENTRYPOINT ["/usr/bin/redis-server"]
