package neutronobject

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"
	"github.com/crossplane/crossplane-runtime/v2/pkg/test"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
	"github.com/google/go-cmp/cmp"
	"github.com/gophercloud/gophercloud/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/ipsecgw/provider-ipsec/apis/cluster/networking/v1alpha1"
	"github.com/ipsecgw/provider-ipsec/internal/clients/openstack"
	"github.com/ipsecgw/provider-ipsec/internal/clients/openstack/neutrontest"
)

const netID = "11111111-1111-1111-1111-111111111111"

type reply = neutrontest.Reply

// network is the part of a Neutron network the test kind reads.
type network struct {
	ID           string `json:"id"`
	Name         string `json:"name"`
	Status       string `json:"status"`
	AdminStateUp bool   `json:"admin_state_up"`
}

// errReport is what the test kind's Report returns for a network named
// "unreadable", as a Port's does for a subnet it cannot read.
var errReport = errors.New("cannot read what status shows")

// kind is a Kind of Networks as small as the test needs: status.atProvider
// gets the ID and status, Ready unless status ERROR, adminStateUp
// late-initialized, the name compared.
var kind = Kind[*v1alpha1.Network, network]{
	Collection: openstack.Networks,
	Report: func(_ context.Context, _ *gophercloud.ServiceClient, mg *v1alpha1.Network, n *network) error {
		if n.Name == "unreadable" {
			return errReport
		}
		mg.Status.AtProvider = v1alpha1.NetworkObservation{ID: n.ID, Status: n.Status}
		return nil
	},
	Unready: func(_ *v1alpha1.Network, n *network) string { return StatusError(openstack.Networks, n.Status) },
	LateInit: func(mg *v1alpha1.Network, n *network) bool {
		if mg.Spec.ForProvider.AdminStateUp != nil {
			return false
		}
		mg.Spec.ForProvider.AdminStateUp = ptr.To(n.AdminStateUp)
		return true
	},
	Compare: func(mg *v1alpha1.Network, n *network) string {
		if want := ptr.Deref(mg.Spec.ForProvider.Name, n.Name); want != n.Name {
			return "name: " + cmp.Diff(want, n.Name)
		}
		return ""
	},
}

// body is a network's GET answer, for name and status.
func body(name, status string) string {
	return `{"network": {"id": "` + netID + `", "name": "` + name + `", "status": "` + status + `", "admin_state_up": true}}`
}

// mr is a Network named net whose external name is netID and whose spec
// asks for name "net" with adminStateUp set, changed by mods.
func mr(mods ...func(*v1alpha1.Network)) *v1alpha1.Network {
	n := &v1alpha1.Network{
		ObjectMeta: metav1.ObjectMeta{Name: "net", Annotations: map[string]string{meta.AnnotationKeyExternalName: netID}},
		Spec: v1alpha1.NetworkSpec{ForProvider: v1alpha1.NetworkParameters{
			Name: ptr.To("net"), AdminStateUp: ptr.To(true),
		}},
	}
	for _, m := range mods {
		m(n)
	}
	return n
}

func reported(status string) func(*v1alpha1.Network) {
	return func(n *v1alpha1.Network) {
		n.Status.AtProvider = v1alpha1.NetworkObservation{ID: netID, Status: status}
	}
}

func available(n *v1alpha1.Network) { n.SetConditions(xpv2.Available()) }

// deleting sets a deletion time: a zero one is no deletion
// (meta.WasDeleted).
func deleting(n *v1alpha1.Network) {
	n.DeletionTimestamp = ptr.To(metav1.NewTime(time.Date(2026, 12, 7, 21, 0, 0, 0, time.UTC)))
}

func withoutAdminState(n *v1alpha1.Network) { n.Spec.ForProvider.AdminStateUp = nil }

func TestObserve(t *testing.T) {
	get := "GET /networks/" + netID
	scan := "GET /networks?fields=id&fields=description&fields=tags"
	marker := openstack.Marker(mr())
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
			reason:  "An object Compare finds no difference in is up to date after one GET, reported in status and Ready.",
			replies: map[string]reply{get: {Code: 200, Body: body("net", "ACTIVE")}},
			mr:      mr(),
			want: want{
				obs:      managed.ExternalObservation{ResourceExists: true, ResourceUpToDate: true},
				mr:       mr(reported("ACTIVE"), available),
				requests: []string{get},
			},
		},
		"Differs": {
			reason:  "What Compare finds is the observation's Diff, and the object is not up to date.",
			replies: map[string]reply{get: {Code: 200, Body: body("renamed", "ACTIVE")}},
			mr:      mr(),
			want: want{
				obs:      managed.ExternalObservation{ResourceExists: true, Diff: "name: " + cmp.Diff("net", "renamed")},
				mr:       mr(reported("ACTIVE"), available),
				requests: []string{get},
			},
		},
		"Unready": {
			reason:  "What Unready says is the Ready condition's message; the object is still compared.",
			replies: map[string]reply{get: {Code: 200, Body: body("net", "ERROR")}},
			mr:      mr(),
			want: want{
				obs: managed.ExternalObservation{ResourceExists: true, ResourceUpToDate: true},
				mr: mr(reported("ERROR"), func(n *v1alpha1.Network) {
					n.SetConditions(xpv2.Unavailable().WithMessage("Neutron reports the network in status ERROR"))
				}),
				requests: []string{get},
			},
		},
		"LateInitialized": {
			reason:  "A field LateInit fills is in the spec, compared with it, and the MR is written back.",
			replies: map[string]reply{get: {Code: 200, Body: body("net", "ACTIVE")}},
			mr:      mr(withoutAdminState),
			want: want{
				obs:      managed.ExternalObservation{ResourceExists: true, ResourceUpToDate: true, ResourceLateInitialized: true},
				mr:       mr(reported("ACTIVE"), available),
				requests: []string{get},
			},
		},
		"Adopted": {
			reason: "Without an external name, the object carrying the MR's marker is adopted: its ID becomes the external name, written back like a late-initialized field.",
			replies: map[string]reply{
				scan: {Code: 200, Body: `{"networks": [{"id": "` + netID + `", "description": "` + marker + `"}]}`},
				get:  {Code: 200, Body: body("net", "ACTIVE")},
			},
			mr: mr(func(n *v1alpha1.Network) { meta.SetExternalName(n, "") }),
			want: want{
				obs:      managed.ExternalObservation{ResourceExists: true, ResourceUpToDate: true, ResourceLateInitialized: true},
				mr:       mr(reported("ACTIVE"), available),
				requests: []string{scan, get},
			},
		},
		"Gone": {
			reason: "An object that is gone, with none carrying the marker, does not exist: nothing is reported.",
			replies: map[string]reply{
				get:  {Code: 404, Body: neutrontest.Error("NetworkNotFound", "Network could not be found.")},
				scan: {Code: 200, Body: `{"networks": []}`},
			},
			mr:   mr(),
			want: want{mr: mr(), requests: []string{get, scan}},
		},
		"ReportFails": {
			reason:  "Report's error is Observe's, before any condition is set.",
			replies: map[string]reply{get: {Code: 200, Body: body("unreadable", "ACTIVE")}},
			mr:      mr(),
			want:    want{mr: mr(), err: errReport, requests: []string{get}},
		},
		"Deleting": {
			reason:  "An MR being deleted is reported, but only told that the object exists: neither late-initialized nor compared.",
			replies: map[string]reply{get: {Code: 200, Body: body("renamed", "ACTIVE")}},
			mr:      mr(deleting, withoutAdminState),
			want: want{
				obs:      managed.ExternalObservation{ResourceExists: true},
				mr:       mr(deleting, withoutAdminState, reported("ACTIVE"), available),
				requests: []string{get},
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			sc, seen := neutrontest.Serve(t, tc.replies)
			e := kind.External(sc, openstack.Settling{})
			obs, err := e.Observe(context.Background(), tc.mr)
			if diff := cmp.Diff(tc.want.err, err, test.EquateErrors()); diff != "" {
				t.Errorf("%s\nObserve(...): -want error, +got error:\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(tc.want.obs, obs); diff != "" {
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

func TestObject(t *testing.T) {
	get := "GET /networks/" + netID
	type want struct {
		o        *network
		err      string
		requests []string
	}
	cases := map[string]struct {
		reason   string
		replies  map[string]reply
		observed *network
		want     want
	}{
		"Observed": {
			reason:   "The object Observe read in this reconcile is Update's, without a request.",
			observed: &network{ID: netID, Name: "seen"},
			want:     want{o: &network{ID: netID, Name: "seen"}},
		},
		"NotObserved": {
			reason:  "Without Observe, the object is read by the external name.",
			replies: map[string]reply{get: {Code: 200, Body: body("net", "ACTIVE")}},
			want:    want{o: &network{ID: netID, Name: "net", Status: "ACTIVE", AdminStateUp: true}, requests: []string{get}},
		},
		"Gone": {
			reason:  "An object Neutron no longer has is an error naming it, for Update to return.",
			replies: map[string]reply{get: {Code: 404, Body: neutrontest.Error("NetworkNotFound", "Network could not be found.")}},
			want:    want{err: "cannot update Neutron network " + netID + ": Neutron no longer has it", requests: []string{get}},
		},
		"Fails": {
			reason:  "A failed read is an error with Neutron's type and message.",
			replies: map[string]reply{get: {Code: 503, Body: neutrontest.Error("ServiceUnavailable", "busy")}},
			want:    want{err: "cannot get Neutron network " + netID + ": Neutron 503 ServiceUnavailable: busy", requests: []string{get}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			sc, seen := neutrontest.Serve(t, tc.replies)
			e := kind.External(sc, openstack.Settling{})
			e.Observed = tc.observed
			o, err := e.Object(context.Background(), mr())
			got := want{o: o, err: neutrontest.Message(err), requests: *seen}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(want{})); diff != "" {
				t.Errorf("%s\nObject(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}
