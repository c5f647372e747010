# shellcheck shell=bash
# shellcheck disable=SC2034 # used by the scripts that source this file
# Shared settings of hack/cluster/cluster. Sourced, never run.
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
REPO_ROOT=$(cd "$HERE/../.." && pwd)
set -a
# shellcheck source=../versions.env
. "$HERE/versions.env"
set +a

# Build cache: kept across `down` and across clones on one machine.
CACHE=${XDS_CLUSTER_CACHE:-/var/cache/xds-controller-cluster}
# Cluster state: everything here is removed by `down`.
STATE=${XDS_CLUSTER_STATE:-/var/lib/xds-cluster}
RUN=${XDS_CLUSTER_RUN:-/run/xds-cluster}
LOGS=$STATE/logs
KUBECONFIG_OUT=${XDS_CLUSTER_KUBECONFIG:-$STATE/admin.kubeconfig}

# Network: all on the cluster's own bridge; nothing is routed elsewhere.
BRIDGE=xdsbr0
POD_CIDR=10.244.0.0/24
BRIDGE_IP=10.244.0.1        # node address: kubelet, apiserver (advertise, bind)
POD_RANGE_START=10.244.0.10
POD_RANGE_END=10.244.0.250
SERVICE_CIDR=10.96.0.0/16
KUBERNETES_SVC_IP=10.96.0.1
DNS_SVC_IP=10.96.0.10
# LoadBalancer pool: a subnet routed to the bridge (pods reach it via the node).
LB_CIDR=10.244.1.0/24
LB_POOL_START=10.244.1.10
LB_POOL_END=10.244.1.250
# From here to LB_POOL_END, addresses are given only to Services that request
# them (the conformance suite's usable static Gateway address is one).
LB_STATIC_START=10.244.1.240
ETCD_PORT=12379
ETCD_PEER_PORT=12380
CLUSTER_DOMAIN=cluster.local
NODE_NAME=xds-node

export PATH=$PATH:/usr/local/go/bin:/usr/sbin:/sbin

log() { printf '[cluster %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }
