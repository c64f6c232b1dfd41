package workload

import (
	"fmt"
	"net/netip"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/ipsecgw/provider-ipsec/apis/cluster/gateway/v1alpha1"
)

// Source-based routing of the gateway's own traffic: packets from the
// Neutron port's fixed IP (IKE, and ESP in UDP) leave through the tenant
// network's router, which holds the floating IP, not through the pod
// network's default route. The rule's priority comes after charon's
// routing table 220 (priority 220), so traffic for a CHILD_SA's remote
// subnet still takes charon's routes first.
const (
	// RouteTable is the routing table, in the pod's network namespace, of
	// traffic from the gateway's private address.
	RouteTable = 120
	// RulePriority is the priority of the rule that selects RouteTable.
	RulePriority = 1000
)

// networkInit is the pod's init container "network": it sets up the
// source-based routing above with iproute2 (in the gateway image) and,
// with data plane Libipsec, gives the secondary interface an address in
// every local traffic selector that holds none of the pod's addresses:
// kernel-libipsec routes a CHILD_SA only when charon has an address inside
// its local traffic selector
// (https://docs.strongswan.org/docs/5.9/plugins/kernel-libipsec.html). It
// needs NET_ADMIN only. Every command may run again in the same network
// namespace (an init container that is run twice) without error or
// duplicate.
func networkInit(gw *v1alpha1.Gateway) corev1.Container {
	p := gw.Spec.ForProvider
	return corev1.Container{
		Name:            "network",
		Image:           p.Images.StrongSwan,
		Command:         []string{"/bin/sh", "-euc", networkScript(gw)},
		SecurityContext: &corev1.SecurityContext{Capabilities: &corev1.Capabilities{Add: []corev1.Capability{"NET_ADMIN"}}},
	}
}

// networkScript returns the shell commands of networkInit, one per line.
func networkScript(gw *v1alpha1.Gateway) string { return addressScript(gw, "") }

// AddressLifetime is the valid and preferred lifetime, in seconds, of the
// addresses the active agent of replicas 2 gives net1: the agent's renew
// deadline (leader.DefaultRenewDeadline). The agent renews it after every
// renewal of the Lease; when the agent is killed or frozen the kernel
// removes the addresses, and the routes through them, before the Lease can
// pass to the other pod.
const AddressLifetime = 4

// addressScript is networkScript with lifetime (empty: permanent) after
// every address it adds.
func addressScript(gw *v1alpha1.Gateway, lifetime string) string {
	e := gw.Spec.ForProvider.Endpoint
	var lines []string
	add := func(format string, args ...any) { lines = append(lines, fmt.Sprintf(format, args...)) }
	if private, err := netip.ParseAddr(string(e.PrivateAddress)); err == nil {
		subnet := netip.PrefixFrom(private, int(e.PrefixLength)).Masked()
		add("ip route replace %s dev %s src %s table %d", subnet, SecondaryInterface, private, RouteTable)
		add("ip route replace default via %s dev %s table %d", e.Gateway, SecondaryInterface, RouteTable)
		add("ip rule del priority %d 2>/dev/null || true", RulePriority)
		add("ip rule add priority %d from %s lookup %d", RulePriority, private, RouteTable)
	}
	if gw.Spec.ForProvider.DataPlane == v1alpha1.DataPlaneLibipsec {
		for _, a := range libipsecAddresses(gw) {
			add("ip address replace %s/32 dev %s%s", a, SecondaryInterface, lifetime)
		}
	}
	return strings.Join(lines, "\n") + "\n"
}

// agentAddressUp returns the shell commands with which the active agent of
// replicas 2 takes the gateway's address: net1 gets the port's MAC (the
// CNI gives the pods of replicas 2 a random one, deployment), then up
// with the endpoint's address, which the static IPAM gives the single pod,
// then networkScript's routing and addresses, which need the address.
// Every address has the lifetime AddressLifetime: none is ever permanent,
// not even before the agent's first refresh.
func agentAddressUp(gw *v1alpha1.Gateway) string {
	e := gw.Spec.ForProvider.Endpoint
	lft := fmt.Sprintf(" valid_lft %d preferred_lft %d", AddressLifetime, AddressLifetime)
	return fmt.Sprintf("ip link set %s address %s\nip link set %s up\nip address replace %s/%d dev %s%s\n",
		SecondaryInterface, e.MACAddress, SecondaryInterface, e.PrivateAddress, e.PrefixLength, SecondaryInterface, lft) +
		addressScript(gw, lft)
}

// agentAddressDown returns the shell commands with which an agent gives
// the address up: every address of net1 goes, with the routes through it,
// and net1 goes down, so that it answers no ARP and sends nothing. It
// succeeds also when the addresses are gone already (their lifetime ended).
func agentAddressDown() string {
	return fmt.Sprintf("ip address flush dev %s\nip link set %s down\n", SecondaryInterface, SecondaryInterface)
}

// libipsecAddresses returns, for each distinct local traffic selector of
// gw's tunnels in which neither the private address nor an address
// returned before lies, the selector's first host address (the address
// itself for a /32), in the order the selectors first appear.
func libipsecAddresses(gw *v1alpha1.Gateway) []netip.Addr {
	var have []netip.Addr
	if a, err := netip.ParseAddr(string(gw.Spec.ForProvider.Endpoint.PrivateAddress)); err == nil {
		have = append(have, a)
	}
	var added []netip.Addr
	for _, t := range gw.Spec.ForProvider.Tunnels {
		for _, ts := range t.TrafficSelectors {
			p, err := netip.ParsePrefix(string(ts.Local))
			if err != nil {
				continue
			}
			p = p.Masked()
			if containsAny(p, have) {
				continue
			}
			a := p.Addr()
			if p.Bits() < 32 {
				a = a.Next()
			}
			have = append(have, a)
			added = append(added, a)
		}
	}
	return added
}

func containsAny(p netip.Prefix, addrs []netip.Addr) bool {
	for _, a := range addrs {
		if p.Contains(a) {
			return true
		}
	}
	return false
}
