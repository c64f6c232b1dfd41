# shellcheck shell=bash disable=SC2034 # the variables are used by the scripts that source this
# Settings and helpers of the local node scripts (cluster/node/up.sh,
# down.sh, node.sh), on top of the local stack's (cluster/local/lib.sh).
# Sourced, not run.
#
# The stack runs $NODES nodes (default 1), node-1 ... node-N. Each node
# (containerd, kubelet, kube-proxy) runs in a network namespace of its own,
# named after $STATE and its number, so that two stacks on one machine have
# their own; its addresses are private ones that exist only inside the
# namespaces the node scripts make. The nodes meet in a hub namespace
# ($HUB): a bridge with the API's address ($API_IP, where
# cluster/node/apirelay listens) and one veth pair per node (its node0, at
# $NODE_IP), which routes the nodes' pod networks to each other. Each node's
# files live in $NODE_DIR, what they share in $NODES_DIR, pid and log files
# beside the control plane's in $STATE (node<N>-kubelet.pid, ...).
#
# The tenant network's side: each node has a second veth pair whose inner
# end, $MACVLAN_PARENT, is the parent of its macvlan networks, and writes
# "NETNS LINK" to $NODE_DIR/tenant-link: the site (cluster/site) moves LINK
# out of NETNS onto its tenant bridge, and back before it goes.
# shellcheck source=cluster/local/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../local/lib.sh"

NODES=${NODES:-1}
[[ $NODES =~ ^[1-9][0-9]?$ ]] || die "NODES=$NODES: give the number of nodes, 1 to 99"
NODES_DIR=$STATE/node
HUB=ipsec-nodes-$STATE_ID
IN_HUB=(nsenter "--net=/run/netns/$HUB" --)
# The nodes' components and their pods reach the API through the relay at
# $API_IP in the hub, with this kubeconfig (the API server's certificate
# names "kubernetes", not $API_IP).
NODE_KUBECONFIG=$NODES_DIR/kubeconfig
# The parent interface of macvlan NetworkAttachmentDefinitions, named as
# the Gateway's default (networkAttachment.master: eth1).
MACVLAN_PARENT=eth1
# The cluster's pod network; node N's pods get the Nth /24 of it.
CLUSTER_CIDR=10.244.0.0/16
# Host-wide record of what the first running node found before it changed
# anything (sysctls the kubelet rewrites, fixed paths it creates), restored
# by the last one to stop; one file per running node under nodes/.
HOST_RECORD=/run/provider-ipsec-node
# The kubelet sets these host sysctls (protectKernelDefaults: false).
KUBELET_SYSCTLS="vm.overcommit_memory vm.panic_on_oom kernel.panic kernel.panic_on_oops kernel.keys.root_maxkeys kernel.keys.root_maxbytes"
# Fixed host paths the nodes' components create: containerd's shim sockets
# (/run/containerd/s, named by a hash of the containerd's address), libcni's
# result cache (named by network: each node's are named after $NODE_ID),
# the kubelet's container log links (to $NODE_DIR).
HOST_PATHS="/run/containerd /var/lib/cni /var/log/containers"
CNI_PLUGINS=/usr/lib/cni
# The gateway pods' image (hack/images.sh), which up.sh pushes to the
# registry as $GATEWAY_REF (cluster/local/lib.sh).
GATEWAY_IMAGE=${GATEWAY_IMAGE:-$ROOT/_output/images/gateway-image.tar}

# select_node N sets the variables of node N (node-N): NODE_ID names its
# things outside $STATE (network namespace NETNS, cgroups CGROUP_ROOT under
# every cgroup v1 controller, CNI networks); "${IN_NODE[@]}" CMD... runs CMD
# in NETNS (nsenter, not ip netns exec, which remounts /sys and hides the
# cgroups; an array, so that a started process's pid is its own); NODE_SV
# prefixes its processes' names; NODE_IP is on its node0, whose peer in the
# hub is HUB_LINK; TENANT_LINK is the peer of its $MACVLAN_PARENT.
select_node() {
	NODE_NAME=node-$1
	NODE_ID=node$1-$STATE_ID
	NETNS=ipsec-$NODE_ID
	IN_NODE=(nsenter "--net=/run/netns/$NETNS" --)
	NODE_SV=node$1-
	NODE_DIR=$NODES_DIR/$1
	NODE_IP=10.99.0.$(($1 + 1))
	HUB_LINK=node$1
	POD_CIDR=10.244.$(($1 - 1)).0/24
	TENANT_LINK=node$1-tenant
	CGROUP_ROOT=provider-ipsec-$NODE_ID
	SOCK=$NODE_DIR/containerd/containerd.sock
}
select_node 1

# nodes prints the numbers of the nodes that have files, in order.
nodes() { find "$NODES_DIR" -mindepth 1 -maxdepth 1 -type d -regex '.*/[0-9]+' -printf '%f\n' 2>/dev/null | sort -n; }

# ctr CMD... runs ctr on the selected node's containerd.
ctr() { "$TOOLS_BIN/ctr" -a "$SOCK" -n k8s.io "$@"; }

# push_image TAR NAME pushes the image tarball TAR to the stack's registry as
# NAME (REPOSITORY:TAG) and prints its reference there, from which the
# nodes' containerd pulls it (up.sh: the registry's hosts.toml).
push_image() {
	SSL_CERT_FILE=$STATE/pki/ca.crt "$NODES_DIR/bin/imagebuild" push "$1" "$(registry)/$2" >/dev/null
	echo "$(registry)/$2"
}

# locked CMD...: runs CMD (a function too) holding the host record's lock.
locked() { (
	flock 9
	"$@"
) 9>"$HOST_RECORD.lock"; }
