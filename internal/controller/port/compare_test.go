package port

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
	"k8s.io/utils/ptr"

	"github.com/ipsecgw/provider-ipsec/apis/cluster/networking/v1alpha1"
)

func TestCompare(t *testing.T) {
	base := func() *neutronPort {
		return &neutronPort{Port: ports.Port{
			ID: portID, Name: "vip", MACAddress: mac,
			FixedIPs:            []ports.IP{{SubnetID: subID, IPAddress: "10.20.0.10"}, {SubnetID: "v6", IPAddress: "2001:db8::5"}},
			SecurityGroups:      []string{sgID, sg2ID},
			AllowedAddressPairs: []ports.AddressPair{{IPAddress: "192.168.20.0/24", MACAddress: mac}, {IPAddress: "192.168.10.0/24", MACAddress: mac}},
			Tags:                []string{"b", "a"},
		}}
	}
	spec := func(mods ...func(*v1alpha1.PortParameters)) *v1alpha1.PortParameters {
		s := &v1alpha1.PortParameters{
			NetworkID:           ptr.To(netID),
			SecurityGroupIDs:    []string{sg2ID, sgID},
			AllowedAddressPairs: []v1alpha1.AddressPair{{IPAddress: "192.168.10.0/24"}, {IPAddress: "192.168.20.0/24", MACAddress: ptr.To(mac)}},
			Tags:                []string{"a", "b"},
		}
		for _, m := range mods {
			m(s)
		}
		return s
	}
	ip := func(s string) *v1alpha1.IPAddress { a := v1alpha1.IPAddress(s); return &a }
	sub := func(s string) *v1alpha1.UUID { u := v1alpha1.UUID(s); return &u }
	cases := map[string]struct {
		reason   string
		spec     *v1alpha1.PortParameters
		upToDate bool
	}{
		"SetsInAnyOrder": {
			reason:   "Security groups, address pairs and tags compare as sets; an unset pair MAC is the port's own.",
			spec:     spec(),
			upToDate: true,
		},
		"UnsetNameAndDescription": {
			reason:   "An unset name or description leaves Neutron's alone.",
			spec:     spec(),
			upToDate: true,
		},
		"NameDiffers": {
			reason: "A set name must match.",
			spec:   spec(func(s *v1alpha1.PortParameters) { s.Name = ptr.To("other") }),
		},
		"DefaultSecurityGroup": {
			reason:   "No security groups with port security on leaves Neutron's choice (the default group) alone.",
			spec:     spec(func(s *v1alpha1.PortParameters) { s.SecurityGroupIDs = nil }),
			upToDate: true,
		},
		"PortSecurityOffWantsNoGroups": {
			reason: "With port security off, the port must have no security groups.",
			spec: spec(func(s *v1alpha1.PortParameters) {
				s.SecurityGroupIDs, s.PortSecurityEnabled = nil, ptr.To(false)
			}),
		},
		"ExtraAddressPair": {
			reason: "An allowed address pair the spec does not list is drift: no pairs in the spec means none.",
			spec:   spec(func(s *v1alpha1.PortParameters) { s.AllowedAddressPairs = s.AllowedAddressPairs[:1] }),
		},
		"PairOfAnotherMAC": {
			reason: "A pair with another MAC differs from one with the port's.",
			spec:   spec(func(s *v1alpha1.PortParameters) { s.AllowedAddressPairs[0].MACAddress = ptr.To("fa:16:3e:00:00:99") }),
		},
		"UserTagAddedByHand": {
			reason: "Tags are exactly spec.tags and the MR's own tag.",
			spec:   spec(func(s *v1alpha1.PortParameters) { s.Tags = []string{"a"} }),
		},
		"OnlyWhatTheSpecAsks": {
			reason: "Fixed IPs compare only what the spec asks; other addresses (IPv6 SLAAC) are no drift; addresses compare canonically.",
			spec: spec(func(s *v1alpha1.PortParameters) {
				s.FixedIPs = []v1alpha1.FixedIP{{SubnetID: sub(subID)}, {IPAddress: ip("2001:DB8:0::5")}}
			}),
			upToDate: true,
		},
		"AddressElsewhere": {
			reason: "A fixed IP whose address the port does not have is drift.",
			spec: spec(func(s *v1alpha1.PortParameters) {
				s.FixedIPs = []v1alpha1.FixedIP{{SubnetID: sub(subID), IPAddress: ip("10.20.0.11")}}
			}),
		},
		"TwoOnOneSubnet": {
			reason: "Two entries on a subnet need two addresses on it.",
			spec: spec(func(s *v1alpha1.PortParameters) {
				s.FixedIPs = []v1alpha1.FixedIP{{SubnetID: sub(subID)}, {SubnetID: sub(subID), IPAddress: ip("10.20.0.10")}}
			}),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c := compare(mr(), tc.spec, base())
			if got := c.UpToDate(); got != tc.upToDate {
				t.Errorf("%s\ncompare(...).UpToDate() = %v, want %v; diff:\n%s", tc.reason, got, tc.upToDate, c.Diff())
			}
		})
	}
}

func TestMatchFixedIPs(t *testing.T) {
	sub := v1alpha1.UUID(subID)
	ip10, ip11 := v1alpha1.IPAddress("10.20.0.10"), v1alpha1.IPAddress("10.20.0.11")
	have := []ports.IP{{SubnetID: subID, IPAddress: "10.20.0.10"}, {SubnetID: subID, IPAddress: "10.20.0.11"}}
	cases := map[string]struct {
		reason string
		want   []v1alpha1.FixedIP
		out    []ports.IP
		ok     bool
	}{
		"AddressFirst": {
			reason: "An entry naming an address takes it before a subnet-only entry can.",
			want:   []v1alpha1.FixedIP{{SubnetID: &sub}, {IPAddress: &ip10}},
			out:    []ports.IP{{SubnetID: subID, IPAddress: "10.20.0.11"}, {SubnetID: subID, IPAddress: "10.20.0.10"}},
			ok:     true,
		},
		"Missing": {
			reason: "An entry nothing matches is sent as the spec says.",
			want:   []v1alpha1.FixedIP{{IPAddress: &ip11}, {SubnetID: &sub, IPAddress: &ip11}},
			out:    []ports.IP{{SubnetID: subID, IPAddress: "10.20.0.11"}, {SubnetID: subID, IPAddress: "10.20.0.11"}},
			ok:     false,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			out, ok := matchFixedIPs(tc.want, have)
			if ok != tc.ok {
				t.Errorf("%s\nmatchFixedIPs(...) ok = %v, want %v", tc.reason, ok, tc.ok)
			}
			if diff := cmp.Diff(tc.out, out); diff != "" {
				t.Errorf("%s\nmatchFixedIPs(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestCompareLegacyMarker(t *testing.T) {
	legacy := "gateway VIP [crossplane-uid-" + string(mr().UID) + "]"
	cases := map[string]struct {
		reason string
		desc   *string
		want   string
	}{
		"SameDescription": {
			reason: "A port an earlier release made, its description as the spec's, is not up to date: the update gives it the marker.",
			desc:   ptr.To("gateway VIP"), want: "gateway VIP " + marker,
		},
		"UnsetDescription": {
			reason: "An unset description leaves the user's text alone, and the marker is still replaced.",
			want:   "gateway VIP " + marker,
		},
		"ChangedDescription": {
			reason: "A changed description is sent with the marker.",
			desc:   ptr.To("VIP"), want: "VIP " + marker,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			p := &neutronPort{Port: ports.Port{ID: portID, Name: "vip", Description: legacy}}
			c := compare(mr(), &v1alpha1.PortParameters{NetworkID: ptr.To(netID), Description: tc.desc}, p)
			if c.UpToDate() || c.update.Description == nil {
				t.Fatalf("%s\ncompare(...): up to date %t, description %v; want an update", tc.reason, c.UpToDate(), c.update.Description)
			}
			if diff := cmp.Diff(tc.want, *c.update.Description); diff != "" {
				t.Errorf("%s\ncompare(...): -want description, +got:\n%s", tc.reason, diff)
			}
		})
	}
}
