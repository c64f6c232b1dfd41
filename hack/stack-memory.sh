#!/usr/bin/env bash
# Prints the memory (resident set size, MiB) of a running local stack, one
# line per process it recorded a pid file for — in $STATE (control plane,
# Crossplane, function, provider, node, site) and in $OS_STATE (Keystone,
# Neutron, MariaDB) — each with every process below it (the node's containerd holds
# the pods' shims and containers), and the total. Pages shared between
# processes count in each, so the total is an upper bound. The same STATE and
# OS_STATE as the stack's scripts (cluster/lib.sh).
#
#   hack/stack-memory.sh
set -euo pipefail
# shellcheck source=cluster/lib.sh
source "$(dirname "$0")/../cluster/lib.sh"

# tree PID prints PID and every descendant, one per line.
tree() {
	echo "$1"
	local c
	for c in $(pgrep -P "$1"); do tree "$c"; done
}

total=0
# show NAME PID...: one line for the processes PID... and their trees.
show() {
	local name=$1 kib=0 p r
	shift
	for p in $(for pid in "$@"; do tree "$pid"; done); do
		r=$(awk '/^VmRSS:/ {print $2}' "/proc/$p/status" 2>/dev/null || true)
		kib=$((kib + ${r:-0}))
	done
	total=$((total + kib))
	printf '%-24s %6d MiB\n' "$name" $((kib / 1024))
}
for f in "$STATE"/*.pid "$OS_STATE"/*.pid; do
	[ -f "$f" ] || continue
	pid=$(cat "$f")
	[ -d "/proc/$pid" ] && show "$(basename "$f" .pid)" "$pid"
done
# The pods: containerd's shims leave its tree; they name its socket.
mapfile -t shims < <(pgrep -f "containerd-shim-runc-v2 .*-address $STATE/node/")
[ ${#shims[@]} = 0 ] || show "pods (shims, containers)" "${shims[@]}"
printf '%-24s %6d MiB\n' total $((total / 1024))
