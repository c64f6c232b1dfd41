package network

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/networks"
	"k8s.io/utils/ptr"

	"github.com/ipsecgw/provider-ipsec/apis/cluster/networking/v1alpha1"
)

func TestCompare(t *testing.T) {
	base := func() *neutronNetwork {
		return &neutronNetwork{Network: networks.Network{ID: netID, Name: "tenant-net", Description: "tenant A " + marker, AdminStateUp: true, Tags: []string{"b", "a"}}}
	}
	spec := func(mods ...func(*v1alpha1.NetworkParameters)) *v1alpha1.NetworkParameters {
		s := &v1alpha1.NetworkParameters{Name: ptr.To("tenant-net"), Description: ptr.To("tenant A"), Tags: []string{"a", "b", "a"}}
		for _, m := range mods {
			m(s)
		}
		return s
	}
	type want struct {
		upToDate bool
		update   networks.UpdateOpts
		tags     []string
	}
	cases := map[string]struct {
		reason string
		spec   *v1alpha1.NetworkParameters
		want   want
	}{
		"UpToDate": {
			reason: "The user's part of a marked description, and tags as a set without duplicates, match.",
			spec:   spec(),
			want:   want{upToDate: true},
		},
		"UnsetLeavesNeutronsValue": {
			reason: "An unset name, description or adminStateUp leaves Neutron's alone.",
			spec:   spec(func(s *v1alpha1.NetworkParameters) { s.Name, s.Description, s.AdminStateUp = nil, nil, nil }),
			want:   want{upToDate: true},
		},
		"DescriptionKeepsMarker": {
			reason: "A changed description is sent with the MR's marker kept.",
			spec:   spec(func(s *v1alpha1.NetworkParameters) { s.Description = ptr.To("tenant B") }),
			want:   want{update: networks.UpdateOpts{Description: ptr.To("tenant B " + marker)}},
		},
		"AttributesDiffer": {
			reason: "A set name and adminStateUp must match.",
			spec:   spec(func(s *v1alpha1.NetworkParameters) { s.Name, s.AdminStateUp = ptr.To("other"), ptr.To(false) }),
			want:   want{update: networks.UpdateOpts{Name: ptr.To("other"), AdminStateUp: ptr.To(false)}},
		},
		"TagsRemoved": {
			reason: "Tags are exactly spec.tags: none in the spec removes Neutron's (an empty set, not nil).",
			spec:   spec(func(s *v1alpha1.NetworkParameters) { s.Tags = nil }),
			want:   want{tags: []string{}},
		},
		"TagsSorted": {
			reason: "Differing tags are sent sorted, without duplicates.",
			spec:   spec(func(s *v1alpha1.NetworkParameters) { s.Tags = []string{"c", "a", "c"} }),
			want:   want{tags: []string{"a", "c"}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c := compare(mr(), tc.spec, base())
			got := want{upToDate: c.UpToDate(), update: c.update, tags: c.tags}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(want{})); diff != "" {
				t.Errorf("%s\ncompare(...): -want, +got:\n%s", tc.reason, diff)
			}
			if got.upToDate != (c.Diff() == "") {
				t.Errorf("%s\ncompare(...): up to date %t with diff %q", tc.reason, got.upToDate, c.Diff())
			}
		})
	}
}

func TestCompareLegacyMarker(t *testing.T) {
	legacy := "tenant A [crossplane-uid-" + string(mr().UID) + "]"
	cases := map[string]struct {
		reason string
		desc   *string
		want   string
	}{
		"SameDescription": {
			reason: "A network an earlier release made, its description as the spec's, is not up to date: the update gives it the marker.",
			desc:   ptr.To("tenant A"), want: "tenant A " + marker,
		},
		"UnsetDescription": {
			reason: "An unset description leaves the user's text alone, and the marker is still replaced.",
			want:   "tenant A " + marker,
		},
		"ChangedDescription": {
			reason: "A changed description is sent with the marker.",
			desc:   ptr.To("tenant B"), want: "tenant B " + marker,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			n := &neutronNetwork{Network: networks.Network{ID: netID, Name: "tenant-net", Description: legacy, AdminStateUp: true, Tags: []string{"a"}}}
			c := compare(mr(), &v1alpha1.NetworkParameters{Description: tc.desc, Tags: []string{"a"}}, n)
			if c.UpToDate() || c.update.Description == nil {
				t.Fatalf("%s\ncompare(...): up to date %t, description %v; want an update", tc.reason, c.UpToDate(), c.update.Description)
			}
			if diff := cmp.Diff(tc.want, *c.update.Description); diff != "" {
				t.Errorf("%s\ncompare(...): -want description, +got:\n%s", tc.reason, diff)
			}
		})
	}
}
