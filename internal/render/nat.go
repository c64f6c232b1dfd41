package render

import (
	"bytes"
	"fmt"
	"net/netip"
	"strings"

	"github.com/ipsecgw/provider-ipsec/apis/cluster/gateway/v1alpha1"
	"github.com/ipsecgw/provider-ipsec/internal/contract"
)

// clusterInterface is the pod's interface on the cluster network.
const clusterInterface = "eth0"

// natRules renders the nftables script for the gateway. Loaded with
// `nft -f`, it replaces the table atomically: the first two statements
// create the table if missing and delete it, in the same transaction as the
// new definition.
//
// Exposures: traffic from a remote subnet to insideAddress:port is
// DNATed to the target and masqueraded to the address of the interface it
// leaves by, so replies come back through the gateway. Reverse exposures:
// traffic arriving on the cluster interface at listenPort is DNATed to the
// client host and SNATed to sourceAddress so it matches the tunnel's
// traffic selectors. Hide NAT: traffic from a rule's tenant subnets to its
// remote subnets is SNATed to the presented address (or pool), after the
// reverse exposures, whose own SNAT a connection to a client address
// through the gateway's port must keep; conntrack translates the replies
// back. The gateway's own packets (IKE to a peer whose address lies in a
// remote subnet, say) keep their source: fib saddr type local. TCP MSS
// clamping: the forward chain lowers the MSS of the SYNs entering and
// leaving each tunnel (mssRules), in either mode.
func natRules(in Input, c *checked) []byte {
	var pre, post bytes.Buffer
	for _, e := range in.Spec.Exposures {
		inside := netip.MustParseAddr(string(e.InsideAddress))
		target := in.ServiceAddresses[e.Name]
		if e.Target.Address != nil {
			target = string(*e.Target.Address)
		}
		rs := remotesFor(c.pairs, inside)
		remotes := make([]string, 0, len(rs))
		for _, r := range rs {
			remotes = append(remotes, r.String())
		}
		fmt.Fprintf(&pre, "\t\t# exposure %s\n", e.Name)
		fmt.Fprintf(&pre, "\t\tip saddr { %s } ip daddr %s %s dport %d dnat to %s:%d\n",
			strings.Join(remotes, ", "), inside, proto(e.Protocol), e.Port, target, e.Target.Port)
		fmt.Fprintf(&post, "\t\t# exposure %s\n", e.Name)
		fmt.Fprintf(&post, "\t\tct status dnat ip daddr %s %s dport %d masquerade\n",
			target, proto(e.Protocol), e.Target.Port)
	}
	for _, r := range in.Spec.ReverseExposures {
		fmt.Fprintf(&pre, "\t\t# reverse exposure %s\n", r.Name)
		fmt.Fprintf(&pre, "\t\tiifname %q %s dport %d dnat to %s:%d\n",
			clusterInterface, proto(r.Protocol), r.ListenPort, r.ClientAddress, r.ClientPort)
		fmt.Fprintf(&post, "\t\t# reverse exposure %s\n", r.Name)
		fmt.Fprintf(&post, "\t\tct status dnat ip daddr %s %s dport %d snat to %s\n",
			r.ClientAddress, proto(r.Protocol), r.ClientPort, r.SourceAddress)
	}

	for _, h := range c.hides {
		fmt.Fprintf(&post, "\t\t# hide NAT %s\n", h.path)
		fmt.Fprintf(&post, "\t\tfib saddr type != local ip saddr { %s } ip daddr { %s } snat to %s\n", prefixes(h.tenant), prefixes(h.remote), presented(h.presented))
	}

	var b bytes.Buffer
	fmt.Fprintf(&b, "# NAT and TCP MSS rules of the gateway (mode %s), replacing table ip %s atomically.\n", mode(in.Spec.Mode), contract.NATTable)
	fmt.Fprintf(&b, "table ip %s {\n}\ndelete table ip %s\ntable ip %s {\n", contract.NATTable, contract.NATTable, contract.NATTable)
	fmt.Fprintf(&b, "\tchain prerouting {\n\t\ttype nat hook prerouting priority dstnat; policy accept;\n%s\t}\n", pre.String())
	fmt.Fprintf(&b, "\tchain postrouting {\n\t\ttype nat hook postrouting priority srcnat; policy accept;\n%s\t}\n", post.String())
	fmt.Fprintf(&b, "\tchain forward {\n\t\ttype filter hook forward priority mangle; policy accept;\n%s\t}\n", mssRules(in, c))
	b.WriteString("}\n")
	return b.Bytes()
}

// prefixes lists ps for an nftables anonymous set.
func prefixes(ps []netip.Prefix) string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.String()
	}
	return strings.Join(out, ", ")
}

// presented is the snat target of a hide NAT: one address, or the range
// of a pool, persistent so that a tenant host keeps its pool address.
func presented(p netip.Prefix) string {
	if p.IsSingleIP() {
		return p.Addr().String()
	}
	last := p.Addr().As4()
	for i, host := 0, 32-p.Bits(); host > 0; i, host = i+1, host-8 {
		last[3-i] |= byte(0xff >> max(0, 8-host))
	}
	return fmt.Sprintf("%s-%s persistent", p.Addr(), netip.AddrFrom4(last))
}

func proto(p v1alpha1.Protocol) string {
	if p == "" {
		return "tcp"
	}
	return string(p)
}

func mode(m v1alpha1.Mode) v1alpha1.Mode {
	if m == "" {
		return v1alpha1.ModeNAT
	}
	return m
}
