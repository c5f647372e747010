#!/usr/bin/env bash
# Prints the path of the envoyproxy/ratelimit service binary (the global
# rate-limit service: Envoy's rate-limit service protocol, Redis as store),
# building it first when needed.
#
# Order: $RATELIMIT if set and executable; else
# .cache/bin/ratelimit-<version> (project-local, one binary per pinned
# version), built with `go install` of the module's src/service_cmd from the
# Go module proxy. The module has no release tags on the proxy: the version
# is a pseudo-version of its main branch (find a newer one with
# `go list -m github.com/envoyproxy/ratelimit@latest`) and is pinned here so
# that every machine builds the same service. A build takes about a minute
# (the module's dependencies come from the module cache).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
version=${RATELIMIT_VERSION:-v1.4.1-0.20260122083618-3fb702589d36}
bin=$root/.cache/bin/ratelimit-$version

if [[ -n "${RATELIMIT:-}" && -x "${RATELIMIT}" ]]; then echo "$RATELIMIT"; exit 0; fi
if [[ ! -x $bin ]]; then
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  # Its own go.mod (go 1.24) decides its dependencies; GOFLAGS=-mod=mod keeps
  # a vendor or workspace setting of the caller out of it.
  GOBIN=$tmp GOFLAGS=-mod=mod GOTOOLCHAIN=${GOTOOLCHAIN:-go1.27.3} \
    go install "github.com/envoyproxy/ratelimit/src/service_cmd@$version" >&2
  mkdir -p "$(dirname "$bin")"
  mv "$tmp/service_cmd" "$bin"
fi
echo "$bin"
