#!/usr/bin/env bash
# `make run`: set up everything on a fresh machine and run the quickstart.
# Installs Envoy (hack/install-envoy.sh) when none is on PATH, builds the
# controller and the sample backend, starts two backends on 127.0.0.1:9001
# and :9002, prints the curl commands to try, then runs standalone mode on
# examples/quickstart/ in the foreground (Ctrl-C stops everything).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
# Go 1.27 (Gateway API v1.7.0); fetched from the module proxy on first use.
export GOTOOLCHAIN=go1.27.3
envoy=$(hack/install-envoy.sh)
go build -o bin/xds-controller ./cmd/xds-controller
go build -o bin/sample-backend ./examples/backend

pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; }
trap cleanup EXIT
bin/sample-backend --listen 127.0.0.1:9001 --name foo & pids+=($!)
bin/sample-backend --listen 127.0.0.1:9002 --name bar & pids+=($!)

cat <<MSG

xds-controller quickstart: Envoy listens on 127.0.0.1:8080 for the Gateway in
examples/quickstart/. Try, from another terminal:

  curl -s -H 'Host: foo.example.com' http://127.0.0.1:8080/           # -> foo
  curl -s -H 'Host: bar.example.com' http://127.0.0.1:8080/api/users  # -> bar
  curl -s -H 'Host: bar.example.com' -H 'x-canary: true' http://127.0.0.1:8080/api  # -> foo
  curl -si -H 'Host: bar.example.com' http://127.0.0.1:8080/old/x     # -> 301 to /api/x
  curl -s http://127.0.0.1:9901/config_dump | less                    # Envoy admin

Edit examples/quickstart/routes.yaml and the change is served within a second.
Ctrl-C stops everything.

MSG
bin/xds-controller serve standalone --config examples/quickstart --envoy-path "$envoy" --state-dir .state/quickstart
