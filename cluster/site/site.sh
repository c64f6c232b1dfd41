#!/usr/bin/env bash
# Works the local stack's site (cluster/site/up.sh; see lib.sh for the
# picture). Same STATE and OS_STATE as up.sh.
#
#   site.sh status            namespaces, processes, the floating-IP NAT's
#                             table and the client's SAs
#   site.sh vm-stop           stops the VM gateway's charon (SIGTERM, as
#                             `systemctl stop strongswan` on the VM: it sends
#                             its IKE DELETEs): the runbook's cutover, after
#                             the floating IP left the VM's port (before,
#                             the DELETE reaches the client, which then waits
#                             for the new gateway to initiate); says so when
#                             it is not running
#   site.sh vm-start          starts it again with its configuration: the
#                             rollback; says so when it runs already
#   site.sh client-sas        swanctl --list-sas of the client site (VICI)
#   site.sh sas ROLE          swanctl --list-sas of the charon of ROLE
#                             (client, vm or gw)
#   site.sh probe [FLAGS]     runs cluster/site/probe in the client host: each
#                             change of the gateway carrying its connections to
#                             100.64.0.10:443, with the outage (probe -h)
#   site.sh mappings          the floating-IP NAT's nftables table and its
#                             log of mapping changes
#   site.sh exec ROLE CMD...  runs CMD in the namespace of ROLE (router,
#                             client, host, vm, svc or gw)
#   site.sh standin-up        a stand-in for the gateway pod where no node
#                             runs it: namespace gw on the tenant bridge at
#                             10.20.0.10 with a charon configured like the
#                             VM's (pid site-gw.pid, log site-gw.log);
#                             moving the floating IP to a Neutron port with
#                             that fixed IP makes it the client's peer
#   site.sh standin-down      removes the stand-in
#
# The client's configuration files are all in $SITE_DIR/client/etc (a
# cutover must leave them byte-identical); each charon's VICI socket is
# $SITE_DIR/ROLE/charon.vici.
set -euo pipefail
# shellcheck source=cluster/site/lib.sh
source "$(dirname "$0")/lib.sh"

usage() { sed -n '2,/^set -euo/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//' >&2; exit 2; }

# need_role ROLE fails unless ROLE's namespace exists.
need_role() { ns_exists "$1" || die "no namespace $(ns "$1"): is the site up (cluster/site/up.sh)?"; }

case ${1:-} in
status)
	for r in $SITE_ROLES; do
		ns_exists "$r" && echo "namespace $(ns "$r")"
	done
	for f in "$STATE"/site-*.pid; do
		[ -f "$f" ] || continue
		n=$(basename "$f" .pid)
		if running "$n"; then echo "$n: pid $(cat "$f"), log $STATE/$n.log"; else echo "$n: not running"; fi
	done
	if ns_exists router; then echo && in_ns router nft list table ip fipnat; fi
	if running site-client; then echo && swanctl_of client --list-sas --noblock; fi
	;;
vm-stop)
	if running site-vm; then
		stop site-vm
		log "the VM's charon stopped"
	else
		log "the VM's charon is not running"
	fi
	;;
vm-start)
	need_role vm
	if running site-vm; then
		log "the VM's charon runs already (pid $(cat "$STATE/site-vm.pid"))"
	else
		charon_start vm
		log "the VM's charon started (log $STATE/site-vm.log)"
	fi
	;;
client-sas)
	swanctl_of client --list-sas
	;;
sas)
	[ $# = 2 ] || usage
	swanctl_of "$2" --list-sas
	;;
probe)
	shift
	need_role host
	exec nsenter "--net=$(nspath host)" -- "$SITE_DIR/bin/probe" "$@"
	;;
mappings)
	need_role router
	in_ns router nft list table ip fipnat
	grep -E '"(mapped|unmapped)"' "$STATE/site-fipnat.log" || true
	;;
exec)
	[ $# -ge 3 ] || usage
	need_role "$2"
	role=$2
	shift 2
	exec nsenter "--net=$(nspath "$role")" -- "$@"
	;;
standin-up)
	need_role router
	ns_exists gw && die "the stand-in runs already ($(ns gw))"
	ip netns add "$(ns gw)"
	ip -n "$(ns gw)" link set lo up
	ip -n "$(ns router)" link add gw type veth peer name eth0 netns "$(ns gw)"
	ip -n "$(ns router)" link set gw master "$TENANT_BRIDGE" up
	ip -n "$(ns gw)" link set eth0 up
	ip -n "$(ns gw)" addr add "$GATEWAY_IP/24" dev eth0
	ip -n "$(ns gw)" addr add "$INSIDE_OWN/32" dev lo
	ip -n "$(ns gw)" route add default via "$ROUTER_IP"
	in_ns gw sysctl -qw net.ipv4.ip_forward=1
	gateway_conf gw "$GATEWAY_IP"
	in_ns gw nft -f "$SITE_DIR/gw/etc/nat.nft"
	charon_start gw
	log "stand-in gateway $GATEWAY_IP up ($(ns gw), log $STATE/site-gw.log)"
	;;
standin-down)
	stop -KILL site-gw
	ns_exists gw && ip netns del "$(ns gw)"
	rm -rf "$SITE_DIR/gw" "$STATE/site-gw.log"
	log "stand-in gateway down"
	;;
*)
	usage
	;;
esac
