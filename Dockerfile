# syntax=docker/dockerfile:1
# The ingest image: a static binary (scripts/build.sh, the same build as `make build`) on
# distroless/static, which holds CA certificates, time zone data and a nonroot user (65532)
# and nothing else: no shell, no package manager. Build and push: see README, Deployment.
ARG GO_VERSION=1.26

FROM golang:${GO_VERSION}-bookworm AS build
WORKDIR /src
# Dependencies first: a source change does not download them again.
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
RUN scripts/build.sh /out/ingest "${VERSION}" && /out/ingest version

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/ingest /usr/local/bin/ingest
# Numeric, so that Kubernetes can check runAsNonRoot against the image.
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/ingest"]
CMD ["--help"]
