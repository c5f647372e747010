#!/usr/bin/env bash
# CI entry of the local cluster: unit tests of its tools, then up, smoke
# test, down, and a check that nothing is left. Prints "SKIP: <reason>" and
# exits 0 when this machine cannot run a cluster (not root, or kernel features
# missing). Called from .ci/run.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cluster=$here/cluster

# Unit tests of the cluster's own programs (image builder, LoadBalancer
# allocator): no root needed.
if ! (cd "$here/tools" && go test -count=1 ./...); then
  echo "cluster tools unit tests failed"
  exit 1
fi

if [[ $(id -u) != 0 ]]; then
  echo "SKIP: local cluster smoke test: not root"
  exit 0
fi
# Debian packages first (a fresh machine has none of them).
if ! "$cluster" deps; then
  echo "cluster deps: installing the Debian packages failed"
  exit 1
fi
if ! reason=$("$cluster" preflight 2>&1); then
  echo "SKIP: local cluster smoke test: $reason"
  exit 0
fi

start=$SECONDS
dump_logs() {
  local f
  for f in /var/lib/xds-cluster/logs/*.log; do
    [[ -f $f ]] || continue
    echo "----- last lines of $f"; tail -n 30 "$f"
  done
  "$cluster" status 2>&1 | tail -n 40 || true
}

down_and_check() {
  "$cluster" down || return 1
  "$cluster" check-clean
}

# Bounded: the cluster part of CI stays well under 45 minutes even cold.
if ! timeout 35m "$cluster" up; then
  echo "cluster up failed after $((SECONDS - start))s"
  dump_logs
  "$cluster" down || true
  exit 1
fi
echo "cluster up after $((SECONDS - start))s"

rc=0
timeout 10m "$cluster" smoke || { rc=$?; dump_logs; }
down_and_check || rc=1
echo "cluster ci-smoke finished in $((SECONDS - start))s (rc=$rc)"
exit $rc
