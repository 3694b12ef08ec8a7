#!/usr/bin/env bash
# build.sh OUT [VERSION]: the release build of ingest, and the only one: `make build`, the
# Dockerfile and deploy/image_test.go all run this script, so the binary a test checks is the
# binary the image ships.
#
# CGO_ENABLED=0 makes a static binary (Go's own DNS resolver and user lookup, no libc), which
# runs on a distroless/static or scratch base; -trimpath and -buildvcs=false keep the build
# independent of where and from what checkout it ran; the version is stamped into main.version.
set -euo pipefail
out=${1:?usage: build.sh OUT [VERSION]}
version=${2:-dev}
cd "$(dirname "$0")/.."
CGO_ENABLED=0 exec "${GO:-go}" build -trimpath -buildvcs=false \
  -ldflags "-s -w -X main.version=${version}" -o "$out" ./cmd/ingest
