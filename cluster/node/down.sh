#!/usr/bin/env bash
# Stops the local nodes (cluster/node/up.sh) and leaves the host as it found
# it: a lost node (node.sh lose) returns first; the nodes' pods are deleted
# through their kubelets while they run (so the CNI plugins tear their
# networks down), then every process is stopped by its recorded pid
# (containerd's shims by their pid files, whatever is left in a node's
# cgroups by cgroup.procs), mounts under $STATE are unmounted, the network
# namespaces and the nodes' cgroups removed. The last node of the machine
# to stop restores the host sysctls the kubelet changed and removes the
# fixed host paths that did not exist before the first one started (see
# lib.sh), once empty; another node still running keeps them, minus this
# stack's entries. Safe to run when nothing runs.
set -euo pipefail
# shellcheck source=cluster/node/lib.sh
source "$(dirname "$0")/lib.sh"

# Nothing new is bound to a node from here on.
stop scheduler
kubelets=0
for i in $(nodes); do
	[ ! -f "$NODES_DIR/$i/lost" ] || "$ROOT/cluster/node/node.sh" return "$i" >/dev/null
	select_node "$i"
	running "${NODE_SV}kubelet" && kubelets=1
done
if [ "$kubelets" = 1 ] && running apiserver; then
	kubectl delete pods --all --all-namespaces --wait=false --grace-period 1 >/dev/null 2>&1 || true
	bound() { [ -n "$(kubectl get pods --all-namespaces -o 'jsonpath={.items[*].spec.nodeName}')" ]; }
	tasks() { local i; for i in $(nodes); do (select_node "$i" && [ -n "$(ctr tasks ls -q 2>/dev/null)" ]) && return 0; done; return 1; }
	for _ in $(seq 1 120); do
		bound || tasks || break
		sleep 0.5
	done
fi

# node_down N stops node N's processes.
node_down() {
	select_node "$1"
	stop "${NODE_SV}kube-proxy" &
	stop "${NODE_SV}kubelet" &
	wait
	if running "${NODE_SV}containerd"; then
		for c in $(ctr tasks ls -q 2>/dev/null); do ctr tasks kill -s KILL "$c" >/dev/null 2>&1 || true; done
	fi
	stop "${NODE_SV}containerd"
	for f in "$NODE_DIR"/containerd/state/io.containerd.runtime.v2.task/*/*/shim.pid; do
		if [ -f "$f" ]; then kill -9 "$(cat "$f")" 2>/dev/null || true; fi
	done
	for f in /sys/fs/cgroup/*/"$CGROUP_ROOT"; do
		[ -d "$f" ] || continue
		xargs -r kill -9 < <(find "$f" -name cgroup.procs -exec cat {} + 2>/dev/null) 2>/dev/null || true
	done
}
for i in $(nodes); do node_down "$i" & done
wait
stop registryrelay apirelay

# Mounts under $STATE (pods' volumes, container root filesystems, network
# namespaces of pods), deepest first.
awk -v s="$STATE/" 'index($2, s) == 1 {print $2}' /proc/self/mounts | sort -r | while read -r m; do
	umount "$m" 2>/dev/null || umount -l "$m"
done
for n in /run/netns/ipsec-node*-"$STATE_ID" /run/netns/"$HUB"; do
	[ -e "$n" ] && ip netns del "$(basename "$n")"
done
for f in /sys/fs/cgroup/*/provider-ipsec-node*-"$STATE_ID"; do
	[ -d "$f" ] && find "$f" -depth -type d -exec rmdir {} + 2>/dev/null
	[ -d "$f" ] && rmdir "$f"
done

# release: drops this stack's nodes from the host record; the last node
# restores the host. A node whose network namespace is gone no longer runs.
release() {
	[ -d "$HOST_RECORD" ] || return 0
	for f in "$HOST_RECORD"/nodes/*; do
		[ -f "$f" ] && [ ! -e "/run/netns/$(basename "$f")" ] && rm -f "$f"
	done
	# This stack's leftovers in the shared paths: container log links into
	# its state, libcni results of its nodes' networks.
	find /var/log/containers -maxdepth 1 -lname "$STATE/*" -delete 2>/dev/null || true
	find /var/lib/cni -name "*-node*-$STATE_ID-*" -delete 2>/dev/null || true
	[ -z "$(ls -A "$HOST_RECORD/nodes")" ] || return 0
	if [ -f "$HOST_RECORD/sysctl" ]; then
		while IFS= read -r kv; do sysctl -qw "$kv"; done <"$HOST_RECORD/sysctl"
		# Only what is left empty: a containerd of someone else's may have
		# started to use these paths since.
		while IFS= read -r p; do
			find "$p" -depth -type d -empty -delete 2>/dev/null || true
			[ ! -e "$p" ] || log "node: $p is not empty, left in place"
		done <"$HOST_RECORD/created"
	fi
	rm -rf "$HOST_RECORD"
}
[ -d "$HOST_RECORD" ] && locked release
[ -d "$HOST_RECORD" ] || rm -f "$HOST_RECORD.lock"
rm -rf "$NODES_DIR"
log "nodes down"
