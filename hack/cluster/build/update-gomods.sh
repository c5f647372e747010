#!/usr/bin/env bash
# Rewrites the helper modules' go.mod files from versions.env and tidies them.
# Run after changing K8S_VERSION, K8S_STAGING_VERSION, COREDNS_VERSION or
# ECHO_BASIC_VERSION; commit the resulting go.mod/go.sum.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
set -a; . "$here/../versions.env"; set +a

# Kubernetes: every staging repo that k8s.io/kubernetes points at ./staging
# is replaced by its published module at K8S_STAGING_VERSION.
modfile=$(go mod download -json "k8s.io/kubernetes@$K8S_VERSION" | sed -n 's/.*"GoMod": "\(.*\)".*/\1/p')
{
  echo '// Helper module that builds the Kubernetes binaries of the local cluster from'
  echo '// the Go module k8s.io/kubernetes (hack/cluster/build/update-gomods.sh writes it).'
  echo 'module xds-controller.local/cluster/build/kubernetes'
  echo; echo 'go 1.26.0'; echo
  echo "require k8s.io/kubernetes $K8S_VERSION"; echo
  echo 'replace ('
  grep -E '=> ./staging' "$modfile" | awk -v v="$K8S_STAGING_VERSION" '{print "\t" $1 " => " $1 " " v}'
  echo ')'
} >"$here/kubernetes/go.mod"
(cd "$here/kubernetes" && GOFLAGS=-mod=mod go mod tidy)

sed -i -E "s#^require github.com/coredns/coredns .*#require github.com/coredns/coredns $COREDNS_VERSION#" "$here/coredns/go.mod"
(cd "$here/coredns" && GOFLAGS=-mod=mod go mod tidy)

sed -i -E "s#^require sigs.k8s.io/gateway-api/conformance .*#require sigs.k8s.io/gateway-api/conformance $ECHO_BASIC_VERSION#; s#^replace sigs.k8s.io/gateway-api => .*#replace sigs.k8s.io/gateway-api => sigs.k8s.io/gateway-api $ECHO_BASIC_VERSION#" "$here/echo-basic/go.mod"
(cd "$here/echo-basic" && GOFLAGS=-mod=mod go mod tidy)
echo "updated; the image tags in versions.env (ECHO_BASIC_IMAGES, COREDNS_IMAGES) must cover"
echo "the manifests of the conformance suite the project runs (conformance/go.mod) and of"
echo "the module echo-basic is built from (ECHO_BASIC_VERSION):"
for moddir in "$here/../../../conformance" "$here/echo-basic"; do
  dir=$(cd "$moddir" && go list -m -f '{{.Dir}}' sigs.k8s.io/gateway-api/conformance)
  grep -rhoE 'image: *\S+' "$dir" --include=*.yaml | awk '{print $2}'
done | sort -u
