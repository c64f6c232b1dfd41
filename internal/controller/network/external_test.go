package network

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"
	"github.com/crossplane/crossplane-runtime/v2/pkg/test"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/gophercloud/gophercloud/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/ipsecgw/provider-ipsec/apis/cluster/networking/v1alpha1"
	"github.com/ipsecgw/provider-ipsec/internal/clients/openstack"
	"github.com/ipsecgw/provider-ipsec/internal/clients/openstack/neutrontest"
	"github.com/ipsecgw/provider-ipsec/internal/controller/mrsetup/mrsetuptest"
)

const (
	netID = "11111111-1111-1111-1111-111111111111"
	subID = "22222222-2222-2222-2222-222222222222"
)

// marker is the MR's; marked the description Create gives the network of
// mr().
var (
	marker = openstack.Marker(mr())
	marked = "tenant A " + marker
)

type reply = neutrontest.Reply

// neutronNetworkJSON is a network matching mr(), changed by mods.
func neutronNetworkJSON(mods ...func(map[string]any)) map[string]any {
	n := map[string]any{
		"id": netID, "name": "tenant-net", "description": marked, "admin_state_up": true,
		"status": "ACTIVE", "subnets": []any{subID}, "mtu": 1450, "shared": false, "router:external": false,
		"tags": []any{"team-a"}, "revision_number": 4,
	}
	for _, m := range mods {
		m(n)
	}
	return n
}

// one is {"network": n}; list is {"networks": [ns...]}.
func one(n map[string]any) string { return encode(map[string]any{"network": n}) }
func list(ns ...map[string]any) string {
	items := make([]any, 0, len(ns))
	for _, n := range ns {
		items = append(items, n)
	}
	return encode(map[string]any{"networks": items})
}

func encode(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// mr is a Network whose spec matches neutronNetworkJSON(), changed by mods.
func mr(mods ...func(*v1alpha1.Network)) *v1alpha1.Network {
	n := &v1alpha1.Network{
		ObjectMeta: metav1.ObjectMeta{Name: "tenant-net", UID: "uid-1", Annotations: map[string]string{meta.AnnotationKeyExternalName: netID}},
		Spec: v1alpha1.NetworkSpec{ForProvider: v1alpha1.NetworkParameters{
			Name:        ptr.To("tenant-net"),
			Description: ptr.To("tenant A"),
			Tags:        []string{"team-a"},
		}},
	}
	for _, m := range mods {
		m(n)
	}
	return n
}

func withoutExternalName(n *v1alpha1.Network) { meta.SetExternalName(n, "") }

// deleting sets a deletion time: a zero one is no deletion
// (meta.WasDeleted).
func deleting(n *v1alpha1.Network) {
	n.DeletionTimestamp = ptr.To(metav1.NewTime(time.Date(2026, 12, 7, 21, 0, 0, 0, time.UTC)))
}

// observed is the status.atProvider of neutronNetworkJSON().
var observed = v1alpha1.NetworkObservation{ID: netID, Status: "ACTIVE", Subnets: []string{subID}, MTU: 1450, RevisionNumber: 4}

func available(n *v1alpha1.Network) {
	n.Status.AtProvider = observed
	n.SetConditions(xpv2.Available())
}

func TestObserve(t *testing.T) {
	get := "GET /networks/" + netID
	scan := "GET /networks?fields=id&fields=description&fields=tags"
	type want struct {
		obs      managed.ExternalObservation
		mr       *v1alpha1.Network
		err      error
		requests []string
	}
	cases := map[string]struct {
		reason  string
		replies map[string]reply
		mr      *v1alpha1.Network
		want    want
	}{
		"UpToDate": {
			reason:  "A network that matches the spec is up to date after exactly one GET, with its status, subnets and MTU in status.atProvider.",
			replies: map[string]reply{get: {Code: 200, Body: one(neutronNetworkJSON())}},
			mr:      mr(),
			want: want{
				obs:      managed.ExternalObservation{ResourceExists: true, ResourceUpToDate: true},
				mr:       mr(available),
				requests: []string{get},
			},
		},
		"ImportedExternalShared": {
			reason: "A network imported with nothing in forProvider reports its flags and is up to date: nothing is asked of a network the provider did not create.",
			replies: map[string]reply{get: {Code: 200, Body: one(neutronNetworkJSON(func(n map[string]any) {
				n["shared"], n["router:external"], n["tags"] = true, true, []any{}
			}))}},
			mr: mr(func(n *v1alpha1.Network) { n.Spec.ForProvider = v1alpha1.NetworkParameters{} }),
			want: want{
				obs: managed.ExternalObservation{ResourceExists: true, ResourceUpToDate: true},
				mr: mr(func(n *v1alpha1.Network) {
					n.Spec.ForProvider = v1alpha1.NetworkParameters{}
					available(n)
					n.Status.AtProvider.Shared, n.Status.AtProvider.External = true, true
				}),
				requests: []string{get},
			},
		},
		"NotFound": {
			reason: "A network that is gone (404 NetworkNotFound), with no other network carrying the marker, does not exist.",
			replies: map[string]reply{
				get:  {Code: 404, Body: neutrontest.Error("NetworkNotFound", "Network could not be found.")},
				scan: {Code: 200, Body: `{"networks": []}`},
			},
			mr:   mr(),
			want: want{mr: mr(), requests: []string{get, scan}},
		},
		"GetFails": {
			reason:  "Other errors of the GET carry Neutron's status, type and message, the Network's name and the network ID.",
			replies: map[string]reply{get: {Code: 503, Body: neutrontest.Error("ServiceUnavailable", "try again later")}},
			mr:      mr(),
			want: want{
				mr:       mr(),
				err:      errors.New("cannot get Neutron network " + netID + ": Neutron 503 ServiceUnavailable: try again later"),
				requests: []string{get},
			},
		},
		"StatusError": {
			reason:  "A network Neutron reports in status ERROR exists but is not available.",
			replies: map[string]reply{get: {Code: 200, Body: one(neutronNetworkJSON(func(n map[string]any) { n["status"] = "ERROR" }))}},
			mr:      mr(),
			want: want{
				obs: managed.ExternalObservation{ResourceExists: true, ResourceUpToDate: true},
				mr: mr(func(n *v1alpha1.Network) {
					n.Status.AtProvider = observed
					n.Status.AtProvider.Status = "ERROR"
					n.SetConditions(xpv2.Unavailable().WithMessage("Neutron reports the network in status ERROR"))
				}),
				requests: []string{get},
			},
		},
		"NameDrift": {
			reason:  "A name changed by hand is drift.",
			replies: map[string]reply{get: {Code: 200, Body: one(neutronNetworkJSON(func(n map[string]any) { n["name"] = "renamed" }))}},
			mr:      mr(),
			want:    want{obs: managed.ExternalObservation{ResourceExists: true}, mr: mr(available), requests: []string{get}},
		},
		"AdoptLostAnswer": {
			reason:  "With no external name, the one network carrying the marker (a create whose answer was lost, or a deleted Network of the same name applied again) is adopted: its ID becomes the external name, to be saved.",
			replies: map[string]reply{scan: {Code: 200, Body: list(neutronNetworkJSON())}, get: {Code: 200, Body: one(neutronNetworkJSON())}},
			mr:      mr(withoutExternalName),
			want: want{
				obs:      managed.ExternalObservation{ResourceExists: true, ResourceUpToDate: true, ResourceLateInitialized: true},
				mr:       mr(available),
				requests: []string{scan, get},
			},
		},
		"NoneCreated": {
			reason:  "With no external name and no network carrying the marker, the network does not exist.",
			replies: map[string]reply{scan: {Code: 200, Body: list()}},
			mr:      mr(withoutExternalName),
			want:    want{mr: mr(withoutExternalName), requests: []string{scan}},
		},
		"TwoCreated": {
			reason:  "Two networks carrying the marker are an error naming both; neither is adopted.",
			replies: map[string]reply{scan: {Code: 200, Body: list(neutronNetworkJSON(), neutronNetworkJSON(func(n map[string]any) { n["id"] = "other" }))}},
			mr:      mr(withoutExternalName),
			want: want{
				mr:       mr(withoutExternalName),
				err:      errors.New("cannot tell which of 2 Neutron networks carrying " + marker + " (" + netID + ", other) to adopt: delete all but one by hand"),
				requests: []string{scan},
			},
		},
		"Deleting": {
			reason:  "A Network being deleted only reports that the network exists: a network that matches the spec is not said to be up to date, since it is not compared.",
			replies: map[string]reply{get: {Code: 200, Body: one(neutronNetworkJSON())}},
			mr:      mr(deleting),
			want: want{
				obs:      managed.ExternalObservation{ResourceExists: true},
				mr:       mr(deleting, available),
				requests: []string{get},
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			sc, seen := neutrontest.Serve(t, tc.replies)
			obs, err := NewExternal(sc, openstack.Settling{}).Observe(context.Background(), tc.mr)
			if diff := cmp.Diff(neutrontest.Message(tc.want.err), neutrontest.Message(err)); diff != "" {
				t.Errorf("%s\nObserve(...): -want error, +got error:\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(tc.want.obs, obs, cmpopts.IgnoreFields(managed.ExternalObservation{}, "Diff")); diff != "" {
				t.Errorf("%s\nObserve(...): -want, +got:\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(tc.want.mr, tc.mr, test.EquateConditions()); diff != "" {
				t.Errorf("%s\nObserve(...): -want managed resource, +got:\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(tc.want.requests, *seen); diff != "" {
				t.Errorf("%s\nObserve(...): -want requests, +got requests:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestCreate(t *testing.T) {
	post := "POST /networks"
	putTags := "PUT /networks/" + netID + "/tags"
	cases := map[string]struct {
		reason   string
		replies  map[string]reply
		mr       *v1alpha1.Network
		err      error
		name     string
		requests []string
		refused  bool
	}{
		"CreatedAndTagged": {
			reason: "The network is created with the spec's attributes and the description carrying the MR's marker, named by its ID, then tagged with spec.tags.",
			replies: map[string]reply{
				post:    {Code: 201, Body: one(neutronNetworkJSON(func(n map[string]any) { n["tags"] = []any{} }))},
				putTags: {Code: 200, Body: `{"tags":["team-a"]}`},
			},
			mr:   mr(withoutExternalName, func(n *v1alpha1.Network) { n.Spec.ForProvider.AdminStateUp = ptr.To(true) }),
			name: netID,
			requests: []string{
				post + ` {"network":{"admin_state_up":true,"description":"` + marked + `","name":"tenant-net"}}`,
				putTags + ` {"tags":["team-a"]}`,
			},
		},
		"Refused": {
			reason:   "A refused create is an error with Neutron's type and message; there is no external name.",
			replies:  map[string]reply{post: {Code: 409, Body: neutrontest.Error("OverQuota", "Quota exceeded for resources: ['network'].")}},
			mr:       mr(withoutExternalName),
			refused:  true,
			err:      errors.New("cannot create Neutron network: Neutron 409 OverQuota: Quota exceeded for resources: ['network']."),
			requests: []string{post + ` {"network":{"description":"` + marked + `","name":"tenant-net"}}`},
		},
		"TaggingFails": {
			reason: "When tagging fails the external name is set all the same, for the reconciler to save; Update tags it later.",
			replies: map[string]reply{
				post:    {Code: 201, Body: one(neutronNetworkJSON(func(n map[string]any) { n["tags"] = []any{} }))},
				putTags: {Code: 500, Body: neutrontest.Error("HTTPInternalServerError", "boom")},
			},
			mr:   mr(withoutExternalName),
			err:  errors.New("cannot set the tags of Neutron network " + netID + ": Neutron 500 HTTPInternalServerError: boom"),
			name: netID,
			requests: []string{
				post + ` {"network":{"description":"` + marked + `","name":"tenant-net"}}`,
				putTags + ` {"tags":["team-a"]}`,
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			sc, seen := neutrontest.Serve(t, tc.replies)
			_, err := NewExternal(sc, openstack.Settling{}).Create(context.Background(), tc.mr)
			if diff := cmp.Diff(neutrontest.Message(tc.err), neutrontest.Message(err)); diff != "" {
				t.Errorf("%s\nCreate(...): -want error, +got error:\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(tc.name, meta.GetExternalName(tc.mr)); diff != "" {
				t.Errorf("%s\nCreate(...): -want external name, +got:\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(tc.requests, *seen); diff != "" {
				t.Errorf("%s\nCreate(...): -want requests, +got requests:\n%s", tc.reason, diff)
			}
			_, refused := tc.mr.GetAnnotations()[openstack.AnnotationCreateRefused]
			if diff := cmp.Diff(tc.refused, refused); diff != "" {
				t.Errorf("%s\nCreate(...): -want refusal recorded, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestUpdate(t *testing.T) {
	get := "GET /networks/" + netID
	put := "PUT /networks/" + netID
	putTags := put + "/tags"
	cases := map[string]struct {
		reason   string
		replies  map[string]reply
		network  map[string]any
		mr       *v1alpha1.Network
		err      error
		requests []string
	}{
		"AttributesAndTags": {
			reason: "Changed attributes go in one PUT with If-Match: revision_number, the tag set in another.",
			replies: map[string]reply{
				put:     {Code: 200, Body: one(neutronNetworkJSON())},
				putTags: {Code: 200, Body: `{"tags":[]}`},
			},
			network: neutronNetworkJSON(func(n map[string]any) {
				n["name"], n["admin_state_up"], n["tags"] = "old", false, []any{"by-hand"}
			}),
			mr: mr(func(n *v1alpha1.Network) { n.Spec.ForProvider.AdminStateUp = ptr.To(true) }),
			requests: []string{
				put + ` If-Match=revision_number=4 {"network":{"admin_state_up":true,"name":"tenant-net"}}`,
				putTags + ` {"tags":["team-a"]}`,
			},
		},
		"OnlyTags": {
			reason:   "Tags alone need no PUT of the network.",
			replies:  map[string]reply{putTags: {Code: 200, Body: `{"tags":[]}`}},
			network:  neutronNetworkJSON(func(n map[string]any) { n["tags"] = []any{"team-a", "by-hand"} }),
			mr:       mr(),
			requests: []string{putTags + ` {"tags":["team-a"]}`},
		},
		"StaleRevision": {
			reason:   "A network changed since Observe gets 412 from Neutron; the error says so and tags are not touched.",
			replies:  map[string]reply{put: {Code: 412, Body: neutrontest.Error("RevisionNumberConstraintFailed", "Constrained to 4, but current revision is 5")}},
			network:  neutronNetworkJSON(func(n map[string]any) { n["description"] = "" }),
			mr:       mr(),
			err:      errors.New("cannot update Neutron network " + netID + ": Neutron 412 RevisionNumberConstraintFailed: Constrained to 4, but current revision is 5"),
			requests: []string{put + ` If-Match=revision_number=4 {"network":{"description":"tenant A"}}`},
		},
		"NotObserved": {
			reason: "Without a network from Observe, Update reads it first; a changed description keeps the marker.",
			replies: map[string]reply{
				get: {Code: 200, Body: one(neutronNetworkJSON(func(n map[string]any) { n["description"] = marker }))},
				put: {Code: 200, Body: one(neutronNetworkJSON())},
			},
			mr:       mr(),
			requests: []string{get, put + ` If-Match=revision_number=4 {"network":{"description":"` + marked + `"}}`},
		},
		"NotObservedGone": {
			reason:   "Without a network from Observe, a network Neutron no longer has is an error naming it, and nothing is sent.",
			replies:  map[string]reply{get: {Code: 404, Body: neutrontest.Error("NetworkNotFound", "Network could not be found.")}},
			mr:       mr(),
			err:      errors.New("cannot update Neutron network " + netID + ": Neutron no longer has it"),
			requests: []string{get},
		},
		"LegacyTagRemoved": {
			reason:   "The crossplane-uid tag an earlier provider put on the network is not in spec.tags: the tags are set to exactly spec.tags.",
			replies:  map[string]reply{putTags: {Code: 200, Body: `{"tags":["team-a"]}`}},
			network:  neutronNetworkJSON(func(n map[string]any) { n["tags"] = []any{"team-a", "crossplane-uid-uid-1"} }),
			mr:       mr(),
			requests: []string{putTags + ` {"tags":["team-a"]}`},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			sc, seen := neutrontest.Serve(t, tc.replies)
			e := &external{object.External(sc, openstack.Settling{})}
			if tc.network != nil {
				// Decoded as gophercloud does, for the embedded
				// extensions' fields.
				r := gophercloud.Result{Body: map[string]any{"network": tc.network}}
				e.Observed = &neutronNetwork{}
				if err := r.ExtractIntoStructPtr(e.Observed, "network"); err != nil {
					t.Fatal(err)
				}
			}
			_, err := e.Update(context.Background(), tc.mr)
			if diff := cmp.Diff(neutrontest.Message(tc.err), neutrontest.Message(err)); diff != "" {
				t.Errorf("%s\nUpdate(...): -want error, +got error:\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(tc.requests, *seen); diff != "" {
				t.Errorf("%s\nUpdate(...): -want requests, +got requests:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestDelete(t *testing.T) {
	del := "DELETE /networks/" + netID
	scan := "GET /networks?fields=id&fields=description&fields=tags"
	cases := map[string]struct {
		reason   string
		replies  map[string]reply
		mr       *v1alpha1.Network
		err      error
		requests []string
	}{
		"Deleted": {
			reason:   "The network is deleted with one DELETE, and one list finds no twin carrying the marker.",
			replies:  map[string]reply{del: {Code: 204}, scan: {Code: 200, Body: `{"networks": []}`}},
			mr:       mr(),
			requests: []string{del, scan},
		},
		"AlreadyGone": {
			reason:   "A network that is already gone (404) is deleted.",
			replies:  map[string]reply{del: {Code: 404, Body: neutrontest.Error("NetworkNotFound", "gone")}, scan: {Code: 200, Body: `{"networks": []}`}},
			mr:       mr(),
			requests: []string{del, scan},
		},
		"InUse": {
			reason:   "A network with ports is refused (409 NetworkInUse): an error with Neutron's type and message, for the reconciler to retry.",
			replies:  map[string]reply{del: {Code: 409, Body: neutrontest.Error("NetworkInUse", "Unable to complete operation on network. There are one or more ports still in use on the network.")}},
			mr:       mr(),
			err:      errors.New("cannot delete Neutron network " + netID + ": Neutron 409 NetworkInUse: Unable to complete operation on network. There are one or more ports still in use on the network."),
			requests: []string{del},
		},
		"NeverCreated": {
			reason: "An MR without an external name has no network to delete.",
			mr:     mr(withoutExternalName),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			sc, seen := neutrontest.Serve(t, tc.replies)
			_, err := NewExternal(sc, openstack.Settling{}).Delete(context.Background(), tc.mr)
			if diff := cmp.Diff(neutrontest.Message(tc.err), neutrontest.Message(err)); diff != "" {
				t.Errorf("%s\nDelete(...): -want error, +got error:\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(tc.requests, *seen); diff != "" {
				t.Errorf("%s\nDelete(...): -want requests, +got requests:\n%s", tc.reason, diff)
			}
		})
	}
}

// TestCrashSafeCreate runs the managed reconciler with the OpenStack
// kinds' options, one fresh reconciler per step as after a provider
// restart, through the ways a create can be interrupted. Neutron must end
// with one network for the MR, whose ID is the MR's external name.
func TestCrashSafeCreate(t *testing.T) {
	scan := "GET /networks?fields=id&fields=description&fields=tags"
	get := "GET /networks/" + netID
	post := "POST /networks"
	posted := post + ` {"network":{"description":"` + marked + `","name":"tenant-net"}}`
	tagged := "PUT /networks/" + netID + `/tags {"tags":["team-a"]}`
	found := `{"networks": [{"id": "` + netID + `", "description": "` + marked + `"}]}`
	none := `{"networks": [{"id": "theirs", "description": "tenant A"}]}`
	created := reply{Code: 201, Body: one(neutronNetworkJSON(func(n map[string]any) { n["tags"] = []any{} }))}
	cases := map[string]mrsetuptest.Case{
		"KilledAfterPOST": {
			Reason:  "A provider killed after Neutron created the network, before the ID was saved (and before its tags were set): the restarted one finds the network by its marker, adopts it and tags it, without a second POST.",
			Pending: true,
			Steps: []mrsetuptest.Step{{
				Replies: map[string]reply{scan: {Code: 200, Body: found}, get: {Code: 200, Body: one(neutronNetworkJSON(func(n map[string]any) { n["tags"] = []any{} }))},
					"PUT /networks/" + netID + "/tags": {Code: 200, Body: `{"tags":["team-a"]}`}},
				Requests: []string{scan, get, tagged},
			}},
		},
		"KilledBeforePOST": {
			Reason:  "A provider killed before its POST reached Neutron: the marker proves there is no network (one with the same description but no marker is another's), and the restarted one creates it once.",
			Pending: true,
			Steps: []mrsetuptest.Step{{
				Replies: map[string]reply{scan: {Code: 200, Body: none}, post: created,
					"PUT /networks/" + netID + "/tags": {Code: 200, Body: `{"tags":["team-a"]}`}},
				Requests: []string{scan, scan, posted, tagged},
			}},
		},
		"LostAnswer": {
			Reason: "A POST whose answer is lost after Neutron created the network fails the create; the next reconcile adopts the network by its marker instead of creating a twin.",
			Steps: []mrsetuptest.Step{{
				Replies:  map[string]reply{scan: {Code: 200, Body: none}, post: {Cut: true}},
				Requests: []string{scan, posted},
			}, {
				Replies:  map[string]reply{scan: {Code: 200, Body: found}, get: {Code: 200, Body: one(neutronNetworkJSON())}},
				Requests: []string{scan, get},
			}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			mrsetuptest.Run(t, v1alpha1.NetworkGroupVersionKind, mr(withoutExternalName), openstack.ScanFinder(openstack.Networks),
				NewExternal, tc, netID)
		})
	}
}
