# The schemadns CoreDNS image, for those with a container engine:
#
#   docker build --build-arg VERSION=$(git describe --tags --always --dirty) \
#       --build-arg REVISION=$(git rev-parse HEAD) -t schemadns/coredns:dev .
#
# `make image` builds the same image without an engine (hack/image); keep
# the two in step: user, entrypoint, ports and labels.

# The builder runs on the build machine and cross-compiles for the target
# (docker buildx build --platform linux/arm64 ...): Go needs no emulation.
FROM --platform=$BUILDPLATFORM golang:1.26 AS build
WORKDIR /src
# Modules first, so that a source change does not download them again.
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
ARG TARGETOS
ARG TARGETARCH
# Static: the final image has no C library or loader.
RUN CGO_ENABLED=0 GOOS=$TARGETOS GOARCH=$TARGETARCH \
    go build -trimpath -ldflags "-X main.version=${VERSION}" -o /out/coredns ./coredns \
 && mkdir -p /out/etc/coredns

# cap_net_bind_service=+ep on the binary, as `make image` writes it: the
# image runs as 65532, and a capability the pod spec adds reaches a
# non-root process only through the file's capability set.
FROM debian:bookworm-slim AS cap
RUN apt-get update && apt-get install -y --no-install-recommends libcap2-bin \
 && rm -rf /var/lib/apt/lists/*
COPY --from=build /out/coredns /coredns
RUN setcap cap_net_bind_service=+ep /coredns

FROM scratch
ARG VERSION=dev
ARG REVISION=
LABEL org.opencontainers.image.title="schemadns-coredns" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.source="https://github.com/schemadns/schemadns" \
      org.opencontainers.image.description="CoreDNS with the schemadns Kubernetes DNS plugins (kubeschema, multicluster, gensearchpath, edns0autopath)"
COPY --from=cap /coredns /coredns
# An empty /etc/coredns, where the Corefile is mounted (a ConfigMap).
COPY --from=build /out/etc /etc
# DNS; prometheus metrics, health, ready.
EXPOSE 53/udp 53/tcp 9153/tcp 8080/tcp 8181/tcp
# 65532: the "nonroot" user of distroless images. It binds port 53 through
# the binary's file capability, which the container must allow (in
# Kubernetes, securityContext capabilities add NET_BIND_SERVICE).
USER 65532:65532
ENTRYPOINT ["/coredns", "-conf", "/etc/coredns/Corefile"]
