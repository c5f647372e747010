#!/usr/bin/env bash
# Prints the path of a Helm 4 binary, building v4.3.2 first when needed.
#
# Order: $HELM if set; `helm` on PATH when it is Helm 4 (v4.x); else
# .cache/bin/helm (project-local), built on first use from the Go module
# proxy as helm.sh/helm/v4/cmd/helm@v4.3.2 (HELM_VERSION), the Helm whose
# Go module the chart and cluster tests use (test/chart/go.mod). The build
# takes a few minutes once; `helm version` then reports v4.3.2.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
want=${HELM_VERSION:-v4.3.2}
bin=$root/.cache/bin
export GOTOOLCHAIN=${GOTOOLCHAIN:-go1.27.3}

version() { "$1" version --template '{{.Version}}' 2>/dev/null || true; }

if [[ -n "${HELM:-}" && -x "${HELM}" ]]; then echo "$HELM"; exit 0; fi
if p=$(command -v helm 2>/dev/null) && [[ $(version "$p") == v4.* ]]; then
  echo "$p"; exit 0
fi
if [[ $(version "$bin/helm") != "$want" ]]; then
  echo "building helm $want into $bin (once)" >&2
  mkdir -p "$bin"
  GOBIN=$bin CGO_ENABLED=0 go install -trimpath \
    -ldflags "-s -w -X helm.sh/helm/v4/internal/version.version=$want" \
    "helm.sh/helm/v4/cmd/helm@$want" >&2
fi
echo "$bin/helm"
