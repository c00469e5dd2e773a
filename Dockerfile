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

FROM scratch
ARG VERSION=dev
ARG REVISION=
LABEL org.opencontainers.image.title="schemadns-coredns" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.source="https://github.com/schemadns/schemadns" \
      org.opencontainers.image.description="CoreDNS with the schemadns Kubernetes DNS plugins (kubeschema, multicluster, gensearchpath, edns0autopath)"
COPY --from=build /out/coredns /coredns
# An empty /etc/coredns, where the Corefile is mounted (a ConfigMap).
COPY --from=build /out/etc /etc
# DNS; prometheus metrics, health, ready.
EXPOSE 53/udp 53/tcp 9153/tcp 8080/tcp 8181/tcp
# 65532: the "nonroot" user of distroless images. Binding port 53 as that
# user needs CAP_NET_BIND_SERVICE (in Kubernetes, securityContext
# capabilities add NET_BIND_SERVICE) unless the runtime lowers
# net.ipv4.ip_unprivileged_port_start, as Docker does.
USER 65532:65532
ENTRYPOINT ["/coredns", "-conf", "/etc/coredns/Corefile"]
