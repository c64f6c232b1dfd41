package floatingipbinding

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/floatingips"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/ipsecgw/provider-ipsec/apis/cluster/networking/v1alpha1"
)

func TestDiff(t *testing.T) {
	marked := "ours " + marker
	cases := map[string]struct {
		reason   string
		mg       *v1alpha1.FloatingIPBinding
		fip      floatingips.FloatingIP
		upToDate bool
	}{
		"Attached": {
			reason:   "A floating IP on the binding's port, its marked description the spec's, is up to date.",
			mg:       binding(withDescription("ours")),
			fip:      floatingips.FloatingIP{PortID: ourPort, FixedIP: "10.20.0.10", Description: marked},
			upToDate: true,
		},
		"OtherPort": {
			reason: "A floating IP on another port differs.",
			mg:     binding(),
			fip:    floatingips.FloatingIP{PortID: "other"},
		},
		"FixedIP": {
			reason: "A fixed IP the spec names must be the one the floating IP is on.",
			mg:     binding(withFixedIP("10.20.0.11")),
			fip:    floatingips.FloatingIP{PortID: ourPort, FixedIP: "10.20.0.10"},
		},
		"NoPort": {
			reason:   "A binding with no port leaves the association alone.",
			mg:       binding(func(mg *v1alpha1.FloatingIPBinding) { mg.Spec.ForProvider.PortID = nil }),
			fip:      floatingips.FloatingIP{PortID: "other"},
			upToDate: true,
		},
		"LegacyMarker": {
			reason: "An allocated floating IP an earlier release made, its description the spec's, differs until it carries the binding's marker instead of the earlier release's.",
			mg:     binding(withDescription("ours")),
			fip:    floatingips.FloatingIP{PortID: ourPort, FixedIP: "10.20.0.10", Description: "ours [crossplane-uid-" + uid + "]"},
		},
		"AllocatedDescription": {
			reason: "An allocated floating IP's description is the binding's.",
			mg:     binding(withDescription("new")),
			fip:    floatingips.FloatingIP{PortID: ourPort, Description: marked},
		},
		"PinnedDescription": {
			reason:   "A pinned floating IP's description is the customer's: never drift.",
			mg:       binding(withPinned, withDescription("new")),
			fip:      floatingips.FloatingIP{PortID: ourPort, Description: "customer's"},
			upToDate: true,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			d := diff(tc.mg, &tc.fip)
			if got := d == ""; got != tc.upToDate {
				t.Errorf("%s\ndiff(...) = %q: up to date %t, want %t", tc.reason, d, got, tc.upToDate)
			}
		})
	}
}

func TestReleasedAt(t *testing.T) {
	before := metav1.NewTime(time.Now().Add(-time.Minute))
	cases := map[string]struct {
		reason string
		mg     *v1alpha1.FloatingIPBinding
		prev   v1alpha1.FloatingIPBindingObservation
		fip    floatingips.FloatingIP
		want   string // "", "now" or "before"
	}{
		"Released": {
			reason: "A pinned floating IP attached at the last observation and on no port now was released now.",
			mg:     binding(withPinned),
			prev:   v1alpha1.FloatingIPBindingObservation{Attached: true},
			want:   "now",
		},
		"StillReleased": {
			reason: "The time of the release is kept while the floating IP stays on no port.",
			mg:     binding(withPinned),
			prev:   v1alpha1.FloatingIPBindingObservation{ReleasedAt: &before},
			want:   "before",
		},
		"OnAPort": {
			reason: "A floating IP on a port, the VM's after the rollback, is not released.",
			mg:     binding(withPinned),
			prev:   v1alpha1.FloatingIPBindingObservation{ReleasedAt: &before},
			fip:    floatingips.FloatingIP{PortID: "vm"},
		},
		"NeverAttached": {
			reason: "A floating IP the binding never had was not released by anyone.",
			mg:     binding(withPinned),
		},
		"Allocated": {
			reason: "An allocated floating IP is the binding's own: no hold.",
			mg:     binding(),
			prev:   v1alpha1.FloatingIPBindingObservation{Attached: true},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			start := time.Now()
			at := releasedAt(tc.mg, tc.prev, &tc.fip)
			got := ""
			switch {
			case at == nil:
			case at.Equal(&before):
				got = "before"
			case !at.Time.Before(start.Truncate(time.Second)):
				got = "now"
			default:
				got = at.String()
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\nreleasedAt(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestLateInitialize(t *testing.T) {
	cases := map[string]struct {
		reason string
		mg     *v1alpha1.FloatingIPBinding
		fip    floatingips.FloatingIP
		want   *string
		filled bool
	}{
		"Filled": {
			reason: "An allocated binding without a description takes the user's part of Neutron's.",
			mg:     binding(),
			fip:    floatingips.FloatingIP{Description: "by hand [crossplane-uid-" + uid + "]"},
			want:   ptr.To("by hand"),
			filled: true,
		},
		"Set": {
			reason: "A description the spec sets is kept.",
			mg:     binding(withDescription("mine")),
			fip:    floatingips.FloatingIP{Description: "by hand"},
			want:   ptr.To("mine"),
		},
		"Pinned": {
			reason: "A pinned binding takes nothing from the customer's floating IP.",
			mg:     binding(withPinned),
			fip:    floatingips.FloatingIP{Description: "customer's"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			filled := lateInitialize(tc.mg, &tc.fip)
			if diff := cmp.Diff([]any{tc.want, tc.filled}, []any{tc.mg.Spec.ForProvider.Description, filled}); diff != "" {
				t.Errorf("%s\nlateInitialize(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}
