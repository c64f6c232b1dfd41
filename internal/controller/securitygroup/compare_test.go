package securitygroup

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/security/rules"
	"k8s.io/utils/ptr"

	"github.com/ipsecgw/provider-ipsec/apis/cluster/networking/v1alpha1"
)

func ike() v1alpha1.SecurityGroupRule {
	p := v1alpha1.CIDR("0.0.0.0/0")
	return v1alpha1.SecurityGroupRule{Direction: "ingress", EtherType: "IPv4", Protocol: ptr.To("udp"),
		PortRangeMin: ptr.To[int32](500), PortRangeMax: ptr.To[int32](500), RemoteIPPrefix: &p}
}

func esp() v1alpha1.SecurityGroupRule {
	return v1alpha1.SecurityGroupRule{Direction: "ingress", EtherType: "IPv4", Protocol: ptr.To("esp")}
}

var (
	neutronIKE       = rules.SecGroupRule{ID: "r-ike", Direction: "ingress", EtherType: "IPv4", Protocol: "udp", PortRangeMin: 500, PortRangeMax: 500, RemoteIPPrefix: "0.0.0.0/0"}
	neutronEgress4   = rules.SecGroupRule{ID: "r-eg4", Direction: "egress", EtherType: "IPv4"}
	neutronEgress6   = rules.SecGroupRule{ID: "r-eg6", Direction: "egress", EtherType: "IPv6"}
	neutronHandAdded = rules.SecGroupRule{ID: "r-ssh", Direction: "ingress", EtherType: "IPv4", Protocol: "tcp", PortRangeMin: 22, PortRangeMax: 22}
)

func TestDiff(t *testing.T) {
	type want struct {
		missing []rule
		extra   []string
	}
	cases := map[string]struct {
		reason       string
		spec         []v1alpha1.SecurityGroupRule
		have         []rules.SecGroupRule
		keepDefaults bool
		want         want
	}{
		"InSync": {
			reason:       "Rules present as asked, default egress kept: nothing to do.",
			spec:         []v1alpha1.SecurityGroupRule{ike()},
			have:         []rules.SecGroupRule{neutronIKE, neutronEgress4, neutronEgress6},
			keepDefaults: true,
		},
		"NewGroup": {
			reason:       "A new group has only the default egress rules: every spec rule is missing.",
			spec:         []v1alpha1.SecurityGroupRule{ike(), esp()},
			have:         []rules.SecGroupRule{neutronEgress4, neutronEgress6},
			keepDefaults: true,
			want:         want{missing: []rule{desired(ike()), desired(esp())}},
		},
		"DropDefaults": {
			reason: "Without keepDefaultEgressRules the default egress rules are extra.",
			spec:   []v1alpha1.SecurityGroupRule{ike()},
			have:   []rules.SecGroupRule{neutronIKE, neutronEgress4, neutronEgress6},
			want:   want{extra: []string{"r-eg4", "r-eg6"}},
		},
		"HandAddedRule": {
			reason:       "A rule added by hand in Neutron is extra and is deleted.",
			spec:         []v1alpha1.SecurityGroupRule{ike()},
			have:         []rules.SecGroupRule{neutronIKE, neutronHandAdded, neutronEgress4},
			keepDefaults: true,
			want:         want{extra: []string{"r-ssh"}},
		},
		"HandDeletedRule": {
			reason:       "A spec rule deleted by hand in Neutron is missing and is re-created.",
			spec:         []v1alpha1.SecurityGroupRule{ike(), esp()},
			have:         []rules.SecGroupRule{neutronIKE},
			keepDefaults: true,
			want:         want{missing: []rule{desired(esp())}},
		},
		"SpecAsksForDefault": {
			reason: "A spec rule equal to a default egress rule matches it even when defaults are not kept.",
			spec:   []v1alpha1.SecurityGroupRule{{Direction: "egress", EtherType: "IPv4"}},
			have:   []rules.SecGroupRule{neutronEgress4, neutronEgress6},
			want:   want{extra: []string{"r-eg6"}},
		},
		"NormalisedPrefix": {
			reason: "A remote prefix Neutron normalised still matches.",
			spec: func() []v1alpha1.SecurityGroupRule {
				r := ike()
				r.Protocol = ptr.To("UDP")
				return []v1alpha1.SecurityGroupRule{r}
			}(),
			have:         []rules.SecGroupRule{neutronIKE},
			keepDefaults: true,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			missing, extra := diff(tc.spec, tc.have, tc.keepDefaults)
			if diff := cmp.Diff(tc.want, want{missing: missing, extra: extra}, cmp.AllowUnexported(want{})); diff != "" {
				t.Errorf("%s\ndiff(): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}
