package securitygroup

import (
	"fmt"
	"net/netip"
	"strings"

	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/security/groups"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/security/rules"
	"k8s.io/utils/ptr"

	"github.com/ipsecgw/provider-ipsec/apis/cluster/networking/v1alpha1"
	"github.com/ipsecgw/provider-ipsec/internal/clients/openstack"
)

// rule is a security group rule in a form that compares equal when Neutron
// would treat two rules as the same: Neutron normalises protocol names to
// lower case and remote prefixes to their network address.
type rule struct {
	Direction, EtherType, Protocol string
	PortRangeMin, PortRangeMax     int
	RemoteIPPrefix, RemoteGroupID  string
	Description                    string
}

// desired returns the rule a spec rule asks for.
func desired(r v1alpha1.SecurityGroupRule) rule {
	out := rule{Direction: r.Direction, EtherType: r.EtherType}
	if out.EtherType == "" {
		out.EtherType = "IPv4"
	}
	if r.Protocol != nil {
		out.Protocol = strings.ToLower(*r.Protocol)
	}
	if r.PortRangeMin != nil {
		out.PortRangeMin = int(*r.PortRangeMin)
	}
	if r.PortRangeMax != nil {
		out.PortRangeMax = int(*r.PortRangeMax)
	}
	if r.RemoteIPPrefix != nil {
		out.RemoteIPPrefix = normalisePrefix(string(*r.RemoteIPPrefix))
	}
	if r.RemoteGroupID != nil {
		out.RemoteGroupID = string(*r.RemoteGroupID)
	}
	if r.Description != nil {
		out.Description = *r.Description
	}
	return out
}

// observed returns a rule as Neutron holds it.
func observed(r rules.SecGroupRule) rule {
	return rule{
		Direction: r.Direction, EtherType: r.EtherType, Protocol: strings.ToLower(r.Protocol),
		PortRangeMin: r.PortRangeMin, PortRangeMax: r.PortRangeMax,
		RemoteIPPrefix: normalisePrefix(r.RemoteIPPrefix), RemoteGroupID: r.RemoteGroupID,
		Description: r.Description,
	}
}

// normalisePrefix returns a CIDR as Neutron stores it (network address);
// what does not parse is returned as it is.
func normalisePrefix(s string) string {
	if p, err := netip.ParsePrefix(s); err == nil {
		return p.Masked().String()
	}
	return s
}

// isDefaultEgress says whether r is one of the two rules Neutron adds to a
// new security group: egress, any protocol, any address, IPv4 or IPv6
// (https://docs.openstack.org/neutron/latest/admin/intro-os-networking.html#security-groups).
func isDefaultEgress(r rule) bool {
	return r.Direction == "egress" && r.Protocol == "" && r.PortRangeMin == 0 && r.PortRangeMax == 0 &&
		r.RemoteGroupID == "" && (r.RemoteIPPrefix == "" || r.RemoteIPPrefix == "0.0.0.0/0" || r.RemoteIPPrefix == "::/0")
}

// diff returns the spec rules Neutron lacks and the IDs of the rules Neutron
// has that the spec does not ask for. Neutron's default egress rules are
// not extra when keepDefaults is set.
func diff(spec []v1alpha1.SecurityGroupRule, have []rules.SecGroupRule, keepDefaults bool) (missing []rule, extra []string) {
	want := map[rule]int{}
	for _, r := range spec {
		want[desired(r)]++
	}
	for _, h := range have {
		o := observed(h)
		switch {
		case want[o] > 0:
			want[o]--
		case keepDefaults && isDefaultEgress(o):
		default:
			extra = append(extra, h.ID)
		}
	}
	for _, r := range spec {
		d := desired(r)
		if want[d] > 0 {
			missing = append(missing, d)
			want[d]--
		}
	}
	return missing, extra
}

// observation is the SecurityGroup's status.atProvider for g.
func observation(g *groups.SecGroup) v1alpha1.SecurityGroupObservation {
	o := v1alpha1.SecurityGroupObservation{ID: g.ID, RevisionNumber: g.RevisionNumber}
	for _, r := range g.Rules {
		or := v1alpha1.ObservedRule{ID: r.ID, Direction: r.Direction, EtherType: r.EtherType, Protocol: r.Protocol,
			RemoteIPPrefix: r.RemoteIPPrefix, RemoteGroupID: r.RemoteGroupID}
		if r.PortRangeMin != 0 || r.PortRangeMax != 0 {
			lo, hi := int32(r.PortRangeMin), int32(r.PortRangeMax) //nolint:gosec // G115: Neutron's port ranges are within 0-65535
			or.PortRangeMin, or.PortRangeMax = &lo, &hi
		}
		if r.Description != "" {
			or.Description = &r.Description
		}
		o.Rules = append(o.Rules, or)
	}
	return o
}

// keepDefaults says whether Neutron's default egress rules are kept
// (spec.forProvider.keepDefaultEgressRules, true when unset).
func keepDefaults(p v1alpha1.SecurityGroupParameters) bool {
	return p.KeepDefaultEgressRules == nil || *p.KeepDefaultEgressRules
}

// unready says why sg is not Ready: Ready means the group filters as the
// spec says, since a port in it before its rules are in place drops the
// traffic they admit.
func unready(sg *v1alpha1.SecurityGroup, g *groups.SecGroup) string {
	p := sg.Spec.ForProvider
	missing, extra := diff(p.Rules, g.Rules, keepDefaults(p))
	if len(missing) == 0 && len(extra) == 0 {
		return ""
	}
	return fmt.Sprintf("the group lacks %d of the spec's rules and has %d that the spec does not", len(missing), len(extra))
}

// compare says how g differs from sg's spec: name, description (the user's
// part: the marker is no drift, but an earlier release's marker is, to be
// replaced by the marker: openstack.Remark) and the number of rules
// missing and extra; "" when none does.
func compare(sg *v1alpha1.SecurityGroup, g *groups.SecGroup) string {
	p := sg.Spec.ForProvider
	desc, _ := openstack.Unmark(sg, g.Description)
	missing, extra := diff(p.Rules, g.Rules, keepDefaults(p))
	_, stale := openstack.Remark(sg, g.Description)
	if g.Name == p.Name && desc == ptr.Deref(p.Description, "") && !stale && len(missing) == 0 && len(extra) == 0 {
		return ""
	}
	d := fmt.Sprintf("name %q, description %q, %d rules missing, %d extra", g.Name, desc, len(missing), len(extra))
	if stale {
		d += ", an earlier release's marker"
	}
	return d
}
