#!/usr/bin/env bash
# Prints the path of protoc (the Protocol Buffers compiler), installing
# Debian's protobuf-compiler package first when none is on PATH (needs root
# for apt-get). Used by `make generate-conformance-images`
# (third_party/conformance-images/Makefile); only regenerating .pb.go files
# needs it, building and testing do not.
set -euo pipefail
if p=$(command -v protoc 2>/dev/null); then echo "$p"; exit 0; fi
if [[ $(id -u) != 0 ]]; then
  echo "protoc not found: install Debian's protobuf-compiler (apt-get install -y protobuf-compiler) as root" >&2
  exit 1
fi
echo "installing protobuf-compiler (apt-get)" >&2
DEBIAN_FRONTEND=noninteractive apt-get install -y -q protobuf-compiler >&2 \
  || { apt-get update -q >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y -q protobuf-compiler >&2; }
command -v protoc
