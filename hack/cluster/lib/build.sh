# shellcheck shell=bash
# Builds (once per version) the Go binaries of the local cluster into the cache.
# Sourced by hack/cluster/cluster; expects common.sh to be sourced first.

# build_key DIR EXTRA... : a short hash of a helper module's go.mod/go.sum,
# the Go version and any extra words, so a change of any of them rebuilds.
build_key() {
  local dir=$1; shift
  { cat "$dir/go.mod" "$dir/go.sum" 2>/dev/null; find "$dir" -name '*.go' -print0 | sort -z | xargs -0 cat 2>/dev/null
    go env GOVERSION; echo "$@"; } | sha256sum | cut -c1-12
}

# machine_go_path: $PATH without the Go toolchains the go command fetched
# into the module cache (golang.org/toolchain@...). `go test` and `go run`
# put their own toolchain's bin first in PATH, so a test that calls this
# tool (test/e2e-cluster runs `cluster kubectl`) would otherwise build and
# key with the project's toolchain (GOTOOLCHAIN=local then means that one),
# rebuild the Kubernetes binaries under another key and evict the build
# that `make e2e` and `make conformance` use, back and forth.
machine_go_path() {
  printf '%s' "$PATH" | tr ':' '\n' | grep -v '/golang.org/toolchain@' | paste -sd: -
}

# go_build_cached NAME MODDIR OUTDIR_VAR LDFLAGS PKG...
# Builds PKG... from the module in MODDIR into $CACHE/NAME-KEY unless that
# folder is already complete; prints the folder.
go_build_cached() {
  # The helper modules build with the machine's own Go (GOTOOLCHAIN=local),
  # whatever toolchain the project's modules select (e.g. GOTOOLCHAIN=go1.27.3
  # exported by the Makefile for Gateway API v1.7.0): the key includes the Go
  # version, so following the project's toolchain would rebuild the
  # Kubernetes binaries (about 18 minutes cold) and evict the builds that
  # other clones on this machine still use. Their go.mod files say go 1.26.
  local machine_path
  machine_path=$(machine_go_path)
  local -x GOTOOLCHAIN=local PATH=$machine_path
  local name=$1 moddir=$2 ldflags=$3; shift 3
  local key out tmp
  key=$(build_key "$moddir" "$ldflags" "$@")
  out=$CACHE/bin/$name-$key
  if [[ -f $out/.complete ]]; then
    ln -sfn "$name-$key" "$CACHE/bin/$name"
    echo "$out"; return 0
  fi
  mkdir -p "$CACHE/bin"
  tmp=$(mktemp -d "$CACHE/bin/.$name.XXXXXX")
  chmod 755 "$tmp"
  log "building $name ($key) from $moddir: $* (cached afterwards)"
  local t0=$SECONDS
  if ! (cd "$moddir" && CGO_ENABLED=0 nice -n 5 go build -mod=readonly -ldflags "$ldflags" -o "$tmp/" "$@" >&2); then
    rm -rf "$tmp"; die "build of $name failed"
  fi
  touch "$tmp/.complete"
  rm -rf "$out"; mv "$tmp" "$out"
  # Older builds of the same thing are never used again.
  find "$CACHE/bin" -mindepth 1 -maxdepth 1 -name "$name-*" ! -path "$out" -exec rm -rf {} +
  # Stable path for other users of the binaries (envtest, say): $CACHE/bin/NAME.
  ln -sfn "$name-$key" "$CACHE/bin/$name"
  log "built $name in $((SECONDS - t0))s"
  echo "$out"
}

k8s_ldflags() {
  local v=${K8S_VERSION#v} major minor
  major=${v%%.*}; minor=${v#*.}; minor=${minor%%.*}
  local f="-s -w"
  for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    f+=" -X $p.gitVersion=$K8S_VERSION -X $p.gitMajor=$major -X $p.gitMinor=$minor"
    f+=" -X $p.gitTreeState=clean -X $p.gitCommit=0000000000000000000000000000000000000000 -X $p.buildDate=1970-01-01T00:00:00Z"
  done
  echo "$f"
}

build_kubernetes() {
  local moddir=$HERE/build/kubernetes
  grep -q "k8s.io/kubernetes $K8S_VERSION\$" "$moddir/go.mod" \
    || die "$moddir/go.mod does not require k8s.io/kubernetes $K8S_VERSION: run hack/cluster/build/update-gomods.sh"
  go_build_cached "kubernetes-$K8S_VERSION" "$moddir" "$(k8s_ldflags)" \
    k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager \
    k8s.io/kubernetes/cmd/kube-scheduler k8s.io/kubernetes/cmd/kubelet \
    k8s.io/kubernetes/cmd/kube-proxy k8s.io/kubernetes/cmd/kubectl
}

build_coredns() {
  local moddir=$HERE/build/coredns
  grep -q "github.com/coredns/coredns $COREDNS_VERSION\$" "$moddir/go.mod" \
    || die "$moddir/go.mod does not require coredns $COREDNS_VERSION: run hack/cluster/build/update-gomods.sh"
  go_build_cached "coredns-$COREDNS_VERSION" "$moddir" "-s -w" ./cmd/coredns
}

build_tools() {
  go_build_cached "tools" "$HERE/tools" "-s -w" ./cmd/...
}

build_echo_basic() {
  local moddir=$HERE/build/echo-basic
  grep -q "sigs.k8s.io/gateway-api/conformance $ECHO_BASIC_VERSION\$" "$moddir/go.mod" \
    && grep -q "=> sigs.k8s.io/gateway-api $ECHO_BASIC_VERSION\$" "$moddir/go.mod" \
    || die "$moddir/go.mod does not pin gateway-api $ECHO_BASIC_VERSION: run hack/cluster/build/update-gomods.sh"
  go_build_cached "echo-basic-$ECHO_BASIC_VERSION" "$moddir" "-s -w" sigs.k8s.io/gateway-api/conformance/echo-basic
}
