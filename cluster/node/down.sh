#!/usr/bin/env bash
# Stops the local node (cluster/node/up.sh) and leaves the host as it found
# it: the node's pods are deleted through the kubelet while it runs (so the
# CNI plugins tear their networks down), then every process is stopped by
# its recorded pid (containerd's shims by their pid files, whatever is left
# in the node's cgroups by cgroup.procs), mounts under $STATE are
# unmounted, the network namespace and the node's cgroups removed. The last
# node of the machine to stop restores the host sysctls the kubelet changed
# and removes the fixed host paths that did not exist before the first one
# started (see lib.sh), once empty; another node still running keeps them,
# minus this node's entries. Safe to run when nothing runs.
set -euo pipefail
# shellcheck source=cluster/node/lib.sh
source "$(dirname "$0")/lib.sh"

# Nothing new is bound to the node from here on.
stop scheduler
if running kubelet && running apiserver; then
	kubectl delete pods --all --all-namespaces --wait=false --grace-period 1 >/dev/null 2>&1 || true
	bound() { [ -n "$(kubectl get pods --all-namespaces -o 'jsonpath={.items[*].spec.nodeName}')" ]; }
	tasks() { [ -n "$(ctr tasks ls -q 2>/dev/null)" ]; }
	for _ in $(seq 1 120); do
		bound || tasks || break
		sleep 0.5
	done
fi
stop kube-proxy &
stop kubelet &
wait
if running containerd; then
	for c in $(ctr tasks ls -q 2>/dev/null); do ctr tasks kill -s KILL "$c" >/dev/null 2>&1 || true; done
fi
stop containerd apirelay
for f in "$NODE_DIR"/containerd/state/io.containerd.runtime.v2.task/*/*/shim.pid; do
	if [ -f "$f" ]; then kill -9 "$(cat "$f")" 2>/dev/null || true; fi
done
for f in /sys/fs/cgroup/*/"$CGROUP_ROOT"; do
	[ -d "$f" ] || continue
	xargs -r kill -9 < <(find "$f" -name cgroup.procs -exec cat {} + 2>/dev/null) 2>/dev/null || true
done

# Mounts under $STATE (pods' volumes, container root filesystems, network
# namespaces of pods), deepest first.
awk -v s="$STATE/" 'index($2, s) == 1 {print $2}' /proc/self/mounts | sort -r | while read -r m; do
	umount "$m" 2>/dev/null || umount -l "$m"
done
[ -e "/run/netns/$NETNS" ] && ip netns del "$NETNS"
for f in /sys/fs/cgroup/*/"$CGROUP_ROOT"; do
	[ -d "$f" ] && find "$f" -depth -type d -exec rmdir {} + 2>/dev/null
	[ -d "$f" ] && rmdir "$f"
done

# release: drops this node from the host record; the last node restores the
# host. A node whose network namespace is gone no longer runs.
release() {
	[ -d "$HOST_RECORD" ] || return 0
	rm -f "$HOST_RECORD/nodes/$NETNS"
	for f in "$HOST_RECORD"/nodes/*; do
		[ -f "$f" ] && [ ! -e "/run/netns/$(basename "$f")" ] && rm -f "$f"
	done
	# This node's leftovers in the shared paths: container log links into its
	# state, libcni results of its networks.
	find /var/log/containers -maxdepth 1 -lname "$STATE/*" -delete 2>/dev/null || true
	find /var/lib/cni -name "*-$NODE_ID-*" -delete 2>/dev/null || true
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
rm -rf "$NODE_DIR"
log "node down"
