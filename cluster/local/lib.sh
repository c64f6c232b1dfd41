# shellcheck shell=bash disable=SC2034 # the variables are used by the scripts that source this
# Shared settings and helpers of the local stack scripts. Sourced, not run.
#
# Everything the stack writes lives in $STATE (default .work/local in the
# repository); every process it starts has a pid file there and is stopped
# by that pid (cluster/lib.sh). Only loopback addresses are used.
# shellcheck source=cluster/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
SV_DIR=$STATE
TOOLS_BIN=${TOOLS_BIN:-$("$ROOT/hack/tools.sh" bindir)}
export KUBECONFIG=$STATE/kubeconfig

# The stack's ports on 127.0.0.1, unless set: a range of ten from
# PORT_BASE + 10k, chosen at the first bring-up (up.sh: k from STATE_ID,
# then the next range until all are free) and recorded in $STATE/ports for
# the scripts after it.
PORT_BASE=${PORT_BASE:-12000}
LOCAL_PORTS=("APISERVER_PORT=$PORT_BASE" "ETCD_PORT=$((PORT_BASE + 1))" "ETCD_PEER_PORT=$((PORT_BASE + 2))"
	"XP_METRICS_PORT=$((PORT_BASE + 3))" "XP_HEALTH_PORT=$((PORT_BASE + 4))" "FN_PORT=$((PORT_BASE + 5))"
	"PROVIDER_METRICS_PORT=$((PORT_BASE + 6))" "PROVIDER_HEALTH_PORT=$((PORT_BASE + 7))" "REGISTRY_PORT=$((PORT_BASE + 8))")
# ETCD_PORT set alone brings its peer's port after it.
if from_env ETCD_PORT && ! from_env ETCD_PEER_PORT; then export ETCD_PEER_PORT=$((ETCD_PORT + 1)); fi
read_ports "$STATE/ports" "${LOCAL_PORTS[@]}"
XP_NAMESPACE=crossplane-system
# NODE=1 (the default as root) brings up the nodes too (cluster/node/up.sh,
# NODES of them, default 1), so that pods run; NODE=0 leaves them out.
NODE=${NODE:-$([ "$(id -u)" = 0 ] && echo 1 || echo 0)}
# The API's address for the nodes and their pods, inside the nodes' hub
# namespace (cluster/node/lib.sh): the kube-apiserver advertises it, so the
# `kubernetes` Service leads pods to the API (through cluster/node/apirelay).
API_IP=10.99.0.1
# With the node, the kube-apiserver reaches the kubelet (logs, exec,
# port-forward) through the relay's HTTP CONNECT proxy on this socket.
EGRESS_SOCK=$STATE/apirelay.sock

# The packages `make xpkg` builds, which the stack pushes to its registry.
XPKG_DIR=${XPKG_DIR:-$ROOT/_output/xpkg}

# registry prints the stack's OCI registry (cluster/registry, started by
# up.sh on REGISTRY_PORT, its certificate from $STATE/pki/ca.crt): every
# package and image is pushed there and pulled from there by tag, under
# this path.
registry() { echo "127.0.0.1:$REGISTRY_PORT"; }
# The gateway image's repository and tag there (cluster/node/up.sh pushes
# it): the provider's --gateway-image (provider.sh).
GATEWAY_REF=ipsecgw/gateway:v0.1.0

kubectl() { "$TOOLS_BIN/kubectl" "$@"; }

# need_tools TOOL... fails unless each TOOL is built in $TOOLS_BIN.
need_tools() { local t; for t in "$@"; do [ -x "$TOOLS_BIN/$t" ] || die "$t is not built in $TOOLS_BIN: run 'make tools'"; done; }
