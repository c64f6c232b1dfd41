package floatingipbinding

import (
	"net/url"
	"testing"

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
	scan := "GET /floatingips?fields=id&fields=description&fields=tags"
	get := "GET /floatingips/" + fipID
	put := "PUT /floatingips/" + fipID
	post := "POST /floatingips"
	posted := post + ` {"floatingip":{"description":"` + marker + `","floating_network_id":"` + extNet + `","port_id":"` + ourPort + `"}}`
	found := `{"floatingips": [{"id": "` + fipID + `", "description": "` + marker + `"}]}`
	none := `{"floatingips": [{"id": "` + otherFIP + `", "description": "theirs"}]}`
	allocated, pinnedMG := binding(), binding(withPinned)
	cases := map[string]mrsetuptest.Case{
		"KilledAfterPOST": {
			Reason:  "A provider killed after Neutron allocated the floating IP on the port, before the ID was saved: the restarted one finds it by its marker and adopts it; no second allocation fails for ever with 409 FloatingIPPortAlreadyAssociated.",
			Pending: true,
			Steps: []mrsetuptest.Step{{
				Replies:  map[string]r{scan: {Code: 200, Body: found}, get: {Code: 200, Body: one(fip(ourPort, 1, marker))}},
				Requests: []string{scan, get},
			}},
		},
		"KilledBeforePOST": {
			Reason:  "A provider killed before its POST reached Neutron: the marker proves there is no floating IP of the binding, and the restarted one allocates one.",
			Pending: true,
			Steps: []mrsetuptest.Step{{
				Replies:  map[string]r{scan: {Code: 200, Body: none}, byMarker: {Code: 200, Body: `{"floatingips": []}`}, post: {Code: 201, Body: one(fip(ourPort, 0, marker))}},
				Requests: []string{scan, byMarker, posted},
			}},
		},
		"LostAnswer": {
			Reason: "A POST whose answer is lost after Neutron allocated the floating IP fails the create; the next reconcile adopts it by its marker instead of allocating a second.",
			Steps: []mrsetuptest.Step{{
				Replies:  map[string]r{byMarker: {Code: 200, Body: `{"floatingips": []}`}, post: {Cut: true}},
				Requests: []string{byMarker, posted},
			}, {
				Replies:  map[string]r{scan: {Code: 200, Body: found}, get: {Code: 200, Body: one(fip(ourPort, 1, marker))}},
				Requests: []string{scan, get},
			}},
		},
		"PinnedKilled": {
			Reason:  "A pinned binding's create allocates nothing: after a kill it is simply done again, without asking Neutron whether something was created, and associates the customer's floating IP as Observe's lookup read it (one read).",
			Pending: true,
			Steps: []mrsetuptest.Step{{
				Replies: map[string]r{"GET /floatingips?floating_ip_address=" + address: {Code: 200, Body: list(fip("", 5))},
					put: {Code: 200, Body: one(fip(ourPort, 6))}},
				Requests: []string{"GET /floatingips?floating_ip_address=" + address,
					put + ` If-Match=revision_number=5 {"floatingip":{"port_id":"` + ourPort + `"}}`},
			}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			mg := allocated.DeepCopy()
			if name == "PinnedKilled" {
				mg = pinnedMG.DeepCopy()
			}
			mrsetuptest.Run(t, v1alpha1.FloatingIPBindingGroupVersionKind, mg, find,
				func(sc *gophercloud.ServiceClient) managed.TypedExternalClient[*v1alpha1.FloatingIPBinding] {
					return &external{neutron: sc}
				}, tc, fipID)
		})
	}
}
