# The controller image, for users' registries:
#   docker build -t registry.example/xds-controller:v0.1.0 --build-arg VERSION=v0.1.0 .
# (The local test cluster builds the same image without Docker:
# hack/cluster, ghcr.io/xds-controller/xds-controller:dev.)
# The binary is the entrypoint at /xds-controller; the chart passes
# `serve controller ...` as arguments.
FROM --platform=$BUILDPLATFORM golang:1.27 AS build
ARG TARGETOS TARGETARCH VERSION=dev
WORKDIR /src
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY . .
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 GOOS=$TARGETOS GOARCH=$TARGETARCH \
    go build -trimpath -ldflags "-s -w -X github.com/xds-controller/xds-controller/pkg/version.version=${VERSION}" -o /out/xds-controller ./cmd/xds-controller

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/xds-controller /xds-controller
USER 65532:65532
ENTRYPOINT ["/xds-controller"]
