package floatingipbinding

import (
	"net/url"
	"testing"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"
	"github.com/gophercloud/gophercloud/v2"

	"github.com/ipsecgw/provider-ipsec/apis/cluster/networking/v1alpha1"
	"github.com/ipsecgw/provider-ipsec/internal/clients/openstack/neutrontest"
	"github.com/ipsecgw/provider-ipsec/internal/controller/mrsetup/mrsetuptest"
)

// TestCrashSafeCreate runs the managed reconciler with the OpenStack
// kinds' options and the binding's Finder, one fresh reconciler per step
// as after a provider restart, through the ways a create can be
// interrupted. Neutron must end with one floating IP for the binding,
// whose ID is its external name; a pinned floating IP is never allocated.
func TestCrashSafeCreate(t *testing.T) {
	type r = neutrontest.Reply
	byMarker := "GET /floatingips?" + url.Values{"description": {marker}, "fields": {"id", "description"}}.Encode()
	scan := "GET /floatingips?fields=id&fields=description"
	get := "GET /floatingips/" + fipID
	put := "PUT /floatingips/" + fipID
	post := "POST /floatingips"
	posted := post + ` {"floatingip":{"description":"` + marker + `","floating_network_id":"` + extNet + `","port_id":"` + ourPort + `"}}`
	found := `{"floatingips": [{"id": "` + fipID + `", "description": "` + marker + `"}]}`
	none := `{"floatingips": [{"id": "` + otherFIP + `", "description": "theirs"}]}`
	cases := map[string]struct {
		reason  string
		mg      *v1alpha1.FloatingIPBinding
		pending bool
		steps   []mrsetuptest.Step
	}{
		"KilledAfterPOST": {
			reason:  "A provider killed after Neutron allocated the floating IP on the port, before the ID was saved: the restarted one finds it by its marker and adopts it; no second allocation fails for ever with 409 FloatingIPPortAlreadyAssociated.",
			mg:      binding(),
			pending: true,
			steps: []mrsetuptest.Step{{
				Replies:  map[string]r{scan: {Code: 200, Body: found}, get: {Code: 200, Body: one(fip(ourPort, 1, marker))}},
				Requests: []string{scan, get},
			}},
		},
		"KilledBeforePOST": {
			reason:  "A provider killed before its POST reached Neutron: the marker proves there is no floating IP of the binding, and the restarted one allocates one.",
			mg:      binding(),
			pending: true,
			steps: []mrsetuptest.Step{{
				Replies:  map[string]r{scan: {Code: 200, Body: none}, byMarker: {Code: 200, Body: `{"floatingips": []}`}, post: {Code: 201, Body: one(fip(ourPort, 0, marker))}},
				Requests: []string{scan, byMarker, posted},
			}},
		},
		"LostAnswer": {
			reason: "A POST whose answer is lost after Neutron allocated the floating IP fails the create; the next reconcile adopts it by its marker instead of allocating a second.",
			mg:     binding(),
			steps: []mrsetuptest.Step{{
				Replies:  map[string]r{byMarker: {Code: 200, Body: `{"floatingips": []}`}, post: {Cut: true}},
				Requests: []string{byMarker, posted},
			}, {
				Replies:  map[string]r{byMarker: {Code: 200, Body: found}, get: {Code: 200, Body: one(fip(ourPort, 1, marker))}},
				Requests: []string{byMarker, get},
			}},
		},
		"PinnedKilled": {
			reason:  "A pinned binding's create allocates nothing: after a kill it is simply done again, without asking Neutron whether something was created, and associates the customer's floating IP.",
			mg:      binding(withPinned),
			pending: true,
			steps: []mrsetuptest.Step{{
				Replies: map[string]r{"GET /floatingips?floating_ip_address=" + address: {Code: 200, Body: list(fip("", 5))},
					get: {Code: 200, Body: one(fip("", 5))}, put: {Code: 200, Body: one(fip(ourPort, 6))}},
				Requests: []string{"GET /floatingips?floating_ip_address=" + address, get,
					put + ` If-Match=revision_number=5 {"floatingip":{"port_id":"` + ourPort + `"}}`},
			}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if tc.pending {
				meta.SetExternalCreatePending(tc.mg, time.Now().Add(-time.Minute))
			}
			h := mrsetuptest.New(t, v1alpha1.FloatingIPBindingGroupVersionKind, tc.mg, find,
				func(sc *gophercloud.ServiceClient) managed.TypedExternalClient[*v1alpha1.FloatingIPBinding] {
					return &external{neutron: sc}
				})
			for i, s := range tc.steps {
				h.Step(t, tc.reason, i+1, s)
			}
			got := &v1alpha1.FloatingIPBinding{}
			h.Get(t, got)
			if meta.GetExternalName(got) != fipID || meta.ExternalCreateIncomplete(got) {
				t.Errorf("%s\nexternal name %q, create incomplete %v; want %s, complete", tc.reason, meta.GetExternalName(got), meta.ExternalCreateIncomplete(got), fipID)
			}
		})
	}
}
