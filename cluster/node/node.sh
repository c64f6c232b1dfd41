#!/usr/bin/env bash
# Loses a node of the local stack as a VM that dies would be lost, and
# brings it back:
#
#   cluster/node/node.sh lose N     cuts node N's links (node0's peer in the
#                                   hub, its macvlan parent eth1, wherever
#                                   eth1's peer is) and freezes all of it:
#                                   kubelet, containerd, kube-proxy and the
#                                   shims by SIGSTOP, its pods by the cgroup
#                                   freezer. No drain, nothing is told: the
#                                   API sees the node's heartbeats stop.
#   cluster/node/node.sh return N   thaws it and restores its links: the
#                                   kubelet resumes where it stopped.
#
# The node's pods neither answer nor change while it is lost. Safe to run
# twice; down.sh returns a lost node before it stops it.
set -euo pipefail
# shellcheck source=cluster/node/lib.sh
source "$(dirname "$0")/lib.sh"

verb=${1:-}
if [[ ! $verb =~ ^(lose|return)$ || ! ${2:-} =~ ^[0-9]+$ ]]; then die "usage: $0 lose|return N"; fi
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
