# shellcheck shell=bash disable=SC2034 # the variables are used by the scripts that source this
# Settings and helpers of the local node scripts (cluster/node/up.sh,
# down.sh), on top of the local stack's (cluster/local/lib.sh). Sourced, not
# run.
#
# The node (containerd, kubelet, kube-proxy) runs in a network namespace of
# its own, $NETNS, named after $STATE so that two stacks on one machine have
# two nodes; its addresses are private ones that exist only inside that
# namespace and the pods' namespaces. Its files live in $NODE_DIR, its pid
# and log files beside the control plane's in $STATE.
# shellcheck source=cluster/local/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../local/lib.sh"

NODE_DIR=$STATE/node
NODE_ID=$STATE_ID
NETNS=ipsec-node-$NODE_ID
NODE_NAME=local-node
# The node's address is $NODE_IP (cluster/local/lib.sh), on a veth pair
# inside $NETNS.
POD_CIDR=10.244.0.0/24
# The parent interface of macvlan NetworkAttachmentDefinitions, named as
# the Gateway's default (networkAttachment.master: eth1): a second veth pair
# inside $NETNS, whose other end ${MACVLAN_PARENT}p can be moved to join a
# tenant network.
MACVLAN_PARENT=eth1
# The kubelet's cgroups (cgroupfs driver, cgroup v1) go under this root in
# every controller, not the host-wide /kubepods.
CGROUP_ROOT=provider-ipsec-$NODE_ID
# Host-wide record of what the first running node found before it changed
# anything (sysctls the kubelet rewrites, fixed paths it creates), restored
# by the last one to stop; one file per running node under nodes/.
HOST_RECORD=/run/provider-ipsec-node
# The kubelet sets these host sysctls (protectKernelDefaults: false).
KUBELET_SYSCTLS="vm.overcommit_memory vm.panic_on_oom kernel.panic kernel.panic_on_oops kernel.keys.root_maxkeys kernel.keys.root_maxbytes"
# Fixed host paths the node's components create: containerd's shim sockets,
# libcni's result cache, the kubelet's container log links.
HOST_PATHS="/run/containerd /var/lib/cni /var/log/containers"
CNI_PLUGINS=/usr/lib/cni
SOCK=$NODE_DIR/containerd/containerd.sock
# The gateway pods' image (hack/images.sh), tagged as the Gateway's default.
GATEWAY_IMAGE=${GATEWAY_IMAGE:-$ROOT/_output/images/gateway-image.tar}

# "${IN_NODE[@]}" CMD... runs CMD in the node's network namespace (nsenter,
# not ip netns exec, which remounts /sys and hides the cgroup hierarchy). An
# array, not a function, so that a started process's pid is its own.
IN_NODE=(nsenter "--net=/run/netns/$NETNS" --)

ctr() { "$TOOLS_BIN/ctr" -a "$SOCK" -n k8s.io "$@"; }

# locked CMD...: runs CMD (a function too) holding the host record's lock.
locked() { (
	flock 9
	"$@"
) 9>"$HOST_RECORD.lock"; }
