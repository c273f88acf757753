# llmgw image: one static binary on an empty base, so it builds where no base
# image can be pulled. `make image` (hack/deploy/deploy.mk) builds the binary
# on the host first:
#   CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o bin/image/llmgw .
# and stages the host's CA bundle next to it (TLS to https:// providers), then
# builds this with bin/image/ as the only content sent (.dockerignore).
FROM scratch

# The manifests run every container with a read-only root filesystem and mount
# an emptyDir at /tmp: SQLite (modernc.org/sqlite honours SQLITE_TMPDIR, then
# TMPDIR) and Go put their temporary files there.
ENV SQLITE_TMPDIR=/tmp \
    TMPDIR=/tmp \
    SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt

COPY bin/image/ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
COPY bin/image/llmgw /llmgw

# Numeric, so no /etc/passwd is needed and runAsNonRoot can verify it.
USER 65532:65532
ENTRYPOINT ["/llmgw"]
