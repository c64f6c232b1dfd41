package port

import (
	"net/netip"
	"slices"
	"strings"

	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/portsecurity"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
	"k8s.io/utils/ptr"

	"github.com/ipsecgw/provider-ipsec/apis/cluster/networking/v1alpha1"
	"github.com/ipsecgw/provider-ipsec/internal/clients/openstack"
	"github.com/ipsecgw/provider-ipsec/internal/controller/drift"
)

// neutronPort is a port as Neutron returns it, with the port-security
// extension's port_security_enabled.
type neutronPort struct {
	ports.Port
	portsecurity.PortSecurityExt
}

// changes are what an Update must send to make a Neutron port match a
// Port's spec.
//
// What the spec manages:
//   - name, description, portSecurityEnabled: when set; unset leaves
//     Neutron's value alone (portSecurityEnabled is late-initialized). The
//     description compared is the user's part, without the MR's marker
//     (openstack.Unmark), and an update keeps the marker; an earlier
//     release's marker, set or not, is replaced by it (openstack.Remark).
//   - securityGroupIds, as a set: when not empty. An empty list with port
//     security on leaves Neutron's choice (the project's "default" group)
//     alone; with port security off the port must have no groups.
//   - allowedAddressPairs, as a set: always; an unset MAC means the port's
//     own, as Neutron fills it in.
//   - fixedIps: only what each entry asks (a subnet, an address or both);
//     the addresses Neutron picks and addresses Neutron adds on its own
//     (IPv6 SLAAC) are no drift.
//   - tags, as a set: exactly spec.tags.
type changes struct {
	drift.Report
	// update holds the port attributes that differ; nil fields match.
	update ports.UpdateOpts
	// portSecurity is port_security_enabled when it differs.
	portSecurity *bool
	// tags is the full tag set to write when the tags differ (empty, not
	// nil, to remove them all).
	tags []string
}

// portChanged says whether a PUT of the port itself is needed (tags are a
// separate request).
func (c *changes) portChanged() bool {
	u := c.update
	return c.portSecurity != nil || u.Name != nil || u.Description != nil ||
		u.SecurityGroups != nil || u.AllowedAddressPairs != nil || u.FixedIPs != nil
}

// compare returns what differs between spec, the spec of mg, and the
// Neutron port p.
func compare(mg resource.Object, spec *v1alpha1.PortParameters, p *neutronPort) *changes { //nolint:gocyclo // one comparison per updatable field
	c := &changes{}
	if spec.Name != nil && c.Differs("name", *spec.Name, p.Name) {
		c.update.Name = spec.Name
	}
	if desc, _ := openstack.Unmark(mg, p.Description); spec.Description != nil && c.Differs("description", *spec.Description, desc) {
		c.update.Description = ptr.To(openstack.KeepMark(mg, p.Description, *spec.Description))
	} else if d, stale := openstack.Remark(mg, p.Description); stale {
		// An earlier release's marker: the object gets the marker.
		c.Add("description", "the marker of an earlier release")
		c.update.Description = &d
	}
	if spec.PortSecurityEnabled != nil && c.Differs("portSecurityEnabled", *spec.PortSecurityEnabled, p.PortSecurityEnabled) {
		c.portSecurity = spec.PortSecurityEnabled
	}
	portSecurityOff := spec.PortSecurityEnabled != nil && !*spec.PortSecurityEnabled
	if sgs := unique(spec.SecurityGroupIDs); len(sgs) > 0 || portSecurityOff {
		if c.Differs("securityGroupIds", sgs, p.SecurityGroups, drift.SortStrings) {
			if sgs == nil {
				sgs = []string{}
			}
			c.update.SecurityGroups = &sgs
		}
	}
	if want := addressPairs(spec.AllowedAddressPairs, p.MACAddress); c.Differs("allowedAddressPairs", want, observedPairs(p.AllowedAddressPairs), sortPairs) {
		send := make([]ports.AddressPair, 0, len(spec.AllowedAddressPairs))
		for _, ap := range spec.AllowedAddressPairs {
			send = append(send, ports.AddressPair{IPAddress: ap.IPAddress, MACAddress: ptr.Deref(ap.MACAddress, "")})
		}
		c.update.AllowedAddressPairs = &send
	}
	if len(spec.FixedIPs) > 0 {
		if want, ok := matchFixedIPs(spec.FixedIPs, p.FixedIPs); !ok {
			c.Add("fixedIps", cmp.Diff(want, p.FixedIPs))
			c.update.FixedIPs = want
		}
	}
	if tags := unique(spec.Tags); c.Differs("tags", tags, p.Tags, drift.SortStrings) {
		c.tags = append([]string{}, tags...)
		slices.Sort(c.tags)
	}
	return c
}

// lateInit fills the unset fields of spec that Neutron chose a value for:
// portSecurityEnabled (the network's default). It says whether it filled
// any. Other unset fields stay unset: fixed IPs Neutron picked are not
// written back, so the spec keeps saying only what its author asked.
func lateInit(spec *v1alpha1.PortParameters, p *neutronPort) bool {
	if spec.PortSecurityEnabled == nil {
		spec.PortSecurityEnabled = &p.PortSecurityEnabled
		return true
	}
	return false
}

// observation is the Port's status.atProvider for p.
func observation(p *neutronPort) v1alpha1.PortObservation {
	o := v1alpha1.PortObservation{ID: p.ID, MACAddress: p.MACAddress, Status: p.Status, RevisionNumber: p.RevisionNumber}
	for _, ip := range p.FixedIPs {
		o.FixedIPs = append(o.FixedIPs, v1alpha1.ObservedFixedIP{SubnetID: ip.SubnetID, IPAddress: ip.IPAddress})
	}
	return o
}

// matchFixedIPs matches each wanted fixed IP with a distinct one the port
// has: same subnet when the spec names one, same address when it names
// one. Entries naming an address are matched first, so that a
// subnet-only entry does not take the address another entry asks for. It
// returns the fixed IPs to send (the port's own where matched, as the
// spec says otherwise) and whether every wanted one matched.
func matchFixedIPs(want []v1alpha1.FixedIP, have []ports.IP) ([]ports.IP, bool) {
	out := make([]ports.IP, len(want))
	used := make([]bool, len(have))
	ok := true
	order := make([]int, 0, len(want))
	for i, w := range want {
		if w.IPAddress != nil {
			order = append(order, i)
		}
	}
	for i, w := range want {
		if w.IPAddress == nil {
			order = append(order, i)
		}
	}
	for _, i := range order {
		w := want[i]
		j := -1
		for k, h := range have {
			if !used[k] && (w.SubnetID == nil || string(*w.SubnetID) == h.SubnetID) &&
				(w.IPAddress == nil || sameAddress(string(*w.IPAddress), h.IPAddress)) {
				j = k
				break
			}
		}
		if j < 0 {
			ok = false
			out[i] = ports.IP{SubnetID: string(ptr.Deref(w.SubnetID, "")), IPAddress: string(ptr.Deref(w.IPAddress, ""))}
			continue
		}
		used[j] = true
		out[i] = have[j]
	}
	return out, ok
}

// pair is an allowed address pair in a comparable form.
type pair struct{ IP, MAC string }

var sortPairs = cmpopts.SortSlices(func(a, b pair) bool { return a.IP < b.IP || a.IP == b.IP && a.MAC < b.MAC })

// addressPairs normalises the spec's pairs; an unset MAC is the port's.
func addressPairs(aps []v1alpha1.AddressPair, portMAC string) []pair {
	out := make([]pair, 0, len(aps))
	for _, ap := range aps {
		mac := portMAC
		if ap.MACAddress != nil {
			mac = *ap.MACAddress
		}
		out = append(out, pair{IP: canonical(ap.IPAddress), MAC: strings.ToLower(mac)})
	}
	return uniqueBy(out)
}

func observedPairs(aps []ports.AddressPair) []pair {
	out := make([]pair, 0, len(aps))
	for _, ap := range aps {
		out = append(out, pair{IP: canonical(ap.IPAddress), MAC: strings.ToLower(ap.MACAddress)})
	}
	return out
}

// canonical writes an address or CIDR the one way netip does, so that
// 2001:db8::1 and 2001:DB8:0::1 compare equal; anything else is kept.
func canonical(s string) string {
	if p, err := netip.ParsePrefix(s); err == nil {
		return p.String()
	}
	if a, err := netip.ParseAddr(s); err == nil {
		return a.String()
	}
	return s
}

func sameAddress(a, b string) bool { return canonical(a) == canonical(b) }

// unique returns ss without duplicates, in first-seen order; nil stays nil.
func unique[T ~string](ss []T) []string {
	if ss == nil {
		return nil
	}
	out := make([]string, 0, len(ss))
	for _, s := range ss {
		if !slices.Contains(out, string(s)) {
			out = append(out, string(s))
		}
	}
	return out
}

func uniqueBy[T comparable](ts []T) []T {
	out := ts[:0:0]
	for _, t := range ts {
		if !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	return out
}
