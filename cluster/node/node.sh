#!/usr/bin/env bash
# Loses a node of the local stack as a VM that dies is lost, and brings it
# back. No drain, nothing is told: the API sees its heartbeats stop.
#
#   cluster/node/node.sh lose N     node N's links go down (node0's peer in
#                                   the hub, eth1) and all of it freezes:
#                                   its processes by SIGSTOP, its pods by
#                                   the cgroup freezer
#   cluster/node/node.sh return N   thaws it and brings its links back up:
#                                   the kubelet resumes where it stopped
#   cluster/node/node.sh tag IMAGE NAME
#                                   pushes the gateway image IMAGE (the
#                                   stack's registry reference of
#                                   $GATEWAY_IMAGE) to the registry again as
#                                   NAME: a new image for the pods that name
#                                   it (a rollout), with the same content,
#                                   pulled by the nodes as any other
set -euo pipefail
# shellcheck source=cluster/node/lib.sh
source "$(dirname "$0")/lib.sh"

verb=${1:-}
if [ "$verb" = tag ]; then
	[ $# = 3 ] || die "usage: $0 tag IMAGE NAME"
	[ "$2" = "$(registry)/$GATEWAY_REF" ] || die "$2 is not the gateway image $(registry)/$GATEWAY_REF"
	[ "${3#"$(registry)/"}" != "$3" ] || die "$3 is not in the stack's registry $(registry)"
	push_image "$GATEWAY_IMAGE" "${3#"$(registry)/"}" >/dev/null
	log "image $2 pushed again as $3"
	exit 0
fi
if [[ ! $verb =~ ^(lose|return)$ || ! ${2:-} =~ ^[0-9]+$ ]]; then die "usage: $0 lose|return N, or $0 tag IMAGE NAME"; fi
select_node "$2"
[ -e "/run/netns/$NETNS" ] || die "node $NODE_NAME does not run (no network namespace $NETNS)"
freezer=/sys/fs/cgroup/freezer/$CGROUP_ROOT/freezer.state
[ -f "$freezer" ] || die "no cgroup v1 freezer for $NODE_NAME at $freezer"
# The node's own processes: those in its network namespace.
procs() { ip netns pids "$NETNS"; }
if [ "$verb" = lose ]; then
	"${IN_HUB[@]}" ip link set "$HUB_LINK" down
	"${IN_NODE[@]}" ip link set "$MACVLAN_PARENT" down
	procs | xargs -r kill -STOP
	echo FROZEN >"$freezer"
	touch "$NODE_DIR/lost"
	log "$NODE_NAME lost: links down, processes and pods frozen"
else
	echo THAWED >"$freezer"
	procs | xargs -r kill -CONT
	"${IN_NODE[@]}" ip link set "$MACVLAN_PARENT" up
	"${IN_HUB[@]}" ip link set "$HUB_LINK" up
	rm -f "$NODE_DIR/lost"
	log "$NODE_NAME returned: links up, processes and pods thawed"
fi
