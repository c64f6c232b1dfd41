package topology

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"os/exec"
	"slices"
	"strings"
	"time"
)

// natTable is the nftables table the NAT owns in the router's namespace.
const natTable = "fipnat"

// A Mapping is where a floating IP leads: the fixed IP of the port it is
// associated with.
type Mapping struct {
	// FixedIP is the port's IPv4 address on the tenant network.
	FixedIP string
	// PortID is the Neutron port's UUID, for the log.
	PortID string
}

// A NAT is the router's floating-IP NAT, standing in for Neutron's L3
// agent: each floating IP associated with a port is DNATed 1:1 to the
// port's fixed IP and that fixed IP SNATed back to the floating IP on the
// way out to the external network; a disassociated floating IP loses its
// mapping. When a mapping changes it deletes the conntrack entries of the
// floating IP and the fixed IPs involved, as the L3 agent does, so that
// flows already seen (IKE and NAT-T on UDP 500/4500) follow the new
// mapping instead of the old port. Nothing more: no security groups.
type NAT struct {
	// NS is the router's namespace.
	NS string
	// Tenant and External are the router's interfaces on the tenant and
	// the external network.
	Tenant, External string
	// Log gets one line per mapping change.
	Log *slog.Logger

	// applied is the mapping in place, keyed by floating IP; nil before
	// the first Apply.
	applied map[string]Mapping
}

// Loop reads the mappings with list every interval and applies their
// changes until ctx ends. A failed read is logged once until a read
// succeeds again, and leaves the rules as they are, as the L3 agent does
// while the server is away; a failed apply ends the loop.
func (n *NAT) Loop(ctx context.Context, list func(context.Context) (map[string]Mapping, error), interval time.Duration) error {
	failing := false
	for {
		m, err := list(ctx)
		switch {
		case ctx.Err() != nil:
			return nil //nolint:nilerr // ctx ended: list's error is the way it ended, not a failure of the loop
		case err != nil && !failing:
			n.Log.Warn("cannot read the floating IPs; keeping the rules", "error", err)
			failing = true
		case err == nil:
			if failing {
				n.Log.Info("reading the floating IPs again")
				failing = false
			}
			if err := n.Apply(m); err != nil {
				return err
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(interval):
		}
	}
}

// Apply replaces the table when m, keyed by floating IP, differs from what
// is applied, then deletes the conntrack entries of every changed mapping
// and logs each ("mapped", "unmapped"); the first Apply logs "rules in
// place".
func (n *NAT) Apply(m map[string]Mapping) error {
	changes := diff(n.applied, m)
	if n.applied != nil && len(changes) == 0 {
		return nil
	}
	cmd := n.command("nft", "-f", "-")
	cmd.Stdin = strings.NewReader(ruleset(m, n.Tenant, n.External))
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("nft -f in %s: %w: %s", n.NS, err, out)
	}
	if n.applied == nil {
		n.Log.Info("rules in place", "mappings", len(m))
	}
	n.applied = m
	for _, c := range changes {
		for _, a := range []string{c.FloatingIP, c.Old.FixedIP, c.New.FixedIP} {
			if err := n.forget(a); err != nil {
				return err
			}
		}
		if c.New.FixedIP == "" {
			n.Log.Info("unmapped", "floating_ip", c.FloatingIP, "previous", c.Old.FixedIP)
			continue
		}
		n.Log.Info("mapped", "floating_ip", c.FloatingIP, "fixed_ip", c.New.FixedIP, "port_id", c.New.PortID, "previous", c.Old.FixedIP)
	}
	return nil
}

// Table returns the NAT's nftables table as nft lists it.
func (n *NAT) Table() (string, error) {
	out, err := n.command("nft", "list", "table", "ip", natTable).CombinedOutput()
	return string(out), err
}

// forget deletes the conntrack entries with address a as original source
// or destination or as reply destination (the SNATed side); nothing when a
// is empty.
func (n *NAT) forget(a string) error {
	if a == "" {
		return nil
	}
	for _, dir := range []string{"--orig-src", "--orig-dst", "--reply-dst"} {
		out, err := n.command("conntrack", "-D", dir, a).CombinedOutput()
		// conntrack exits 1 when there was nothing to delete.
		if err != nil && !strings.Contains(string(out), "flow entries have been deleted") {
			return fmt.Errorf("conntrack -D %s %s: %w: %s", dir, a, err, out)
		}
	}
	return nil
}

// command returns a command running args in the router's namespace.
func (n *NAT) command(args ...string) *exec.Cmd {
	return exec.Command("nsenter", append([]string{"--net=" + nsPath(n.NS), "--"}, args...)...)
}

// ruleset returns the nft script replacing the table with the mappings,
// keyed by floating IP address: inbound traffic to a floating IP is
// DNATed to its fixed IP, traffic from a mapped fixed IP leaving on the
// external interface is SNATed to its floating IP. Tenant traffic from any
// other address is not forwarded to the external network (a real router
// would SNAT it to its own gateway address, which no client site here
// would answer). One `nft -f` runs it as one transaction.
func ruleset(m map[string]Mapping, tenant, external string) string {
	fips := slices.Sorted(maps.Keys(m))
	dnat := make([]string, 0, len(fips))
	snat := make([]string, 0, len(fips))
	fixed := make([]string, 0, len(fips))
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
`, natTable, strings.Join(dnat, ""), strings.Join(snat, ""), forward)
}

// A change is one floating IP whose mapping differs between two reads.
type change struct {
	// FloatingIP is the address.
	FloatingIP string
	// Old and New are its mapping before and after; a zero Mapping means
	// none.
	Old, New Mapping
}

// diff returns the changes from old to new, by floating IP address.
func diff(old, new map[string]Mapping) []change {
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
