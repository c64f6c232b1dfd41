package nodeaddresspairs

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/portsecurity"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
	corev1 "k8s.io/api/core/v1"

	"github.com/ipsecgw/provider-ipsec/apis/cluster/networking/v1alpha1"
)

// neutronPort is a port as Neutron returns it, with the port-security
// extension's port_security_enabled.
type neutronPort struct {
	ports.Port
	portsecurity.PortSecurityExt
}

// A pair is an allowed address pair: an address or CIDR and a MAC, both
// in Neutron's spelling (lower-case MAC).
type pair struct{ IP, MAC string }

func (p pair) String() string { return p.IP + "@" + p.MAC }

// canonical spells an address pair's IP as Neutron compares it: a host
// prefix (/32, /128) as the bare address, so that "10.0.0.5/32" and
// "10.0.0.5" are the same pair.
func canonical(ip string) string {
	if pf, err := netip.ParsePrefix(ip); err == nil && pf.IsSingleIP() {
		return pf.Addr().String()
	}
	return ip
}

func pairOf(ip, mac string) pair { return pair{IP: canonical(ip), MAC: strings.ToLower(mac)} }

// desiredPairs are the pairs every selected node's port needs: each fixed
// IP of the gateway's port and each CIDR, all with the gateway's MAC.
func desiredPairs(gw *neutronPort, cidrs []v1alpha1.CIDR) []pair {
	out := make([]pair, 0, len(gw.FixedIPs)+len(cidrs))
	for _, f := range gw.FixedIPs {
		out = append(out, pairOf(f.IPAddress, gw.MACAddress))
	}
	for _, c := range cidrs {
		out = append(out, pairOf(string(c), gw.MACAddress))
	}
	return out
}

// instanceID returns the Nova instance UUID of a node's spec.providerID as
// the OpenStack cloud provider writes it: openstack:///<UUID>, or
// openstack://<region>/<UUID>.
func instanceID(providerID string) (string, bool) {
	rest, ok := strings.CutPrefix(providerID, "openstack://")
	if !ok {
		return "", false
	}
	i := strings.LastIndex(rest, "/")
	id := rest[i+1:]
	if i < 0 || id == "" {
		return "", false
	}
	return id, true
}

// target is a selected node's instance.
type target struct{ node, instance string }

// targets maps the nodes to their instances; the nodes that cannot be
// mapped come back as problems naming the node, the field and the fix.
func targets(nodes []corev1.Node) ([]target, []string) {
	var out []target
	var problems []string
	for _, n := range nodes {
		id, ok := instanceID(n.Spec.ProviderID)
		if !ok {
			problems = append(problems, fmt.Sprintf("node %s: spec.providerID %q is not openstack:///<instance UUID>: run the OpenStack cloud provider (or set it so), or leave the node out with spec.forProvider.nodeSelector", n.Name, n.Spec.ProviderID))
			continue
		}
		out = append(out, target{node: n.Name, instance: id})
	}
	return out, problems
}

// A change is what one node port needs: the pairs to add and to remove,
// and the pairs of this resource it holds afterwards (the record).
type change struct {
	node   string
	port   *neutronPort
	add    []pair
	remove []pair
	ours   []pair
	// before are the pairs of this resource it holds now.
	before []pair
	// selected says the port is a selected node's.
	selected bool
}

func (c *change) needed() bool { return len(c.add) > 0 || len(c.remove) > 0 }

// pairsOf returns a port's allowed address pairs.
func pairsOf(p *neutronPort) []pair {
	out := make([]pair, 0, len(p.AllowedAddressPairs))
	for _, ap := range p.AllowedAddressPairs {
		out = append(out, pairOf(ap.IPAddress, ap.MACAddress))
	}
	return out
}

// plan compares the network's ports with what the selected nodes need.
// want is the desired pairs (none while deleting or when the gateway's
// port is gone), tg the selected nodes' instances, netPorts the ports of
// the gateway's network and owned the record of status.atProvider.nodePorts.
// A selected node's port with port security on gets every wanted pair it
// lacks; a pair in the record that the port still holds and no longer
// needs is removed; a pair the port had before this resource added it is
// not in the record and never removed. It returns a change per port that
// is selected or holds a pair of the record (sorted by node, then port),
// and the selected nodes without a port on the network.
func plan(want []pair, tg []target, netPorts []neutronPort, owned []v1alpha1.NodePortPairs) ([]change, []string) {
	byInstance := map[string][]*neutronPort{}
	byID := map[string]*neutronPort{}
	for i := range netPorts {
		p := &netPorts[i]
		byInstance[p.DeviceID] = append(byInstance[p.DeviceID], p)
		byID[p.ID] = p
	}
	changes := map[string]*change{}
	var unmapped []string
	for _, t := range tg {
		ps := byInstance[t.instance]
		if len(ps) == 0 {
			unmapped = append(unmapped, t.node)
		}
		for _, p := range ps {
			c := &change{node: t.node, port: p, selected: true}
			// A port without port security drops nothing and takes
			// no pairs (Neutron refuses them).
			if p.PortSecurityEnabled {
				c.add = want
			}
			changes[p.ID] = c
		}
	}
	for _, o := range owned {
		p, ok := byID[o.PortID]
		if !ok {
			// A port that is gone took its pairs with it.
			continue
		}
		c, ok := changes[p.ID]
		if !ok {
			c = &change{node: o.Node, port: p}
			changes[p.ID] = c
		}
		for _, op := range o.Pairs {
			c.before = append(c.before, pairOf(op.IPAddress, op.MACAddress))
		}
	}
	out := make([]change, 0, len(changes))
	for _, c := range changes {
		c.settle()
		out = append(out, *c)
	}
	slices.SortFunc(out, func(a, b change) int {
		if a.node != b.node {
			return strings.Compare(a.node, b.node)
		}
		return strings.Compare(a.port.ID, b.port.ID)
	})
	return out, unmapped
}

// settle turns c.add (the wanted pairs) and c.before (the record's pairs
// of the port) into what the port lacks, what of the record it holds, what
// of that it no longer needs, and the record afterwards.
func (c *change) settle() {
	present := pairsOf(c.port)
	wanted := c.add
	c.before = slices.DeleteFunc(c.before, func(p pair) bool { return !slices.Contains(present, p) })
	c.add = nil
	for _, w := range wanted {
		if !slices.Contains(present, w) {
			c.add = append(c.add, w)
		}
	}
	for _, b := range c.before {
		if slices.Contains(wanted, b) {
			c.ours = append(c.ours, b)
		} else {
			c.remove = append(c.remove, b)
		}
	}
	c.ours = append(c.ours, c.add...)
}

// newPairs is the port's list of allowed address pairs after c: its pairs
// in their order without c.remove, then c.add.
func newPairs(c change) []ports.AddressPair {
	out := []ports.AddressPair{}
	for _, ap := range c.port.AllowedAddressPairs {
		if !slices.Contains(c.remove, pairOf(ap.IPAddress, ap.MACAddress)) {
			out = append(out, ap)
		}
	}
	for _, a := range c.add {
		out = append(out, ports.AddressPair{IPAddress: a.IP, MACAddress: a.MAC})
	}
	return out
}

// record is the status entry of a port holding pairs of this resource, nil
// when it holds none.
func record(node, portID string, ps []pair) *v1alpha1.NodePortPairs {
	if len(ps) == 0 {
		return nil
	}
	r := &v1alpha1.NodePortPairs{Node: node, PortID: portID}
	for _, p := range ps {
		r.Pairs = append(r.Pairs, v1alpha1.ObservedAddressPair{IPAddress: p.IP, MACAddress: p.MAC})
	}
	return r
}

// describe prints pairs for a message.
func describe(ps []pair) string {
	s := make([]string, len(ps))
	for i, p := range ps {
		s[i] = p.String()
	}
	return strings.Join(s, ", ")
}
