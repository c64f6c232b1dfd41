package topology

import (
	"fmt"
	"net/netip"
)

// natTable is the nftables table of Start's NAT in the router's namespace.
const natTable = "fipnat"

// natRuleset returns the nft script of Start's router: a fixed 1:1 NAT
// between the external network and the gateway, the rules the L3 agent's
// qrouter has for a floating IP associated with a port: traffic to fip is
// DNATed to fixed, traffic from fixed leaving on the external interface is
// SNATed to fip with fully random source ports (the qrouter's SNAT
// --random-fully: the peer sees the gateway's IKE from another port than
// 500). Tenant traffic from any other address is not forwarded to the
// external network (a real router would SNAT it to its own gateway
// address, which no client site here would answer).
//
// It stands for nothing that changes: a Start topology's mapping is made
// once, before any charon runs, and never moves, so what the real qrouter
// does when a floating IP moves (its conntrack entries, its delays) cannot
// arise here; the tests of floating IPs that move run behind the real L3
// agent (test/e2e, TestTopologyUplink, TestNeutronAgentsEnforcePortSecurity).
func natRuleset(fip, fixed netip.Addr, tenant, external string) string {
	return fmt.Sprintf(`table ip %[1]s {
	chain prerouting {
		type nat hook prerouting priority dstnat; policy accept;
		ip daddr %[2]s dnat to %[3]s
	}
	chain postrouting {
		type nat hook postrouting priority srcnat; policy accept;
		oifname %[5]q ip saddr %[3]s snat to %[2]s fully-random
	}
	chain forward {
		type filter hook forward priority filter; policy accept;
		iifname %[4]q oifname %[5]q ip saddr != %[3]s drop
	}
}
`, natTable, fip, fixed, tenant, external)
}
