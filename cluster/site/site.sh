#!/usr/bin/env bash
# The local stack's site (docs/site.md), built by the `site` command
# (cluster/site, over test/topology) as one process, "site", under the
# stack's supervisor. Same STATE and OS_STATE as the stack.
#
#   site.sh up | down | VERB [ARGS]   (VERB: status, vm-stop, vm-start,
#   client-sas, sas ROLE, probe, exec ROLE CMD..., standin-up,
#   standin-down, attach NETNS LINK INSTANCE; `site.sh help` lists them)
set -euo pipefail
# shellcheck source=cluster/node/lib.sh
source "$(dirname "$0")/../node/lib.sh"

SITE_DIR=$STATE/site
BIN=$SITE_DIR/bin/site
SITE=("$BIN" -state "$STATE" -prefix "ipsec-site-$STATE_ID-")

# The site lives with Neutron's real agents (AGENTS=1
# cluster/openstack/up.sh; docs/neutron-agents.md): ext-net is its router's
# uplink, the VM, the tenant service and each node's tenant interface are
# ports of tenant-net, the L3 agent does the floating IPs.

# attach_nodes makes each running node's tenant link (its macvlan parent's
# peer, "NETNS LINK" in $STATE/node/N/tenant-link: cluster/node/lib.sh) the
# tap of a tenant-net port of the node's instance ($STATE/node/N/instance-id),
# when it is not yet.
attach_nodes() {
	local f netns link
	for f in "$STATE"/node/*/tenant-link; do
		[ -f "$f" ] || continue
		read -r netns link <"$f"
		ip -n "$netns" link show "$link" >/dev/null 2>&1 || continue
		"${SITE[@]}" attach "$netns" "$link" "$(cat "$(dirname "$f")/instance-id")"
	done
}

case ${1:-} in
up)
	if running site; then
		attach_nodes
		log "site already running (namespaces ipsec-site-$STATE_ID-*, log $STATE/site.log)"
		exit 0
	fi
	[ "$(id -u)" = 0 ] || die "the site needs root (network namespaces, nftables, charon)"
	"$ROOT/hack/apt-install.sh" --host base strongswan
	[ -c /dev/net/tun ] || die "/dev/net/tun is missing: kernel-libipsec needs a TUN device"
	[ -f "$OS_STATE/agents.json" ] || die "no $OS_STATE/agents.json: run AGENTS=1 cluster/openstack/up.sh (with OS_STATE=$OS_STATE)"
	"$ROOT/cluster/openstack/runbook.py" show 203.0.113.10 >/dev/null ||
		die "floating IP 203.0.113.10 is not in the local Neutron: run cluster/openstack/runbook.py vm-up"
	t0=$(date +%s%N)
	mkdir -p "$SITE_DIR/bin"
	(cd "$ROOT" && CGO_ENABLED=0 go build -trimpath -o "$BIN" ./cluster/site)
	start site "${SITE[@]}" up -clouds "$OS_STATE/clouds.yaml" -psk "$ROOT/examples/claim/psk.yaml"
	(wait_ready site "the site" 60 "${SITE[@]}" status) || { stop site; die "the site did not come up; see $STATE/site.log"; }
	attach_nodes
	log "site up in $(elapsed "$t0")s: the client's tunnel to 203.0.113.10 is ESTABLISHED ('cluster/site/site.sh status')"
	;;
down)
	stop site
	[ ! -x "$BIN" ] || "${SITE[@]}" remove
	rm -rf "$SITE_DIR" "$STATE/site.log"
	rmdir "$STATE" 2>/dev/null || true
	log "site down"
	;;
*)
	[ -x "$BIN" ] || die "the site is not up (cluster/site/site.sh up)"
	exec "${SITE[@]}" "$@"
	;;
esac
