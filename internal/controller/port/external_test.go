package port

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
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
	netID  = "11111111-1111-1111-1111-111111111111"
	subID  = "22222222-2222-2222-2222-222222222222"
	sgID   = "33333333-3333-3333-3333-333333333333"
	sg2ID  = "44444444-4444-4444-4444-444444444444"
	portID = "55555555-5555-5555-5555-555555555555"
	// stalePortID is a port Neutron no longer has.
	stalePortID = "55555555-5555-5555-5555-000000000000"
	mac         = "fa:16:3e:00:00:01"
)

// marker is the MR's; marked the description Create gives the port of
// mr().
var (
	marker = openstack.Marker(mr())
	marked = "gateway VIP " + marker
)

// reply is a canned Neutron answer.
type reply = neutrontest.Reply

// neutronPortJSON is {"port": {...}} of a port matching mr(), changed by mods.
func neutronPortJSON(mods ...func(map[string]any)) string {
	p := map[string]any{
		"id": portID, "network_id": netID, "name": "vip", "description": marked,
		"status": "DOWN", "mac_address": mac, "admin_state_up": true, "device_owner": "",
		"fixed_ips":             []any{map[string]any{"subnet_id": subID, "ip_address": "10.20.0.10"}},
		"security_groups":       []any{sgID},
		"allowed_address_pairs": []any{map[string]any{"ip_address": "192.168.10.0/24", "mac_address": mac}},
		"port_security_enabled": true, "tags": []any{"team-a"}, "revision_number": 3,
	}
	for _, m := range mods {
		m(p)
	}
	b, _ := json.Marshal(map[string]any{"port": p})
	return string(b)
}

func listJSON(ports ...string) string {
	items := make([]json.RawMessage, 0, len(ports))
	for _, p := range ports {
		var v struct {
			Port json.RawMessage `json:"port"`
		}
		_ = json.Unmarshal([]byte(p), &v)
		items = append(items, v.Port)
	}
	b, _ := json.Marshal(map[string]any{"ports": items})
	return string(b)
}

// mr is a Port whose spec matches neutronPortJSON(), changed by mods.
func mr(mods ...func(*v1alpha1.Port)) *v1alpha1.Port {
	sub, ip := v1alpha1.UUID(subID), v1alpha1.IPAddress("10.20.0.10")
	p := &v1alpha1.Port{
		ObjectMeta: metav1.ObjectMeta{Name: "vip", UID: "uid-1", Annotations: map[string]string{meta.AnnotationKeyExternalName: portID}},
		Spec: v1alpha1.PortSpec{ForProvider: v1alpha1.PortParameters{
			NetworkID:           ptr.To(netID),
			Name:                ptr.To("vip"),
			Description:         ptr.To("gateway VIP"),
			FixedIPs:            []v1alpha1.FixedIP{{SubnetID: &sub, IPAddress: &ip}},
			SecurityGroupIDs:    []string{sgID},
			AllowedAddressPairs: []v1alpha1.AddressPair{{IPAddress: "192.168.10.0/24"}},
			PortSecurityEnabled: ptr.To(true),
			Tags:                []string{"team-a"},
		}},
	}
	// The fixed IPs an earlier Observe saved, with their subnet's details.
	p.Status.AtProvider.FixedIPs = observed.FixedIPs
	for _, m := range mods {
		m(p)
	}
	return p
}

func withoutExternalName(p *v1alpha1.Port) { meta.SetExternalName(p, "") }

func withoutPortSecurity(p *v1alpha1.Port) { p.Spec.ForProvider.PortSecurityEnabled = nil }

// deleting sets a deletion time: a zero one is no deletion
// (meta.WasDeleted).
func deleting(p *v1alpha1.Port) {
	p.SetDeletionTimestamp(ptr.To(metav1.NewTime(time.Date(2026, 12, 7, 21, 0, 0, 0, time.UTC))))
}

// refusalRecorded stands for openstack.RecordRefusal's annotation, whose
// time is the clock's: recordedRefusal makes an MR's comparable.
func refusalRecorded(p *v1alpha1.Port) {
	meta.AddAnnotations(p, map[string]string{openstack.AnnotationCreateRefused: "recorded"})
}

// recordedRefusal replaces p's refusal annotation by "recorded" when it
// is a time of the last minute and Neutron's 409.
func recordedRefusal(p *v1alpha1.Port) *v1alpha1.Port {
	at, reason, _ := strings.Cut(p.GetAnnotations()[openstack.AnnotationCreateRefused], " ")
	t, err := time.Parse(time.RFC3339, at)
	if err == nil && time.Since(t) < time.Minute && strings.HasPrefix(reason, "Neutron 409 IpAddressAlreadyAllocated") {
		refusalRecorded(p)
	}
	return p
}

// observed is the status.atProvider of neutronPortJSON().
var observed = v1alpha1.PortObservation{
	ID: portID, MACAddress: mac, Status: "DOWN", RevisionNumber: 3,
	FixedIPs: []v1alpha1.ObservedFixedIP{{SubnetID: subID, IPAddress: "10.20.0.10", SubnetCIDR: "10.20.0.0/24", GatewayIP: "10.20.0.1"}},
}

func available(p *v1alpha1.Port) {
	p.Status.AtProvider = observed
	p.SetConditions(xpv2.Available())
}

var ignoreDiff = cmpopts.IgnoreFields(managed.ExternalObservation{}, "Diff")

func TestObserve(t *testing.T) {
	get := "GET /ports/" + portID
	scan := "GET /ports?fields=id&fields=description&fields=tags"
	type want struct {
		obs      managed.ExternalObservation
		mr       *v1alpha1.Port
		err      error
		requests []string
	}
	cases := map[string]struct {
		reason  string
		replies map[string]reply
		mr      *v1alpha1.Port
		want    want
	}{
		"UpToDate": {
			reason:  "A port that matches the spec is up to date after exactly one GET, with its fixed IP, MAC, status and revision in status.atProvider.",
			replies: map[string]reply{get: {Code: 200, Body: neutronPortJSON()}},
			mr:      mr(),
			want: want{
				obs:      managed.ExternalObservation{ResourceExists: true, ResourceUpToDate: true},
				mr:       mr(available),
				requests: []string{get},
			},
		},
		"SubnetDetailsRead": {
			reason: "A port whose status has no subnet details yet (first Observe) reads its subnet once for the CIDR and gateway.",
			replies: map[string]reply{
				get:                     {Code: 200, Body: neutronPortJSON()},
				"GET /subnets/" + subID: {Code: 200, Body: `{"subnet": {"id": "` + subID + `", "cidr": "10.20.0.0/24", "gateway_ip": "10.20.0.1"}}`},
			},
			mr: mr(func(p *v1alpha1.Port) { p.Status.AtProvider = v1alpha1.PortObservation{} }),
			want: want{
				obs:      managed.ExternalObservation{ResourceExists: true, ResourceUpToDate: true},
				mr:       mr(available),
				requests: []string{get, "GET /subnets/" + subID},
			},
		},
		"SubnetGetFails": {
			reason: "A subnet that cannot be read fails the Observe naming the subnet and the fixed IP.",
			replies: map[string]reply{
				get:                     {Code: 200, Body: neutronPortJSON()},
				"GET /subnets/" + subID: {Code: 404, Body: neutrontest.Error("SubnetNotFound", "Subnet could not be found.")},
			},
			mr: mr(func(p *v1alpha1.Port) { p.Status.AtProvider = v1alpha1.PortObservation{} }),
			want: want{
				mr:       mr(func(p *v1alpha1.Port) { p.Status.AtProvider = v1alpha1.PortObservation{} }),
				err:      errors.New("cannot get Neutron subnet " + subID + " of fixed IP 10.20.0.10: Neutron 404 SubnetNotFound: Subnet could not be found."),
				requests: []string{get, "GET /subnets/" + subID},
			},
		},
		"NotFound": {
			reason: "A port that is gone (404 PortNotFound), with no other port carrying the marker, does not exist.",
			replies: map[string]reply{
				get:  {Code: 404, Body: neutrontest.Error("PortNotFound", "Port could not be found.")},
				scan: {Code: 200, Body: `{"ports": [{"id": "someone-elses", "description": "vip"}]}`},
			},
			mr:   mr(),
			want: want{obs: managed.ExternalObservation{ResourceExists: false}, mr: mr(), requests: []string{get, scan}},
		},
		"GetFails": {
			reason:  "Other errors of the GET carry Neutron's type and message and the port ID.",
			replies: map[string]reply{get: {Code: 500, Body: neutrontest.Error("HTTPInternalServerError", "boom")}},
			mr:      mr(),
			want: want{
				mr:       mr(),
				err:      errors.New("cannot get Neutron port " + portID + ": Neutron 500 HTTPInternalServerError: boom"),
				requests: []string{get},
			},
		},
		"LateInitPortSecurity": {
			reason:  "An unset portSecurityEnabled takes Neutron's value and says so; nothing else is late-initialized.",
			replies: map[string]reply{get: {Code: 200, Body: neutronPortJSON()}},
			mr:      mr(withoutPortSecurity),
			want: want{
				obs:      managed.ExternalObservation{ResourceExists: true, ResourceUpToDate: true, ResourceLateInitialized: true},
				mr:       mr(available),
				requests: []string{get},
			},
		},
		"NeutronPickedTheAddress": {
			reason:  "A fixed IP that names only its subnet matches whatever address Neutron picked, and the spec is not rewritten with it.",
			replies: map[string]reply{get: {Code: 200, Body: neutronPortJSON()}},
			mr:      mr(func(p *v1alpha1.Port) { p.Spec.ForProvider.FixedIPs[0].IPAddress = nil }),
			want: want{
				obs:      managed.ExternalObservation{ResourceExists: true, ResourceUpToDate: true},
				mr:       mr(available, func(p *v1alpha1.Port) { p.Spec.ForProvider.FixedIPs[0].IPAddress = nil }),
				requests: []string{get},
			},
		},
		"AddressPairRemovedByHand": {
			reason:  "A port that lost an allowed address pair is not up to date.",
			replies: map[string]reply{get: {Code: 200, Body: neutronPortJSON(func(p map[string]any) { p["allowed_address_pairs"] = []any{} })}},
			mr:      mr(),
			want: want{
				obs:      managed.ExternalObservation{ResourceExists: true, ResourceUpToDate: false},
				mr:       mr(available),
				requests: []string{get},
			},
		},
		"ErrorStatus": {
			reason:  "A port Neutron reports in status ERROR is unavailable.",
			replies: map[string]reply{get: {Code: 200, Body: neutronPortJSON(func(p map[string]any) { p["status"] = "ERROR" })}},
			mr:      mr(),
			want: want{
				obs: managed.ExternalObservation{ResourceExists: true, ResourceUpToDate: true},
				mr: mr(func(p *v1alpha1.Port) {
					p.Status.AtProvider = observed
					p.Status.AtProvider.Status = "ERROR"
					p.SetConditions(xpv2.Unavailable().WithMessage("Neutron reports the port in status ERROR"))
				}),
				requests: []string{get},
			},
		},
		"AdoptLostAnswer": {
			reason:  "With no external name, the one port carrying the marker (a create whose answer was lost, or a deleted Port of the same name applied again) is adopted: its ID becomes the external name, to be saved.",
			replies: map[string]reply{scan: {Code: 200, Body: listJSON(neutronPortJSON())}, get: {Code: 200, Body: neutronPortJSON()}},
			mr:      mr(withoutExternalName),
			want: want{
				obs:      managed.ExternalObservation{ResourceExists: true, ResourceUpToDate: true, ResourceLateInitialized: true},
				mr:       mr(available),
				requests: []string{scan, get},
			},
		},
		"GoneRelocated": {
			reason: "A port whose external name is gone (an older ID written over the newest) while the port carrying the marker exists adopts that port: its ID becomes the external name, to be saved, rather than a twin being created.",
			replies: map[string]reply{
				"GET /ports/" + stalePortID: {Code: 404, Body: neutrontest.Error("PortNotFound", "Port could not be found.")},
				scan:                        {Code: 200, Body: listJSON(neutronPortJSON())},
				get:                         {Code: 200, Body: neutronPortJSON()},
			},
			mr: mr(func(p *v1alpha1.Port) { meta.SetExternalName(p, stalePortID) }),
			want: want{
				obs:      managed.ExternalObservation{ResourceExists: true, ResourceUpToDate: true, ResourceLateInitialized: true},
				mr:       mr(available),
				requests: []string{"GET /ports/" + stalePortID, scan, get},
			},
		},
		"NothingCreated": {
			reason:  "With no external name and no port carrying the marker, the port does not exist.",
			replies: map[string]reply{scan: {Code: 200, Body: `{"ports": []}`}},
			mr:      mr(withoutExternalName),
			want:    want{obs: managed.ExternalObservation{ResourceExists: false}, mr: mr(withoutExternalName), requests: []string{scan}},
		},
		"TwoCreated": {
			reason:  "Two ports carrying the marker are an error naming both; neither is adopted.",
			replies: map[string]reply{scan: {Code: 200, Body: listJSON(neutronPortJSON(), neutronPortJSON(func(p map[string]any) { p["id"] = "other" }))}},
			mr:      mr(withoutExternalName),
			want: want{
				mr:       mr(withoutExternalName),
				err:      errors.New("cannot tell which of 2 Neutron ports carrying " + marker + " (" + portID + ", other) to adopt: delete all but one by hand"),
				requests: []string{scan},
			},
		},
		"Deleting": {
			reason:  "A port whose MR is being deleted exists; it is neither compared with the spec (a port that matches it is not said to be up to date) nor late-initialized.",
			replies: map[string]reply{get: {Code: 200, Body: neutronPortJSON()}},
			mr:      mr(deleting, withoutPortSecurity),
			want: want{
				obs:      managed.ExternalObservation{ResourceExists: true},
				mr:       mr(available, deleting, withoutPortSecurity),
				requests: []string{get},
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			sc, seen := neutrontest.Serve(t, tc.replies)
			e := &external{object.External(sc, openstack.Settling{})}
			got, err := e.Observe(context.Background(), tc.mr)
			if diff := cmp.Diff(neutrontest.Message(tc.want.err), neutrontest.Message(err)); diff != "" {
				t.Errorf("%s\nObserve(...): -want error, +got error:\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(tc.want.obs, got, ignoreDiff); diff != "" {
				t.Errorf("%s\nObserve(...): -want, +got:\n%s", tc.reason, diff)
			}
			if got.ResourceExists && !got.ResourceUpToDate && got.Diff == "" && !meta.WasDeleted(tc.mr) {
				t.Errorf("%s\nObserve(...): not up to date, but no Diff", tc.reason)
			}
			if diff := cmp.Diff(tc.want.mr, tc.mr, test.EquateConditions()); diff != "" {
				t.Errorf("%s\nObserve(...): -want MR, +got MR:\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(tc.want.requests, *seen); diff != "" {
				t.Errorf("%s\nObserve(...): -want requests, +got requests:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestCreate(t *testing.T) {
	post := "POST /ports"
	putTags := "PUT /ports/" + portID + "/tags"
	fullBody := `{"port":{"allowed_address_pairs":[{"ip_address":"192.168.10.0/24"}],"description":"` + marked + `",` +
		`"fixed_ips":[{"ip_address":"10.20.0.10","subnet_id":"` + subID + `"}],"name":"vip","network_id":"` + netID + `",` +
		`"port_security_enabled":true,"security_groups":["` + sgID + `"],"tags":["team-a"]}}`
	type want struct {
		mr       *v1alpha1.Port
		err      error
		requests []string
	}
	cases := map[string]struct {
		reason  string
		replies map[string]reply
		mr      *v1alpha1.Port
		want    want
	}{
		"TaggedAtCreate": {
			reason:  "One POST carries every attribute, the description with the MR's marker, and the tags; a Neutron that keeps the tags needs nothing more. The external name is the new port's ID.",
			replies: map[string]reply{post: {Code: 201, Body: neutronPortJSON()}},
			mr:      mr(withoutExternalName),
			want:    want{mr: mr(), requests: []string{post + " " + fullBody}},
		},
		"TagsDropped": {
			reason: "A Neutron without tag_ports_during_bulk_creation drops the tags of the POST; Create sets them at once.",
			replies: map[string]reply{
				post:    {Code: 201, Body: neutronPortJSON(func(p map[string]any) { p["tags"] = []any{} })},
				putTags: {Code: 200, Body: `{"tags": ["team-a"]}`},
			},
			mr:   mr(withoutExternalName),
			want: want{mr: mr(), requests: []string{post + " " + fullBody, putTags + ` {"tags":["team-a"]}`}},
		},
		"Minimal": {
			reason:  "Unset attributes are not sent, so Neutron picks the address, the default security group and the network's port security; the description is the marker alone, and no tags are set.",
			replies: map[string]reply{post: {Code: 201, Body: neutronPortJSON()}},
			mr: mr(withoutExternalName, func(p *v1alpha1.Port) {
				p.Spec.ForProvider = v1alpha1.PortParameters{NetworkID: ptr.To(netID)}
			}),
			want: want{
				mr:       mr(func(p *v1alpha1.Port) { p.Spec.ForProvider = v1alpha1.PortParameters{NetworkID: ptr.To(netID)} }),
				requests: []string{post + ` {"port":{"description":"` + marker + `","network_id":"` + netID + `"}}`},
			},
		},
		"AddressTaken": {
			reason:  "A create Neutron refuses is an error with Neutron's type and message; no external name is set, and the refusal is recorded.",
			replies: map[string]reply{post: {Code: 409, Body: neutrontest.Error("IpAddressAlreadyAllocated", "IP address 10.20.0.10 already allocated in subnet "+subID)}},
			mr:      mr(withoutExternalName),
			want: want{
				mr:       mr(withoutExternalName, refusalRecorded),
				err:      errors.New("cannot create Neutron port on network " + netID + ": Neutron 409 IpAddressAlreadyAllocated: IP address 10.20.0.10 already allocated in subnet " + subID),
				requests: []string{post + " " + fullBody},
			},
		},
		"TaggingFails": {
			reason: "When tagging after the create fails, the error says so and the external name is kept, for the reconciler to save.",
			replies: map[string]reply{
				post:    {Code: 201, Body: neutronPortJSON(func(p map[string]any) { p["tags"] = []any{} })},
				putTags: {Code: 503, Body: neutrontest.Error("ServiceUnavailable", "try later")},
			},
			mr: mr(withoutExternalName),
			want: want{
				mr:       mr(),
				err:      errors.New("cannot set the tags of Neutron port " + portID + ": Neutron 503 ServiceUnavailable: try later"),
				requests: []string{post + " " + fullBody, putTags + ` {"tags":["team-a"]}`},
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			sc, seen := neutrontest.Serve(t, tc.replies)
			e := &external{object.External(sc, openstack.Settling{})}
			_, err := e.Create(context.Background(), tc.mr)
			if diff := cmp.Diff(neutrontest.Message(tc.want.err), neutrontest.Message(err)); diff != "" {
				t.Errorf("%s\nCreate(...): -want error, +got error:\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(tc.want.mr, recordedRefusal(tc.mr)); diff != "" {
				t.Errorf("%s\nCreate(...): -want MR, +got MR:\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(tc.want.requests, *seen); diff != "" {
				t.Errorf("%s\nCreate(...): -want requests, +got requests:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestUpdate(t *testing.T) {
	put := "PUT /ports/" + portID
	putTags := put + "/tags"
	get := "GET /ports/" + portID
	type want struct {
		err      error
		requests []string
	}
	cases := map[string]struct {
		reason   string
		replies  map[string]reply
		observed string
		mr       *v1alpha1.Port
		want     want
	}{
		"RestoreAddressPair": {
			reason:   "Only what differs is sent, with If-Match on the revision Observe read.",
			replies:  map[string]reply{put: {Code: 200, Body: neutronPortJSON()}},
			observed: neutronPortJSON(func(p map[string]any) { p["allowed_address_pairs"] = []any{} }),
			mr:       mr(),
			want: want{requests: []string{
				put + ` If-Match=revision_number=3 {"port":{"allowed_address_pairs":[{"ip_address":"192.168.10.0/24"}]}}`,
			}},
		},
		"SecurityGroupsAndTags": {
			reason:  "Security groups go in the port's PUT, tags in a PUT of their own after it, as the whole set.",
			replies: map[string]reply{put: {Code: 200, Body: neutronPortJSON()}, putTags: {Code: 200, Body: `{"tags": []}`}},
			observed: neutronPortJSON(func(p map[string]any) {
				p["security_groups"] = []any{sg2ID}
				p["tags"] = []any{"team-b"}
			}),
			mr: mr(),
			want: want{requests: []string{
				put + ` If-Match=revision_number=3 {"port":{"security_groups":["` + sgID + `"]}}`,
				putTags + ` {"tags":["team-a"]}`,
			}},
		},
		"PortSecurityOff": {
			reason:   "Turning port security off clears security groups and address pairs in the same PUT, as Neutron requires.",
			replies:  map[string]reply{put: {Code: 200, Body: neutronPortJSON()}},
			observed: neutronPortJSON(),
			mr: mr(func(p *v1alpha1.Port) {
				p.Spec.ForProvider.PortSecurityEnabled = ptr.To(false)
				p.Spec.ForProvider.SecurityGroupIDs = nil
				p.Spec.ForProvider.AllowedAddressPairs = nil
			}),
			want: want{requests: []string{
				put + ` If-Match=revision_number=3 {"port":{"allowed_address_pairs":[],"port_security_enabled":false,"security_groups":[]}}`,
			}},
		},
		"FixedIPKeepsNeutronsPick": {
			reason:   "A changed fixed IP is sent with the addresses Neutron picked for the entries that still match.",
			replies:  map[string]reply{put: {Code: 200, Body: neutronPortJSON()}},
			observed: neutronPortJSON(),
			mr: mr(func(p *v1alpha1.Port) {
				sub, ip := v1alpha1.UUID(subID), v1alpha1.IPAddress("10.20.0.11")
				p.Spec.ForProvider.FixedIPs = []v1alpha1.FixedIP{{SubnetID: &sub}, {IPAddress: &ip}}
			}),
			want: want{requests: []string{
				put + ` If-Match=revision_number=3 {"port":{"fixed_ips":[{"ip_address":"10.20.0.10","subnet_id":"` + subID + `"},{"ip_address":"10.20.0.11"}]}}`,
			}},
		},
		"StaleRevision": {
			reason:  "A port changed since Observe gets 412 from Neutron; the error says so and tags are not touched.",
			replies: map[string]reply{put: {Code: 412, Body: neutrontest.Error("RevisionNumberConstraintFailed", "Constrained to 3, but current revision is 4")}},
			observed: neutronPortJSON(func(p map[string]any) {
				p["name"] = "old"
				p["tags"] = []any{}
			}),
			mr: mr(),
			want: want{
				err:      errors.New("cannot update Neutron port " + portID + ": Neutron 412 RevisionNumberConstraintFailed: Constrained to 3, but current revision is 4"),
				requests: []string{put + ` If-Match=revision_number=3 {"port":{"name":"vip"}}`},
			},
		},
		"NotObserved": {
			reason:  "Without a port from Observe, Update reads it first; a changed description keeps the marker.",
			replies: map[string]reply{get: {Code: 200, Body: neutronPortJSON(func(p map[string]any) { p["description"] = "old " + marker })}, put: {Code: 200, Body: neutronPortJSON()}},
			mr:      mr(),
			want:    want{requests: []string{get, put + ` If-Match=revision_number=3 {"port":{"description":"` + marked + `"}}`}},
		},
		"AdoptedUnmarked": {
			reason:   "A port the provider did not create (adopted by external name) gets the description without a marker.",
			replies:  map[string]reply{put: {Code: 200, Body: neutronPortJSON()}},
			observed: neutronPortJSON(func(p map[string]any) { p["description"] = "theirs" }),
			mr:       mr(),
			want:     want{requests: []string{put + ` If-Match=revision_number=3 {"port":{"description":"gateway VIP"}}`}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			sc, seen := neutrontest.Serve(t, tc.replies)
			e := &external{object.External(sc, openstack.Settling{})}
			if tc.observed != "" {
				e.Observed = &neutronPort{}
				var r gophercloud.Result
				if err := json.Unmarshal([]byte(tc.observed), &r.Body); err != nil {
					t.Fatal(err)
				}
				if err := r.ExtractIntoStructPtr(e.Observed, "port"); err != nil {
					t.Fatal(err)
				}
			}
			_, err := e.Update(context.Background(), tc.mr)
			if diff := cmp.Diff(neutrontest.Message(tc.want.err), neutrontest.Message(err)); diff != "" {
				t.Errorf("%s\nUpdate(...): -want error, +got error:\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(tc.want.requests, *seen); diff != "" {
				t.Errorf("%s\nUpdate(...): -want requests, +got requests:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestDelete(t *testing.T) {
	del := "DELETE /ports/" + portID
	scan := "GET /ports?fields=id&fields=description&fields=tags"
	cases := map[string]struct {
		reason   string
		replies  map[string]reply
		mr       *v1alpha1.Port
		err      error
		requests []string
	}{
		"Deleted": {
			reason:   "The port is deleted with one DELETE, and one list finds no twin carrying the marker.",
			replies:  map[string]reply{del: {Code: 204, Body: ""}, scan: {Code: 200, Body: `{"ports": []}`}},
			mr:       mr(),
			requests: []string{del, scan},
		},
		"TwinDeleted": {
			reason: "A twin port carrying the marker (a create Neutron completed after the provider gave up on it) is deleted too, so that it no longer holds the MR's security groups.",
			replies: map[string]reply{
				del:                            {Code: 204, Body: ""},
				scan:                           {Code: 200, Body: listJSON(neutronPortJSON(func(p map[string]any) { p["id"] = stalePortID }))},
				"DELETE /ports/" + stalePortID: {Code: 204, Body: ""},
			},
			mr:       mr(),
			requests: []string{del, scan, "DELETE /ports/" + stalePortID},
		},
		"AlreadyGone": {
			reason:   "A port that is already gone (404) is deleted.",
			replies:  map[string]reply{del: {Code: 404, Body: neutrontest.Error("PortNotFound", "gone")}, scan: {Code: 200, Body: `{"ports": []}`}},
			mr:       mr(),
			requests: []string{del, scan},
		},
		"InUse": {
			reason:   "A refused delete is an error with Neutron's type and message.",
			replies:  map[string]reply{del: {Code: 409, Body: neutrontest.Error("PortInUse", "Port is in use")}},
			mr:       mr(),
			err:      errors.New("cannot delete Neutron port " + portID + ": Neutron 409 PortInUse: Port is in use"),
			requests: []string{del},
		},
		"NeverCreated": {
			reason: "An MR without an external name has no port to delete.",
			mr:     mr(withoutExternalName),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			sc, seen := neutrontest.Serve(t, tc.replies)
			e := &external{object.External(sc, openstack.Settling{})}
			_, err := e.Delete(context.Background(), tc.mr)
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
// with one port for the MR, whose ID is the MR's external name.
func TestCrashSafeCreate(t *testing.T) {
	scan := "GET /ports?fields=id&fields=description&fields=tags"
	get := "GET /ports/" + portID
	post := "POST /ports"
	posted := post + ` {"port":{"allowed_address_pairs":[{"ip_address":"192.168.10.0/24"}],"description":"` + marked + `",` +
		`"fixed_ips":[{"ip_address":"10.20.0.10","subnet_id":"` + subID + `"}],"name":"vip","network_id":"` + netID + `",` +
		`"port_security_enabled":true,"security_groups":["` + sgID + `"],"tags":["team-a"]}}`
	found := `{"ports": [{"id": "` + portID + `", "description": "` + marked + `"}]}`
	none := `{"ports": []}`
	cases := map[string]mrsetuptest.Case{
		"KilledAfterPOST": {
			Reason:  "A provider killed after Neutron created the port, before the ID was saved: the restarted one finds the port by its marker and adopts it, without a second POST.",
			Pending: true,
			Steps: []mrsetuptest.Step{{
				Replies:  map[string]reply{scan: {Code: 200, Body: found}, get: {Code: 200, Body: neutronPortJSON()}},
				Requests: []string{scan, get},
			}},
		},
		"KilledBeforePOST": {
			Reason:  "A provider killed before its POST reached Neutron: the marker proves there is no port, and the restarted one creates it once.",
			Pending: true,
			Steps: []mrsetuptest.Step{{
				Replies:  map[string]reply{scan: {Code: 200, Body: none}, post: {Code: 201, Body: neutronPortJSON()}},
				Requests: []string{scan, scan, posted},
			}},
		},
		"CompletedLate": {
			Reason:  "A POST Neutron completes after the restarted provider concluded it made nothing and created the port again: the next Observe finds the twin carrying the marker and deletes it, ends the twin check, and the one after is one GET again.",
			Pending: true,
			Steps: []mrsetuptest.Step{{
				Replies:  map[string]reply{scan: {Code: 200, Body: none}, post: {Code: 201, Body: neutronPortJSON()}},
				Requests: []string{scan, scan, posted},
			}, {
				Replies: map[string]reply{
					get:                            {Code: 200, Body: neutronPortJSON()},
					scan:                           {Code: 200, Body: `{"ports": [{"id": "` + portID + `", "description": "` + marked + `"}, {"id": "` + stalePortID + `", "description": "` + marked + `"}]}`},
					"DELETE /ports/" + stalePortID: {Code: 204},
				},
				Requests: []string{get, scan, "DELETE /ports/" + stalePortID},
			}, {
				Replies:  map[string]reply{get: {Code: 200, Body: neutronPortJSON()}},
				Requests: []string{get},
			}},
		},
		"LostAnswer": {
			Reason: "A POST whose answer is lost after Neutron created the port fails the create; the next reconcile adopts the port by its marker instead of creating a twin that would keep the security group in use.",
			Steps: []mrsetuptest.Step{{
				Replies:  map[string]reply{scan: {Code: 200, Body: none}, post: {Cut: true}},
				Requests: []string{scan, posted},
			}, {
				Replies:  map[string]reply{scan: {Code: 200, Body: found}, get: {Code: 200, Body: neutronPortJSON()}},
				Requests: []string{scan, get},
			}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			mrsetuptest.Run(t, v1alpha1.PortGroupVersionKind, mr(withoutExternalName), openstack.ScanFinder(openstack.Ports),
				NewExternal, tc, portID)
		})
	}
}
