#!/usr/bin/env bash
# Prints a folder holding `kube-apiserver` and `etcd` (symlinks) for
# controller-runtime's envtest (KUBEBUILDER_ASSETS / BinaryAssetsDirectory).
#
# kube-apiserver is the local cluster's own build (hack/cluster, cached under
# /var/cache/xds-controller-cluster/bin/kubernetes-<version>-<key>/), built
# here when missing (a few minutes, once); etcd is Debian's etcd-server
# (`hack/cluster/cluster deps` installs it). hack/cluster's libraries are
# only sourced, never changed.
#
#   hack/envtest-assets.sh             build kube-apiserver if needed, print the folder
#   hack/envtest-assets.sh --no-build  print the folder only if everything is there
#                                      (else print the reason on stderr, exit 1)
set -euo pipefail
build=1
[[ ${1:-} == --no-build ]] && build=0
# shellcheck source=cluster/lib/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/cluster/lib/common.sh"
# shellcheck source=cluster/lib/build.sh
. "$HERE/lib/build.sh"

etcd=$(command -v etcd 2>/dev/null || true)
[[ -n $etcd ]] || etcd=/usr/bin/etcd
[[ -x $etcd ]] || { echo "no etcd: install Debian etcd-server (hack/cluster/cluster deps)" >&2; exit 1; }

if ((build)); then
  k8s=$(build_kubernetes)
else
  moddir=$HERE/build/kubernetes
  # The key as go_build_cached computes it: with the machine's Go.
  export GOTOOLCHAIN=local
  PATH=$(machine_go_path)
  k8s=$CACHE/bin/kubernetes-$K8S_VERSION-$(build_key "$moddir" "$(k8s_ldflags)" \
    k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager \
    k8s.io/kubernetes/cmd/kube-scheduler k8s.io/kubernetes/cmd/kubelet \
    k8s.io/kubernetes/cmd/kube-proxy k8s.io/kubernetes/cmd/kubectl)
  [[ -f $k8s/.complete && -x $k8s/kube-apiserver ]] || {
    echo "kube-apiserver $K8S_VERSION is not built (run hack/envtest-assets.sh or hack/cluster/cluster build)" >&2; exit 1; }
fi

out=$REPO_ROOT/.cache/envtest
mkdir -p "$out"
ln -sfn "$k8s/kube-apiserver" "$out/kube-apiserver"
ln -sfn "$etcd" "$out/etcd"
echo "$out"
