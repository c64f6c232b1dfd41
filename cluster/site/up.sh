#!/usr/bin/env bash
# Brings up the local stack's site (see lib.sh for the picture): the router
# namespace R with the tenant network's bridge (10.20.0.1/24) and the
# external link (198.51.100.1/24), whose NAT cluster/site/fipnat keeps
# from the local Neutron's floating IPs; the client site (a strongSwan
# charon at 198.51.100.7 and 192.168.10.1, configured from its parameter
# sheet by cluster/site/sheet, initiating to 203.0.113.10 with DPD restart)
# and a client host 192.168.10.5 behind it; the runbook's VM gateway at
# 10.20.0.5 (a charon configured by hand as the VM was, publishing the
# tenant service 10.20.0.50:443 as 100.64.0.10:443 to the client); the
# tenant service (cluster/site/echo) at 10.20.0.50. When nodes run
# (cluster/node/up.sh), their macvlan parents' peers join the tenant bridge,
# so the gateway pods' net1 is on the tenant network.
#
# Every charon uses kernel-libipsec (ESP in UDP over /dev/net/tun): this
# kernel has no ESP. Ends when the client's tunnel is ESTABLISHED with
# whoever holds the floating IP (the VM, after runbook.py vm-up).
#
# Needs root (it installs strongSwan, nftables and conntrack when missing:
# the purpose strongswan of hack/packages/host.txt), the local Keystone +
# Neutron (cluster/openstack/up.sh, with the same OS_STATE) and the VM's
# port holding the floating IP (cluster/openstack/runbook.py vm-up). A second run while the site runs
# only attaches a node started since, and says so. A failed bring-up keeps
# its logs in $STATE/site.failed and removes what it made (down.sh).
set -euo pipefail
# shellcheck source=cluster/site/lib.sh
source "$(dirname "$0")/lib.sh"

# attach_node moves each running node's tenant link (cluster/node/lib.sh:
# "NETNS LINK" in $STATE/node/N/tenant-link) into R, onto the tenant
# bridge, when it is not there yet.
attach_node() {
	local netns link
	for f in "$STATE"/node/*/tenant-link; do
		[ -f "$f" ] || continue
		read -r netns link <"$f"
		ip -n "$netns" link show "$link" >/dev/null 2>&1 || continue
		ip -n "$netns" link set "$link" netns "$(ns router)"
		ip -n "$(ns router)" link set "$link" master "$TENANT_BRIDGE" up
		log "site: $netns's $link is on the tenant network (its gateway pods' net1)"
	done
}

if running site-fipnat; then
	attach_node
	log "site already running (namespaces $NS_PREFIX*, fipnat log $STATE/site-fipnat.log)"
	exit 0
fi
[ "$(id -u)" = 0 ] || die "the site needs root (network namespaces, nftables, charon)"
"$ROOT/hack/apt-install.sh" --host base strongswan
[ -c /dev/net/tun ] || die "/dev/net/tun is missing: kernel-libipsec needs a TUN device"
[ -f "$OS_STATE/clouds.yaml" ] || die "no $OS_STATE/clouds.yaml: run cluster/openstack/up.sh (with OS_STATE=$OS_STATE)"
"$ROOT/cluster/openstack/runbook.py" show "$FLOATING_IP" >/dev/null ||
	die "floating IP $FLOATING_IP is not in the local Neutron: run cluster/openstack/runbook.py vm-up"
# Leftovers of a site that died without down.sh.
"$ROOT/cluster/site/down.sh" >/dev/null

on_failure "$ROOT/cluster/site/down.sh" "site bring-up" "$STATE/site.failed" 'site-*.log'
t0=$(date +%s%N)
mkdir -p "$SITE_DIR/bin"

log "site: network namespaces $NS_PREFIX{router,client,host,vm,svc}"
for r in router client host vm svc; do
	ip netns add "$(ns "$r")"
	ip -n "$(ns "$r")" link set lo up
done
R=$(ns router)
# link A_ROLE A_IF B_ROLE B_IF: a veth pair between two namespaces, made in
# A's, so that no link ever exists in the host's.
link() {
	ip -n "$(ns "$1")" link add "$2" type veth peer name "$4" netns "$(ns "$3")"
	ip -n "$(ns "$1")" link set "$2" up
	ip -n "$(ns "$3")" link set "$4" up
}
ip -n "$R" link add "$TENANT_BRIDGE" type bridge
ip -n "$R" link set "$TENANT_BRIDGE" up
ip -n "$R" addr add "$ROUTER_IP/24" dev "$TENANT_BRIDGE"
for r in vm svc; do
	link router "$r" "$r" eth0
	ip -n "$R" link set "$r" master "$TENANT_BRIDGE"
done
link router "$EXTERNAL_IF" client wan
ip -n "$R" addr add "$EXTERNAL_ROUTER_IP/24" dev "$EXTERNAL_IF"
link client lan host eth0
ip -n "$(ns vm)" addr add "$VM_IP/24" dev eth0
ip -n "$(ns vm)" addr add "$INSIDE_OWN/32" dev lo
ip -n "$(ns svc)" addr add "$SERVICE_IP/24" dev eth0
ip -n "$(ns client)" addr add "$CLIENT_IP/24" dev wan
ip -n "$(ns client)" addr add "$CLIENT_LAN_IP/24" dev lan
ip -n "$(ns host)" addr add "$HOST_IP/24" dev eth0
for r in vm svc; do ip -n "$(ns "$r")" route add default via "$ROUTER_IP"; done
ip -n "$(ns client)" route add default via "$EXTERNAL_ROUTER_IP"
ip -n "$(ns host)" route add default via "$CLIENT_LAN_IP"
for r in router client vm; do in_ns "$r" sysctl -qw net.ipv4.ip_forward=1; done
attach_node

log "site: building fipnat, echo, probe and sheet"
(cd "$ROOT" && CGO_ENABLED=0 go build -trimpath -o "$SITE_DIR/bin/" \
	./cluster/site/fipnat ./cluster/site/echo ./cluster/site/probe ./cluster/site/sheet)
sed -n 's/^ *psk: *//p' "$PSK_SOURCE" | head -1 >"$SITE_DIR/psk"
[ -s "$SITE_DIR/psk" ] || die "no psk in $PSK_SOURCE"
chmod 600 "$SITE_DIR/psk"

log "site: floating-IP NAT (fipnat: Neutron of $OS_STATE, rules in $R)"
start site-fipnat "$SITE_DIR/bin/fipnat" -clouds "$OS_STATE/clouds.yaml" -netns "$(nspath router)" \
	-tenant "$TENANT_BRIDGE" -external "$EXTERNAL_IF"
wait_for "fipnat's rules" 30 grep -q '"rules in place"' "$STATE/site-fipnat.log"

log "site: tenant service $SERVICE_IP:$SERVICE_PORT"
start site-echo nsenter "--net=$(nspath svc)" -- "$SITE_DIR/bin/echo" -listen ":$SERVICE_PORT"

log "site: VM gateway $VM_IP (charon, exposure $INSIDE_SERVICE:$SERVICE_PORT -> $SERVICE_IP:$SERVICE_PORT)"
gateway_conf vm "$VM_IP"
in_ns vm nft -f "$SITE_DIR/vm/etc/nat.nft"
charon_start vm

log "site: client site $CLIENT_IP (charon from its parameter sheet) and client host $HOST_IP"
strongswan_conf client
"$SITE_DIR/bin/sheet" -o "$SITE_DIR/client/etc/swanctl/swanctl.conf" -psk-file "$SITE_DIR/psk" -name "$CONN" \
	-local "$CLIENT_IP" -remote "$FLOATING_IP" -local-ts "$CLIENT_SUBNET" -remote-ts "$INSIDE_CIDR"
charon_start client

established() { swanctl_of client --list-sas --noblock 2>/dev/null | grep -q ESTABLISHED; }
wait_for "the client's tunnel" 30 established

succeeded
log "site up in $(elapsed "$t0")s: the client's tunnel to $FLOATING_IP is ESTABLISHED ('cluster/site/site.sh' for more)"
