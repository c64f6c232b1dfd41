package main

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// table is the nftables table fipnat owns in the router namespace.
const table = "fipnat"

// A mapping is where a floating IP leads: the fixed IP of the port it is
// associated with.
type mapping struct {
	// FixedIP is the port's IPv4 address on the tenant network.
	FixedIP string
	// PortID is the Neutron port's UUID, for the log.
	PortID string
}

// ruleset returns the nft script replacing the table with the mappings,
// keyed by floating IP address: inbound traffic to a floating IP is
// DNATed to its fixed IP, traffic from a mapped fixed IP leaving on the
// external interface is SNATed to its floating IP. Tenant traffic from any
// other address is not forwarded to the external network (a real router
// would SNAT it to its own gateway address, which no client site here
// would answer). One `nft -f` runs it as one transaction.
func ruleset(m map[string]mapping, tenant, external string) string {
	fips := slices.Sorted(maps.Keys(m))
	dnat, snat, fixed := make([]string, 0, len(fips)), make([]string, 0, len(fips)), make([]string, 0, len(fips))
	for _, fip := range fips {
		dnat = append(dnat, fmt.Sprintf("\t\tip daddr %s dnat to %s\n", fip, m[fip].FixedIP))
		snat = append(snat, fmt.Sprintf("\t\toifname %q ip saddr %s snat to %s\n", external, m[fip].FixedIP, fip))
		fixed = append(fixed, m[fip].FixedIP)
	}
	forward := fmt.Sprintf("\t\tiifname %q oifname %q drop\n", tenant, external)
	if len(fixed) > 0 {
		forward = fmt.Sprintf("\t\tiifname %q oifname %q ip saddr != { %s } drop\n", tenant, external, strings.Join(fixed, ", "))
	}
	return fmt.Sprintf(`table ip %[1]s {
}
delete table ip %[1]s
table ip %[1]s {
	chain prerouting {
		type nat hook prerouting priority dstnat; policy accept;
%[2]s	}
	chain postrouting {
		type nat hook postrouting priority srcnat; policy accept;
%[3]s	}
	chain forward {
		type filter hook forward priority filter; policy accept;
%[4]s	}
}
`, table, strings.Join(dnat, ""), strings.Join(snat, ""), forward)
}

// A change is one floating IP whose mapping differs between two polls.
type change struct {
	// FloatingIP is the address.
	FloatingIP string
	// Old and New are its mapping before and after; a zero mapping means
	// none.
	Old, New mapping
}

// diff returns the changes from old to new, by floating IP address.
func diff(old, new map[string]mapping) []change {
	var out []change
	for fip, n := range new {
		if o := old[fip]; o != n {
			out = append(out, change{FloatingIP: fip, Old: o, New: n})
		}
	}
	for fip, o := range old {
		if _, ok := new[fip]; !ok {
			out = append(out, change{FloatingIP: fip, Old: o})
		}
	}
	slices.SortFunc(out, func(a, b change) int { return strings.Compare(a.FloatingIP, b.FloatingIP) })
	return out
}
