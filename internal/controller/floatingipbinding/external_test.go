package floatingipbinding

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
	"github.com/google/go-cmp/cmp"
	fake "github.com/gophercloud/gophercloud/v2/openstack/networking/v2/common"
	th "github.com/gophercloud/gophercloud/v2/testhelper"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/ipsecgw/provider-ipsec/apis/cluster/networking/v1alpha1"
	"github.com/ipsecgw/provider-ipsec/internal/clients/openstack"
	"github.com/ipsecgw/provider-ipsec/internal/clients/openstack/neutrontest"
	"github.com/ipsecgw/provider-ipsec/internal/controller/mrsetup/mrsetuptest"
)

const (
	fipID   = "6f1b4c1e-5a2d-4b8e-9d51-0c8a3f2b7e10"
	ourPort = "0b4a7d3e-2c1f-4e9a-8b6d-5f3e2a1c9d70"
	vmPort  = "9c8b7a6d-5e4f-4a3b-8c2d-1e0f9a8b7c60"
	extNet  = "095bc516-ad9b-4e47-ab51-9bd699535a0c"
	address = "203.0.113.5"
	uid     = "11111111-2222-4333-8444-555555555555"
	// otherFIP is a floating IP that is not the binding's.
	otherFIP = "7a7a7a7a-1b1b-4c2c-8d3d-4e4e4e4e4e4e"
)

// fip is a Neutron floating IP as JSON, bound to port (none when ""), with
// description desc (none when not given).
func fip(port string, rev int, desc ...string) string {
	p, f := "null", "null"
	if port != "" {
		p, f = `"`+port+`"`, `"10.20.0.10"`
	}
	return fmt.Sprintf(`{"id": %q, "floating_ip_address": %q, "floating_network_id": %q, "port_id": %s, "fixed_ip_address": %s,
		"status": "DOWN", "description": %q, "tags": [], "revision_number": %d}`, fipID, address, extNet, p, f, strings.Join(desc, ""), rev)
}

// other is a floating IP that is not the binding's, on port.
func other(port string) string {
	return fmt.Sprintf(`{"id": %q, "floating_ip_address": "203.0.113.77", "floating_network_id": %q, "port_id": %q,
		"fixed_ip_address": "10.20.0.10", "status": "ACTIVE", "description": "theirs", "revision_number": 3}`, otherFIP, extNet, port)
}

func one(obj string) string     { return `{"floatingip": ` + obj + `}` }
func list(obj ...string) string { return `{"floatingips": [` + strings.Join(obj, ",") + `]}` }

func neutronError(typ, msg string) string {
	return fmt.Sprintf(`{"NeutronError": {"type": %q, "message": %q, "detail": ""}}`, typ, msg)
}

// reply is a canned answer of the fake Neutron.
type reply struct {
	code int
	body string
}

// call is a request the fake Neutron received.
type call struct {
	Request string // "METHOD path[?query]"
	IfMatch string
	Body    string
}

// neutron serves the canned replies, keyed by "METHOD path[?query]", and
// records every request; a request with no reply fails the test.
type neutron struct {
	t       *testing.T
	replies map[string]reply
	mu      sync.Mutex
	calls   []call
}

func (n *neutron) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	key := r.Method + " " + r.URL.Path
	if r.URL.RawQuery != "" {
		key += "?" + r.URL.RawQuery
	}
	b, _ := io.ReadAll(r.Body)
	n.mu.Lock()
	n.calls = append(n.calls, call{Request: key, IfMatch: r.Header.Get("If-Match"), Body: strings.TrimSpace(string(b))})
	n.mu.Unlock()
	rep, ok := n.replies[key]
	if !ok {
		n.t.Errorf("unexpected request %s", key)
		w.WriteHeader(http.StatusTeapot)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(rep.code)
	_, _ = io.WriteString(w, rep.body)
}

// serve starts a fake Neutron with replies and returns an external client
// of it and the fake.
func serve(t *testing.T, replies map[string]reply) (*external, *neutron) {
	t.Helper()
	srv := th.SetupHTTP()
	t.Cleanup(srv.Teardown)
	n := &neutron{t: t, replies: replies}
	srv.Mux.Handle("/", n)
	return &external{neutron: fake.ServiceClient(srv)}, n
}

type option func(*v1alpha1.FloatingIPBinding)

func withExternalName(n string) option {
	return func(mg *v1alpha1.FloatingIPBinding) { meta.SetExternalName(mg, n) }
}

func withFixedIP(ip string) option {
	return func(mg *v1alpha1.FloatingIPBinding) { mg.Spec.ForProvider.FixedIP = ptr.To(v1alpha1.IPAddress(ip)) }
}

func withPinned(mg *v1alpha1.FloatingIPBinding) {
	mg.Spec.ForProvider.FloatingIPAddress = ptr.To(v1alpha1.IPAddress(address))
	mg.Spec.ForProvider.FloatingNetworkID = nil
}

func withDeleting(mg *v1alpha1.FloatingIPBinding) {
	now := metav1.Unix(1700000000, 0)
	mg.SetDeletionTimestamp(&now)
}

func withDescription(d string) option {
	return func(mg *v1alpha1.FloatingIPBinding) { mg.Spec.ForProvider.Description = ptr.To(d) }
}

func withStatus(o v1alpha1.FloatingIPBindingObservation, c ...xpv2.Condition) option {
	return func(mg *v1alpha1.FloatingIPBinding) {
		mg.Status.AtProvider = o
		mg.SetConditions(c...)
	}
}

// binding is an allocated binding of ourPort named "fip", external name
// as the default initializer leaves it, unless options say otherwise.
func binding(opts ...option) *v1alpha1.FloatingIPBinding {
	mg := &v1alpha1.FloatingIPBinding{ObjectMeta: metav1.ObjectMeta{Name: "fip", UID: uid}}
	mg.Spec.ForProvider = v1alpha1.FloatingIPBindingParameters{
		FloatingNetworkID: ptr.To(v1alpha1.UUID(extNet)),
		PortID:            ptr.To(ourPort),
	}
	meta.SetExternalName(mg, "fip")
	for _, o := range opts {
		o(mg)
	}
	return mg
}

func attachedStatus(pinned bool, rev int) v1alpha1.FloatingIPBindingObservation {
	return v1alpha1.FloatingIPBindingObservation{FloatingIPID: fipID, FloatingIPAddress: address, PortID: ourPort,
		FixedIP: "10.20.0.10", Attached: true, Pinned: pinned, Status: "DOWN", RevisionNumber: rev}
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

const (
	getFIP    = "GET /v2.0/floatingips/" + fipID
	putFIP    = "PUT /v2.0/floatingips/" + fipID
	byAddr    = "GET /v2.0/floatingips?floating_ip_address=" + address
	onOurPort = "GET /v2.0/floatingips?floating_network_id=" + extNet + "&port_id=" + ourPort
	// onAnyNetwork is a pinned binding's look-up: it names no network.
	onAnyNetwork = "GET /v2.0/floatingips?port_id=" + ourPort
	post         = "POST /v2.0/floatingips"
	// scanFIP is the scan for the binding's marker in every floating IP.
	scanFIP = "GET /v2.0/floatingips?fields=id&fields=description&fields=tags"
)

// marker is the binding's marker in the description of the floating IP
// it allocates.
var marker = openstack.Marker(binding())

func TestObserve(t *testing.T) {
	released := metav1.Unix(1764616928, 0)
	type want struct {
		o     managed.ExternalObservation
		err   string
		mg    *v1alpha1.FloatingIPBinding
		calls []string
	}
	cases := map[string]struct {
		reason  string
		replies map[string]reply
		mg      *v1alpha1.FloatingIPBinding
		want    want
	}{
		"AttachedIsOneGET": {
			reason:  "An attached binding with a known ID is observed with exactly one GET, up to date and Available.",
			replies: map[string]reply{getFIP: {200, one(fip(ourPort, 4, marker))}},
			mg:      binding(withExternalName(fipID), withDescription("")),
			want: want{
				o:     managed.ExternalObservation{ResourceExists: true, ResourceUpToDate: true},
				mg:    binding(withExternalName(fipID), withDescription(""), withStatus(attachedStatus(false, 4), xpv2.Available())),
				calls: []string{getFIP},
			},
		},
		"PinnedFoundBoundElsewhere": {
			reason:  "A pinned binding without an ID looks the address up with one GET, adopts the ID even though another port holds it, and reports it not up to date (Update refuses it) without changing Neutron; the status names no port (the other may be another namespace's).",
			replies: map[string]reply{byAddr: {200, list(fip(vmPort, 7))}},
			mg:      binding(withPinned),
			want: want{
				o: managed.ExternalObservation{ResourceExists: true, ResourceLateInitialized: true,
					Diff: cmp.Diff(state{PortID: ourPort, FixedIP: "10.20.0.10"}, state{PortID: vmPort, FixedIP: "10.20.0.10"})},
				mg: binding(withPinned, withExternalName(fipID), withStatus(v1alpha1.FloatingIPBindingObservation{
					FloatingIPID: fipID, FloatingIPAddress: address,
					Pinned: true, Status: "DOWN", RevisionNumber: 7}, xpv2.Unavailable())),
				calls: []string{byAddr},
			},
		},
		"PinnedMissing": {
			reason:  "A pinned address that does not exist (Neutron answers 200 with an empty list) is an error naming the address.",
			replies: map[string]reply{byAddr: {200, list()}},
			mg:      binding(withPinned),
			want: want{
				err:   fmt.Sprintf(errPinnedMissing, address),
				mg:    binding(withPinned),
				calls: []string{byAddr},
			},
		},
		"PinnedMissingWhileDeleting": {
			reason:  "A binding of a missing pinned address can be deleted: it does not exist.",
			replies: map[string]reply{byAddr: {200, list()}},
			mg:      binding(withPinned, withDeleting),
			want: want{
				mg:    binding(withPinned, withDeleting, withStatus(v1alpha1.FloatingIPBindingObservation{Pinned: true})),
				calls: []string{byAddr},
			},
		},
		"PinnedIDGoneLooksUpAddress": {
			reason: "A pinned floating IP whose ID is gone is looked up by address again.",
			replies: map[string]reply{
				getFIP: {404, neutronError("FloatingIPNotFound", "Floating IP "+fipID+" could not be found")},
				byAddr: {200, list()},
			},
			mg: binding(withPinned, withExternalName(fipID)),
			want: want{
				err:   fmt.Sprintf(errPinnedMissing, address),
				mg:    binding(withPinned, withExternalName(fipID)),
				calls: []string{getFIP, byAddr},
			},
		},
		"PinnedDeletingBoundElsewhere": {
			reason:  "While deleting, a pinned floating IP bound to another port does not exist for the reconciler: Delete has nothing to do.",
			replies: map[string]reply{getFIP: {200, one(fip(vmPort, 2))}},
			mg:      binding(withPinned, withExternalName(fipID), withDeleting),
			want: want{
				mg: binding(withPinned, withExternalName(fipID), withDeleting, withStatus(v1alpha1.FloatingIPBindingObservation{
					FloatingIPID: fipID, FloatingIPAddress: address,
					Pinned: true, Status: "DOWN", RevisionNumber: 2})),
				calls: []string{getFIP},
			},
		},
		"PinnedDeletingBoundToUs": {
			reason:  "While deleting, a pinned floating IP bound to our port exists, so that Delete disassociates it.",
			replies: map[string]reply{getFIP: {200, one(fip(ourPort, 2))}},
			mg:      binding(withPinned, withExternalName(fipID), withDeleting),
			want: want{
				o:     managed.ExternalObservation{ResourceExists: true},
				mg:    binding(withPinned, withExternalName(fipID), withDeleting, withStatus(attachedStatus(true, 2))),
				calls: []string{getFIP},
			},
		},
		"AllocatedAdoptedLostAnswer": {
			reason: "An allocated binding without an ID adopts the floating IP whose description carries its marker (a create whose answer was lost, or a deleted binding of the same name applied again).",
			replies: map[string]reply{
				scanFIP: {200, list(`{"id": "` + fipID + `", "description": "` + marker + `"}`)},
				getFIP:  {200, one(fip(ourPort, 1, marker))},
			},
			mg: binding(withDescription("")),
			want: want{
				o:     managed.ExternalObservation{ResourceExists: true, ResourceUpToDate: true, ResourceLateInitialized: true},
				mg:    binding(withDescription(""), withExternalName(fipID), withStatus(attachedStatus(false, 1), xpv2.Available())),
				calls: []string{scanFIP, getFIP},
			},
		},
		"AllocatedNotCreated": {
			reason:  "An allocated binding with no floating IP carrying its marker does not exist yet.",
			replies: map[string]reply{scanFIP: {200, list()}},
			mg:      binding(),
			want:    want{mg: binding(), calls: []string{scanFIP}},
		},
		"AllocatedGone": {
			reason: "An allocated floating IP whose ID answers 404, with no other carrying the binding's marker, does not exist.",
			replies: map[string]reply{
				getFIP:  {404, neutronError("FloatingIPNotFound", "not found")},
				scanFIP: {200, list(other(vmPort))},
			},
			mg:   binding(withExternalName(fipID)),
			want: want{mg: binding(withExternalName(fipID)), calls: []string{getFIP, scanFIP}},
		},
		"AllocatedGoneRelocated": {
			reason: "An allocated binding whose ID answers 404 while the floating IP carrying its marker exists (an older ID written over the newest) adopts that one rather than allocating a second.",
			replies: map[string]reply{
				"GET /v2.0/floatingips/" + otherFIP: {404, neutronError("FloatingIPNotFound", "not found")},
				scanFIP:                             {200, list(`{"id": "` + fipID + `", "description": "` + marker + `"}`)},
				getFIP:                              {200, one(fip(ourPort, 1, marker))},
			},
			mg: binding(withDescription(""), withExternalName(otherFIP)),
			want: want{
				o:     managed.ExternalObservation{ResourceExists: true, ResourceUpToDate: true, ResourceLateInitialized: true},
				mg:    binding(withDescription(""), withExternalName(fipID), withStatus(attachedStatus(false, 1), xpv2.Available())),
				calls: []string{"GET /v2.0/floatingips/" + otherFIP, scanFIP, getFIP},
			},
		},
		"AllocatedTwinReleasedByTheCheck": {
			reason: "An allocated binding whose create followed an interrupted one (the twin check's annotation, its time passed) releases a twin carrying its marker that Neutron allocated late, ends the check and has the binding saved.",
			replies: map[string]reply{
				getFIP:                          {200, one(fip(ourPort, 1, marker))},
				scanFIP:                         {200, list(`{"id": "`+fipID+`", "description": "`+marker+`"}`, `{"id": "late", "description": "`+marker+`"}`, other(vmPort))},
				"DELETE /v2.0/floatingips/late": {204, ""},
			},
			mg: binding(withDescription(""), withExternalName(fipID), func(mg *v1alpha1.FloatingIPBinding) {
				meta.AddAnnotations(mg, map[string]string{openstack.AnnotationTwinCheck: time.Now().Add(-time.Minute).UTC().Format(time.RFC3339)})
			}),
			want: want{
				o:     managed.ExternalObservation{ResourceExists: true, ResourceUpToDate: true, ResourceLateInitialized: true},
				mg:    binding(withDescription(""), withExternalName(fipID), withStatus(attachedStatus(false, 1), xpv2.Available())),
				calls: []string{getFIP, scanFIP, "DELETE /v2.0/floatingips/late"},
			},
		},
		"AllocatedMarkerIsNoDrift": {
			reason:  "The marker after the user's description is no drift, and is not late-initialized into the spec.",
			replies: map[string]reply{getFIP: {200, one(fip(ourPort, 3, "vpn "+marker))}},
			mg:      binding(withExternalName(fipID), withDescription("vpn")),
			want: want{
				o:     managed.ExternalObservation{ResourceExists: true, ResourceUpToDate: true},
				mg:    binding(withExternalName(fipID), withDescription("vpn"), withStatus(attachedStatus(false, 3), xpv2.Available())),
				calls: []string{getFIP},
			},
		},
		"AllocatedLateInitUnmarked": {
			reason:  "An unset description is late-initialized with the user's part only, without the marker.",
			replies: map[string]reply{getFIP: {200, one(fip(ourPort, 3, "vpn "+marker))}},
			mg:      binding(withExternalName(fipID)),
			want: want{
				o:     managed.ExternalObservation{ResourceExists: true, ResourceUpToDate: true, ResourceLateInitialized: true},
				mg:    binding(withExternalName(fipID), withDescription("vpn"), withStatus(attachedStatus(false, 3), xpv2.Available())),
				calls: []string{getFIP},
			},
		},
		"PinnedTakenOffOurPort": {
			reason:  "A pinned floating IP that the last observation had on the binding's port and that is on no port now (the rollback's unset) is noted as released in status.atProvider.releasedAt, with no update of the object.",
			replies: map[string]reply{getFIP: {200, one(fip("", 8))}},
			mg:      binding(withPinned, withExternalName(fipID), withStatus(attachedStatus(true, 7), xpv2.Available())),
			want: want{
				o: managed.ExternalObservation{ResourceExists: true, Diff: cmp.Diff(state{PortID: ourPort}, state{})},
				mg: binding(withPinned, withExternalName(fipID), withStatus(v1alpha1.FloatingIPBindingObservation{
					FloatingIPID: fipID, FloatingIPAddress: address, Pinned: true, Status: "DOWN", RevisionNumber: 8,
					ReleasedAt: &metav1.Time{}}, xpv2.Unavailable())),
				calls: []string{getFIP},
			},
		},
		"PinnedStillReleased": {
			reason:  "The time of a release is kept while the floating IP stays on no port.",
			replies: map[string]reply{getFIP: {200, one(fip("", 9))}},
			mg: binding(withPinned, withExternalName(fipID), withStatus(v1alpha1.FloatingIPBindingObservation{
				FloatingIPID: fipID, FloatingIPAddress: address, Pinned: true, Status: "DOWN", RevisionNumber: 8, ReleasedAt: &released})),
			want: want{
				o: managed.ExternalObservation{ResourceExists: true, Diff: cmp.Diff(state{PortID: ourPort}, state{})},
				mg: binding(withPinned, withExternalName(fipID), withStatus(v1alpha1.FloatingIPBindingObservation{
					FloatingIPID: fipID, FloatingIPAddress: address, Pinned: true, Status: "DOWN", RevisionNumber: 9,
					ReleasedAt: &released}, xpv2.Unavailable())),
				calls: []string{getFIP},
			},
		},
		"PinnedFreedByTheVMNotNoted": {
			reason:  "A pinned floating IP the VM let go of (the cutover: the last observation had it on the VM's port) is not noted as released.",
			replies: map[string]reply{getFIP: {200, one(fip("", 8))}},
			mg: binding(withPinned, withExternalName(fipID), withStatus(v1alpha1.FloatingIPBindingObservation{
				FloatingIPID: fipID, FloatingIPAddress: address, PortID: vmPort, FixedIP: "10.20.0.10", Pinned: true, Status: "DOWN", RevisionNumber: 7})),
			want: want{
				o: managed.ExternalObservation{ResourceExists: true, Diff: cmp.Diff(state{PortID: ourPort}, state{})},
				mg: binding(withPinned, withExternalName(fipID), withStatus(v1alpha1.FloatingIPBindingObservation{
					FloatingIPID: fipID, FloatingIPAddress: address, Pinned: true, Status: "DOWN", RevisionNumber: 8}, xpv2.Unavailable())),
				calls: []string{getFIP},
			},
		},
		"PinnedOnAPortAgainForgetsRelease": {
			reason:  "The release is forgotten once the floating IP is on a port again (the rollback's set on the VM's port).",
			replies: map[string]reply{getFIP: {200, one(fip(vmPort, 9))}},
			mg: binding(withPinned, withExternalName(fipID), withStatus(v1alpha1.FloatingIPBindingObservation{
				FloatingIPID: fipID, FloatingIPAddress: address, Pinned: true, Status: "DOWN", RevisionNumber: 8, ReleasedAt: &released})),
			want: want{
				o: managed.ExternalObservation{ResourceExists: true,
					Diff: cmp.Diff(state{PortID: ourPort, FixedIP: "10.20.0.10"}, state{PortID: vmPort, FixedIP: "10.20.0.10"})},
				mg: binding(withPinned, withExternalName(fipID), withStatus(v1alpha1.FloatingIPBindingObservation{
					FloatingIPID: fipID, FloatingIPAddress: address,
					Pinned: true, Status: "DOWN", RevisionNumber: 9}, xpv2.Unavailable())),
				calls: []string{getFIP},
			},
		},
		"ServerError": {
			reason:  "A Neutron error carries its type and message and what failed.",
			replies: map[string]reply{getFIP: {500, neutronError("HTTPInternalServerError", "boom")}},
			mg:      binding(withExternalName(fipID)),
			want: want{
				err:   "cannot get Neutron floating IP " + fipID + ": Neutron 500 HTTPInternalServerError: boom",
				mg:    binding(withExternalName(fipID)),
				calls: []string{getFIP},
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			e, n := serve(t, tc.replies)
			o, err := e.Observe(context.Background(), tc.mg)
			if diff := cmp.Diff(tc.want.err, errText(err)); diff != "" {
				t.Errorf("%s\nObserve(): -want error, +got error:\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(tc.want.o, o); diff != "" {
				t.Errorf("%s\nObserve(): -want, +got:\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(tc.want.mg, tc.mg, cmpConditions, cmpReleasedSet); diff != "" {
				t.Errorf("%s\nObserve(): -want managed, +got managed:\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(tc.want.calls, requests(n)); diff != "" {
				t.Errorf("%s\nObserve(): -want requests, +got requests:\n%s", tc.reason, diff)
			}
		})
	}
}

// cmpConditions ignores condition transition times.
var cmpConditions = cmp.Comparer(func(a, b metav1.Time) bool { return true })

// cmpReleasedSet compares whether status.atProvider.releasedAt is set, and
// its time only when the want's is not zero (a want of &metav1.Time{}:
// any time).
var cmpReleasedSet = cmp.Comparer(func(a, b *metav1.Time) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return a.IsZero() || b.IsZero() || a.Equal(b)
})

func requests(n *neutron) []string {
	var r []string
	for _, c := range n.calls {
		r = append(r, c.Request)
	}
	return r
}

func TestCreate(t *testing.T) {
	allocated := `{"floatingip":{"description":"` + marker + `","floating_network_id":"` + extNet + `","port_id":"` + ourPort + `"}}`
	allocatedFixed := `{"floatingip":{"description":"` + marker + `","fixed_ip_address":"10.20.0.10","floating_network_id":"` + extNet + `","port_id":"` + ourPort + `"}}`
	type want struct {
		err          string
		externalName string
		calls        []call
		// refused: the create's refusal is recorded
		// (openstack.AnnotationCreateRefused).
		refused bool
	}
	cases := map[string]struct {
		reason  string
		replies map[string]reply
		mg      *v1alpha1.FloatingIPBinding
		want    want
	}{
		"Allocate": {
			reason:  "An allocated binding allocates with port, fixed IP and the description carrying its marker in one POST, and records the ID.",
			replies: map[string]reply{post: {201, one(fip(ourPort, 0))}},
			mg: binding(withDescription("vpn"), func(mg *v1alpha1.FloatingIPBinding) {
				mg.Spec.ForProvider.FixedIP = ptr.To(v1alpha1.IPAddress("10.20.0.10"))
			}),
			want: want{externalName: fipID, calls: []call{
				{Request: post, Body: `{"floatingip":{"description":"vpn ` + marker + `","fixed_ip_address":"10.20.0.10","floating_network_id":"` + extNet + `","port_id":"` + ourPort + `"}}`},
			}},
		},
		"AllocateFails": {
			reason:  "A refused allocation is an error with Neutron's type and message; nothing is recorded.",
			replies: map[string]reply{post: {409, neutronError("OverQuota", "Quota exceeded for resources: ['floatingip'].")}},
			mg:      binding(),
			want: want{refused: true,
				err:          "cannot allocate a floating IP from network " + extNet + ": Neutron 409 OverQuota: Quota exceeded for resources: ['floatingip'].",
				externalName: "fip",
				calls:        []call{{Request: post, Body: allocated}},
			},
		},
		"OwnOnPortAdopted": {
			reason: "A port that already has the floating IP this binding allocated (its description since changed) gets 409; the floating IP carries the binding's marker and is adopted, not allocated twice.",
			replies: map[string]reply{
				post:      {409, neutronError("FloatingIPPortAlreadyAssociated", "Cannot associate floating IP with port using fixed IP 10.20.0.10, as that fixed IP already has a floating IP on external network "+extNet)},
				onOurPort: {200, list(fip(ourPort, 2, "old text "+marker))},
			},
			mg:   binding(),
			want: want{refused: true, externalName: fipID, calls: []call{{Request: post, Body: allocated}, {Request: onOurPort}}},
		},
		"OwnOnPortAmongOthers": {
			reason: "A port with two fixed IPs may hold another floating IP besides the binding's: the one carrying the marker is adopted wherever it is in the list.",
			replies: map[string]reply{
				post:      {409, neutronError("FloatingIPPortAlreadyAssociated", "that fixed IP already has a floating IP")},
				onOurPort: {200, list(other(ourPort), fip(ourPort, 2, "old text "+marker))},
			},
			mg:   binding(),
			want: want{refused: true, externalName: fipID, calls: []call{{Request: post, Body: allocated}, {Request: onOurPort}}},
		},
		"OwnOnFixedIPAdopted": {
			reason: "A binding naming a fixed IP looks only at the floating IPs on that fixed IP of the port.",
			replies: map[string]reply{
				post: {409, neutronError("FloatingIPPortAlreadyAssociated", "that fixed IP already has a floating IP")},
				"GET /v2.0/floatingips?fixed_ip_address=10.20.0.10&floating_network_id=" + extNet + "&port_id=" + ourPort: {200, list(fip(ourPort, 2, marker))},
			},
			mg: binding(withFixedIP("10.20.0.10")),
			want: want{refused: true, externalName: fipID, calls: []call{{Request: post, Body: allocatedFixed},
				{Request: "GET /v2.0/floatingips?fixed_ip_address=10.20.0.10&floating_network_id=" + extNet + "&port_id=" + ourPort}}},
		},
		"ForeignOnPortRefused": {
			reason: "A port that already has a floating IP that is not the binding's gets 409; it is neither adopted nor released, and the error names it and the fix.",
			replies: map[string]reply{
				post:      {409, neutronError("FloatingIPPortAlreadyAssociated", "that fixed IP already has a floating IP")},
				onOurPort: {200, list(other(ourPort))},
			},
			mg: binding(),
			want: want{refused: true,
				err: "port " + ourPort + " already has floating IP 203.0.113.77 (" + otherFIP + "), which is not this binding's allocated floating IP: " +
					"disassociate it from the port (openstack floating ip unset --port 203.0.113.77), or pin it with spec.forProvider.floatingIpAddress",
				externalName: "fip",
				calls:        []call{{Request: post, Body: allocated}, {Request: onOurPort}},
			},
		},
		"PinnedMissing": {
			reason:  "Creating a pinned binding of an address that does not exist creates nothing and names the address.",
			replies: map[string]reply{byAddr: {200, list()}},
			mg:      binding(withPinned),
			want:    want{err: fmt.Sprintf(errPinnedMissing, address), externalName: "fip", calls: []call{{Request: byAddr}}},
		},
		"PinnedBoundElsewhere": {
			reason:  "A pinned floating IP bound to another port is left untouched and the error says so without naming that port (it may be another namespace's), with the runbook's way out.",
			replies: map[string]reply{byAddr: {200, list(fip(vmPort, 5))}},
			mg:      binding(withPinned),
			want: want{
				err: "floating IP " + address + " is associated with another port, not this binding's port " + ourPort +
					": disassociate it there first (runbook: cutover, openstack floating ip unset --port " + address + "), or pin another address",
				externalName: fipID,
				calls:        []call{{Request: byAddr}},
			},
		},
		"PinnedFree": {
			reason: "A free pinned floating IP is associated with If-Match on the revision read.",
			replies: map[string]reply{
				byAddr: {200, list(fip("", 5))},
				putFIP: {200, one(fip(ourPort, 6))},
			},
			mg: binding(withPinned),
			want: want{externalName: fipID, calls: []call{
				{Request: byAddr},
				{Request: putFIP, IfMatch: "revision_number=5", Body: `{"floatingip":{"port_id":"` + ourPort + `"}}`},
			}},
		},
		"PinnedPortHasAnother": {
			reason: "A pinned floating IP whose port already has another floating IP gets 409 from Neutron; the other one is not the customer's pinned address, is not touched, and the error names it.",
			replies: map[string]reply{
				byAddr:       {200, list(fip("", 5))},
				putFIP:       {409, neutronError("FloatingIPPortAlreadyAssociated", "that fixed IP already has a floating IP")},
				onAnyNetwork: {200, list(other(ourPort))},
			},
			mg: binding(withPinned),
			want: want{
				err: "port " + ourPort + " already has floating IP 203.0.113.77 (" + otherFIP + "), which is not this binding's pinned floating IP " + address + ": " +
					"disassociate it from the port (openstack floating ip unset --port 203.0.113.77), or pin it with spec.forProvider.floatingIpAddress",
				externalName: fipID,
				calls: []call{
					{Request: byAddr},
					{Request: putFIP, IfMatch: "revision_number=5", Body: `{"floatingip":{"port_id":"` + ourPort + `"}}`},
					{Request: onAnyNetwork},
				},
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			e, n := serve(t, tc.replies)
			_, err := e.Create(context.Background(), tc.mg)
			if diff := cmp.Diff(tc.want.err, errText(err)); diff != "" {
				t.Errorf("%s\nCreate(): -want error, +got error:\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(tc.want.externalName, meta.GetExternalName(tc.mg)); diff != "" {
				t.Errorf("%s\nCreate(): -want external name, +got:\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(tc.want.calls, n.calls); diff != "" {
				t.Errorf("%s\nCreate(): -want requests, +got requests:\n%s", tc.reason, diff)
			}
			_, refused := tc.mg.GetAnnotations()[openstack.AnnotationCreateRefused]
			if diff := cmp.Diff(tc.want.refused, refused); diff != "" {
				t.Errorf("%s\nCreate(): -want refusal recorded, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestUpdate(t *testing.T) {
	type want struct {
		err       string
		retryable bool
		calls     []call
		// status is status.atProvider after Update: what Neutron
		// answered, so that an attach shows before the next Observe.
		status v1alpha1.FloatingIPBindingObservation
	}
	attachedAt := func(rev int) v1alpha1.FloatingIPBindingObservation {
		return v1alpha1.FloatingIPBindingObservation{FloatingIPID: fipID, FloatingIPAddress: address, PortID: ourPort,
			FixedIP: "10.20.0.10", Attached: true, Status: "DOWN", RevisionNumber: rev}
	}
	assoc := call{Request: putFIP, IfMatch: "revision_number=9", Body: `{"floatingip":{"port_id":"` + ourPort + `"}}`}
	cases := map[string]struct {
		reason  string
		replies map[string]reply
		mg      *v1alpha1.FloatingIPBinding
		want    want
	}{
		"PinnedAssociates": {
			reason:  "Update reads the floating IP and associates it with If-Match: revision_number=N.",
			replies: map[string]reply{getFIP: {200, one(fip("", 9))}, putFIP: {200, one(fip(ourPort, 10))}},
			mg:      binding(withPinned, withExternalName(fipID)),
			want: want{calls: []call{{Request: getFIP}, assoc}, status: func() v1alpha1.FloatingIPBindingObservation {
				o := attachedAt(10)
				o.Pinned = true
				return o
			}()},
		},
		"StaleRevision": {
			reason: "A concurrent change makes Neutron answer 412: a retryable error, not a success and not a stolen floating IP.",
			replies: map[string]reply{getFIP: {200, one(fip("", 9))},
				putFIP: {412, neutronError("RevisionNumberConstraintFailed", "Constrained to 9, but current revision is 10")}},
			mg: binding(withPinned, withExternalName(fipID)),
			want: want{
				err:       "cannot associate floating IP " + address + " with port " + ourPort + ": Neutron 412 RevisionNumberConstraintFailed: Constrained to 9, but current revision is 10",
				retryable: true,
				calls:     []call{{Request: getFIP}, assoc},
			},
		},
		"PinnedBoundElsewhere": {
			reason:  "Update refuses a pinned floating IP bound to another port, says the floating IP is on another port without naming that port, and sends no PUT.",
			replies: map[string]reply{getFIP: {200, one(fip(vmPort, 9))}},
			mg:      binding(withPinned, withExternalName(fipID)),
			want: want{
				err: "floating IP " + address + " is associated with another port, not this binding's port " + ourPort +
					": disassociate it there first (runbook: cutover, openstack floating ip unset --port " + address + "), or pin another address",
				calls: []call{{Request: getFIP}},
			},
		},
		"AllocatedMovedBack": {
			reason:  "An allocated floating IP, the binding's own, is moved back to its port (with If-Match).",
			replies: map[string]reply{getFIP: {200, one(fip(vmPort, 9))}, putFIP: {200, one(fip(ourPort, 10))}},
			mg:      binding(withExternalName(fipID)),
			want:    want{calls: []call{{Request: getFIP}, assoc}, status: attachedAt(10)},
		},
		"AllocatedDescription": {
			reason:  "An allocated floating IP's description is corrected with If-Match, keeping the marker.",
			replies: map[string]reply{getFIP: {200, one(fip(ourPort, 9, marker))}, putFIP: {200, one(fip(ourPort, 10, "vpn "+marker))}},
			mg:      binding(withExternalName(fipID), withDescription("vpn")),
			want: want{calls: []call{{Request: getFIP},
				{Request: putFIP, IfMatch: "revision_number=9", Body: `{"floatingip":{"description":"vpn ` + marker + `"}}`}}, status: attachedAt(10)},
		},
		"AllocatedLegacyMarker": {
			reason:  "An allocated floating IP an earlier release made gets the binding's marker in place of the earlier one, its text kept (the spec sets none), with If-Match.",
			replies: map[string]reply{getFIP: {200, one(fip(ourPort, 9, "vpn [crossplane-uid-"+uid+"]"))}, putFIP: {200, one(fip(ourPort, 10, "vpn "+marker))}},
			mg:      binding(withExternalName(fipID)),
			want: want{calls: []call{{Request: getFIP},
				{Request: putFIP, IfMatch: "revision_number=9", Body: `{"floatingip":{"description":"vpn ` + marker + `"}}`}}, status: attachedAt(10)},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			e, n := serve(t, tc.replies)
			_, err := e.Update(context.Background(), tc.mg)
			if diff := cmp.Diff(tc.want.err, errText(err)); diff != "" {
				t.Errorf("%s\nUpdate(): -want error, +got error:\n%s", tc.reason, diff)
			}
			a, ok := openstack.AsAPIError(err)
			if got := ok && a.Retryable(); got != tc.want.retryable {
				t.Errorf("%s\nUpdate(): retryable = %v, want %v", tc.reason, got, tc.want.retryable)
			}
			if diff := cmp.Diff(tc.want.calls, n.calls); diff != "" {
				t.Errorf("%s\nUpdate(): -want requests, +got requests:\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(tc.want.status, tc.mg.Status.AtProvider); diff != "" {
				t.Errorf("%s\nUpdate(): -want status.atProvider, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestDelete(t *testing.T) {
	cases := map[string]struct {
		reason  string
		replies map[string]reply
		mg      *v1alpha1.FloatingIPBinding
		err     string
		calls   []call
	}{
		"AllocatedReleased": {
			reason:  "An allocated floating IP is released, and one list finds no twin carrying the binding's marker.",
			replies: map[string]reply{"DELETE /v2.0/floatingips/" + fipID: {204, ""}, scanFIP: {200, list(other(vmPort))}},
			mg:      binding(withExternalName(fipID)),
			calls:   []call{{Request: "DELETE /v2.0/floatingips/" + fipID}, {Request: scanFIP}},
		},
		"AllocatedTwinReleased": {
			reason: "A twin floating IP carrying the binding's marker (an allocation Neutron completed after the provider gave up on it) is released too; another's is left.",
			replies: map[string]reply{
				"DELETE /v2.0/floatingips/" + fipID: {204, ""},
				scanFIP:                             {200, list(other(vmPort), `{"id": "twin", "description": "`+marker+`"}`)},
				"DELETE /v2.0/floatingips/twin":     {204, ""},
			},
			mg:    binding(withExternalName(fipID)),
			calls: []call{{Request: "DELETE /v2.0/floatingips/" + fipID}, {Request: scanFIP}, {Request: "DELETE /v2.0/floatingips/twin"}},
		},
		"AllocatedAlreadyGone": {
			reason:  "An allocated floating IP already gone is no error.",
			replies: map[string]reply{"DELETE /v2.0/floatingips/" + fipID: {404, neutronError("FloatingIPNotFound", "not found")}, scanFIP: {200, list()}},
			mg:      binding(withExternalName(fipID)),
			calls:   []call{{Request: "DELETE /v2.0/floatingips/" + fipID}, {Request: scanFIP}},
		},
		"PinnedDisassociatedNeverReleased": {
			reason:  "A pinned floating IP bound to our port is only disassociated (port_id null, If-Match), never released.",
			replies: map[string]reply{getFIP: {200, one(fip(ourPort, 4))}, putFIP: {200, one(fip("", 5))}},
			mg:      binding(withPinned, withExternalName(fipID)),
			calls:   []call{{Request: getFIP}, {Request: putFIP, IfMatch: "revision_number=4", Body: `{"floatingip":{"port_id":null}}`}},
		},
		"PinnedBoundElsewhereUntouched": {
			reason:  "A pinned floating IP bound to another port (a rollback to the VM) is left alone.",
			replies: map[string]reply{getFIP: {200, one(fip(vmPort, 4))}},
			mg:      binding(withPinned, withExternalName(fipID)),
			calls:   []call{{Request: getFIP}},
		},
		"PinnedDisassociateFails": {
			reason:  "A failed disassociation is an error with Neutron's type.",
			replies: map[string]reply{getFIP: {200, one(fip(ourPort, 4))}, putFIP: {412, neutronError("RevisionNumberConstraintFailed", "stale")}},
			mg:      binding(withPinned, withExternalName(fipID)),
			err:     "cannot disassociate floating IP " + address + " from port " + ourPort + ": Neutron 412 RevisionNumberConstraintFailed: stale",
			calls:   []call{{Request: getFIP}, {Request: putFIP, IfMatch: "revision_number=4", Body: `{"floatingip":{"port_id":null}}`}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			e, n := serve(t, tc.replies)
			_, err := e.Delete(context.Background(), tc.mg)
			if diff := cmp.Diff(tc.err, errText(err)); diff != "" {
				t.Errorf("%s\nDelete(): -want error, +got error:\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(tc.calls, n.calls); diff != "" {
				t.Errorf("%s\nDelete(): -want requests, +got requests:\n%s", tc.reason, diff)
			}
		})
	}
}

// TestReconcileReadsOnce: in one reconcile, Update and Delete use the
// floating IP as Observe read it: one GET, then at most the one PUT. The
// pre-stage's refusal is retried within fast, whatever the backoff.
func TestReconcileReadsOnce(t *testing.T) {
	// recent is a release 10 s ago, to the second as the status keeps it.
	recent := time.Now().Add(-10 * time.Second).Truncate(time.Second)
	releasedStatus := func(at time.Time) v1alpha1.FloatingIPBindingObservation {
		t := metav1.NewTime(at)
		return v1alpha1.FloatingIPBindingObservation{FloatingIPID: fipID, FloatingIPAddress: address, Pinned: true, Status: "DOWN", RevisionNumber: 8, ReleasedAt: &t}
	}
	type want struct {
		err   string
		calls []call
		// within is the retry bound the error carries (0: none).
		within time.Duration
	}
	cases := map[string]struct {
		reason  string
		replies map[string]reply
		mg      *v1alpha1.FloatingIPBinding
		delete  bool
		want    want
	}{
		"PreStage": {
			reason:  "A pinned floating IP still on the VM's port is read once and refused without a second read; the refusal is retried within fast (the runbook's pre-stage).",
			replies: map[string]reply{getFIP: {200, one(fip(vmPort, 9))}},
			mg:      binding(withPinned, withExternalName(fipID)),
			want: want{
				err: "floating IP " + address + " is associated with another port, not this binding's port " + ourPort +
					": disassociate it there first (runbook: cutover, openstack floating ip unset --port " + address + "), or pin another address",
				calls:  []call{{Request: getFIP}},
				within: fast,
			},
		},
		"Cutover": {
			reason:  "A pinned floating IP the VM let go of is associated with the revision Observe read: one GET, one PUT.",
			replies: map[string]reply{getFIP: {200, one(fip("", 9))}, putFIP: {200, one(fip(ourPort, 10))}},
			mg:      binding(withPinned, withExternalName(fipID)),
			want: want{calls: []call{{Request: getFIP},
				{Request: putFIP, IfMatch: "revision_number=9", Body: `{"floatingip":{"port_id":"` + ourPort + `"}}`}}},
		},
		"RollbackHeld": {
			reason:  "A pinned floating IP someone took off the binding's port (the rollback's unset) 10 s ago is read once and left alone, no PUT: the rollback sets it on the VM's port next; the refusal is retried within fast.",
			replies: map[string]reply{getFIP: {200, one(fip("", 9))}},
			mg:      binding(withPinned, withExternalName(fipID), withStatus(releasedStatus(recent))),
			want: want{
				err: "floating IP " + address + " was taken off port " + ourPort + " and is on no port (runbook: rollback, set it on the VM's port next): " +
					"the binding takes it back if it is still on no port 2m0s after it left (status.atProvider.releasedAt " + recent.UTC().Format(time.RFC3339) + ")",
				calls:  []call{{Request: getFIP}},
				within: fast,
			},
		},
		"HoldOver": {
			reason:  "A pinned floating IP still on no port hold after it was taken off the binding's port is taken back with the revision Observe read.",
			replies: map[string]reply{getFIP: {200, one(fip("", 9))}, putFIP: {200, one(fip(ourPort, 10))}},
			mg:      binding(withPinned, withExternalName(fipID), withStatus(releasedStatus(recent.Add(-hold)))),
			want: want{calls: []call{{Request: getFIP},
				{Request: putFIP, IfMatch: "revision_number=9", Body: `{"floatingip":{"port_id":"` + ourPort + `"}}`}}},
		},
		"DeletePinned": {
			reason:  "Deleting a pinned binding disassociates the floating IP as Observe read it: one GET, one PUT.",
			replies: map[string]reply{getFIP: {200, one(fip(ourPort, 9))}, putFIP: {200, one(fip("", 10))}},
			mg:      binding(withPinned, withExternalName(fipID), withDeleting),
			delete:  true,
			want: want{calls: []call{{Request: getFIP},
				{Request: putFIP, IfMatch: "revision_number=9", Body: `{"floatingip":{"port_id":null}}`}}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			e, n := serve(t, tc.replies)
			o, err := e.Observe(context.Background(), tc.mg)
			if err != nil || !o.ResourceExists {
				t.Fatalf("%s\nObserve() = %+v, %v; want an existing floating IP", tc.reason, o, err)
			}
			if tc.delete {
				_, err = e.Delete(context.Background(), tc.mg)
			} else {
				_, err = e.Update(context.Background(), tc.mg)
			}
			var within time.Duration
			var w interface{ RetryWithin() time.Duration }
			if errors.As(err, &w) {
				within = w.RetryWithin()
			}
			if diff := cmp.Diff(tc.want, want{err: errText(err), calls: n.calls, within: within}, cmp.AllowUnexported(want{})); diff != "" {
				t.Errorf("%s\n-want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

// TestCrashSafeCreate runs the managed reconciler with the OpenStack
// kinds' options and the binding's Finder, one fresh reconciler per step
// as after a provider restart, through the ways a create can be
// interrupted. Neutron must end with one floating IP for the binding,
// whose ID is its external name; a pinned floating IP is never allocated.
func TestCrashSafeCreate(t *testing.T) {
	type r = neutrontest.Reply
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
				Replies:  map[string]r{scan: {Code: 200, Body: none}, post: {Code: 201, Body: one(fip(ourPort, 0, marker))}},
				Requests: []string{scan, scan, posted},
			}},
		},
		"LostAnswer": {
			Reason: "A POST whose answer is lost after Neutron allocated the floating IP fails the create; the next reconcile adopts it by its marker instead of allocating a second.",
			Steps: []mrsetuptest.Step{{
				Replies:  map[string]r{scan: {Code: 200, Body: none}, post: {Cut: true}},
				Requests: []string{scan, posted},
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
				NewExternal, tc, fipID)
		})
	}
}
